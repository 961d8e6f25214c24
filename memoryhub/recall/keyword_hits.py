"""Per-message keyword hits: meow-memory's keywordHitScore (seed-algorithms §5.4).

For a user message, the two memories whose keywords best match it:

    score = raw × coverage × recency × importance weight × title bonus

- candidates: active memories of every kind the caller can see (memory_visible: project
  scope, or user scope owned by the caller), minus those created in this session (meow looks
  at facts, lessons, rules and topics only; MemoryHub's pipeline also writes project,
  feedback, user and reference memories, and they must be recallable);
- match surface of a memory: its keywords joined by spaces, then its title (legacy memories
  without keywords: the first 100 characters of the content instead of the keywords);
- query: the first 500 characters of the message;
- idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)), N = number of candidates, df = candidates
  whose surface has t;
- raw = Σ idf(t) × (count of t in the query) over the distinct query terms on the surface;
- coverage = distinct query terms on the surface / number of terms on the surface (repeats
  counted): short, precise keyword lists win;
- recency = the step table of memoryhub.recall.scoring on updated_at, except 1.0 for
  importance ≥ 3 or raw ≥ 0.85 × the best raw of this query;
- importance weight = 1 + (importance − 1) × 0.25; title bonus × 1.2 when a title term is in
  the query;
- raw ≤ 0 dropped, best first (ties: older memory first), top 2, and only then memories
  already injected into the session (since its last compaction) are dropped, so fewer than
  two may remain.

Deviation from meow-memory: terms come from memoryhub.memories.text.tokenize, the bank's one
tokenizer (stemmed English words without stopwords, plus CJK bigrams), not meow's raw
lower-cased words and bigrams; keywords, index and queries must agree on what a term is.

Cost: candidates come from the worker's copy of the bank (memoryhub.recall.engine) — only
memories sharing a term with the query can score. The index covers title + content + keywords,
a superset of the surface, so "shares a term in the index" finds every memory with raw > 0.
N is the exact number of candidates. When the query's terms have at most EXACT_POSTINGS
postings among the candidates, every candidate sharing one is scored and the scores are exactly
meow's (df counted on the surfaces of that pool, which holds every candidate with the term on
its surface). Beyond that, df counts candidates with the term anywhere in the index, and only
the POOL_LIMIT candidates with the best Σ idf × count over the index are scored, exactly, on
their surfaces. Legacy surfaces cut at 100 characters may end in a cut word that the index does
not have; such a fragment cannot match.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.db.models.functions import Substr
from django.utils import timezone

from memoryhub.memories.models import Memory
from memoryhub.memories.text import tokenize
from memoryhub.recall import engine, scoring, selectors
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess

HIT_TOP_K = 2
QUERY_MAX_CHARS = 500
LEGACY_SURFACE_CHARS = 100
IMPORTANCE_STEP = 0.25
TITLE_BONUS = 1.2
EXACT_POSTINGS = 500
POOL_LIMIT = 100


@dataclass(frozen=True)
class KeywordHit:
    memory: Memory
    score: float
    raw: float
    coverage: float
    recency: float  # the decay weight applied (1.0 when exempt)
    importance_weight: float
    title_bonus: float


def surface(memory: Memory, content_head: str | None = None) -> str:
    """What a memory is matched on: its keywords (or the start of its content), then its title.

    `content_head`: the content's first 100 characters when the content was not loaded.
    """
    if memory.keywords:
        body = " ".join(memory.keywords)
    else:
        body = (memory.content if content_head is None else content_head)[:LEGACY_SURFACE_CHARS]
    return f"{body} {memory.title}"


@dataclass(frozen=True)
class _Pool:
    ids: list[int]  # the candidates to score on their surfaces
    df: dict[str, int] | None  # df over the candidates' index terms (None: count on surfaces)
    n: int  # N: the number of candidates


def _pool(access: ProjectAccess, session: AgentSession | None, qtf: Counter[str]) -> _Pool:
    """The candidates sharing a term with the query, from the worker's copy of the bank."""
    with engine.reading(access.project.pk) as bank:
        candidates = bank.visible(access.actor.user) & (
            bank.status[: bank.size] == engine.STATUS_CODES[Memory.Status.ACTIVE]
        )
        if session is not None:  # what this session wrote is still in its context
            candidates &= ~np.isin(
                bank.session[: bank.size], bank.session_codes([session.external_id])
            )
        n = int(np.count_nonzero(candidates))
        matched = {}
        for term in qtf:
            postings = bank.postings.get(term)
            if postings is not None:
                slots = postings.slots[candidates[postings.slots]]
                if len(slots):
                    matched[term] = slots
        if not matched:
            return _Pool(ids=[], df=None, n=n)
        if sum(len(slots) for slots in matched.values()) <= EXACT_POSTINGS:
            every = np.unique(np.concatenate(list(matched.values())))
            return _Pool(ids=bank.ids[every].tolist(), df=None, n=n)
        df = {term: len(slots) for term, slots in matched.items()}
        # A shortlist for meow's score, not its answer: the best POOL_LIMIT by Σ idf × query
        # count (a term counts once, as on surfaces) and whoever ties with the last of them.
        presence = np.zeros(bank.size, np.float64)
        for term, slots in matched.items():
            presence[slots] += scoring.idf(n, df[term]) * qtf[term]
        scored = np.flatnonzero(presence)
        values = np.round(presence[scored], 9)
        if len(scored) > POOL_LIMIT:
            scored = scored[values >= np.sort(values)[-POOL_LIMIT]]
        return _Pool(ids=bank.ids[scored].tolist(), df=df, n=n)


def keyword_hits(
    *,
    access: ProjectAccess,
    message: str,
    session: AgentSession | None,
    now: datetime | None = None,
    k: int = HIT_TOP_K,
) -> list[KeywordHit]:
    """The memories to inject for `message` (at most `k`), best first. Reads only: the caller
    marks what it injects (services.recall_mark_injected)."""
    now = now or timezone.now()
    qtf = Counter(tokenize(message[:QUERY_MAX_CHARS]))
    if not qtf:
        return []
    pool = _pool(access, session, qtf)
    if not pool.ids:
        return []
    # The pool can be hundreds of memories: load only the start of each content.
    memories = list(
        Memory.objects.filter(project=access.project, pk__in=pool.ids)
        .only("keywords", "title", "importance", "created_at", "updated_at")
        .annotate(content_head=Substr("content", 1, LEGACY_SURFACE_CHARS))
    )
    terms = {m.pk: tokenize(surface(m, m.content_head)) for m in memories}
    df: dict[str, int] = (
        pool.df
        if pool.df is not None
        else Counter(t for toks in terms.values() for t in set(toks) if t in qtf)
    )
    n = pool.n
    raw = {
        # df.get: a cut legacy word can be on a surface without being in the index df.
        m.pk: sum(scoring.idf(n, df.get(t, 1)) * qtf[t] for t in set(terms[m.pk]) if t in qtf)
        for m in memories
    }
    best_raw = max(raw.values(), default=0.0)
    hits = []
    for memory in memories:
        if raw[memory.pk] <= 0:
            continue
        on_surface = set(terms[memory.pk])
        coverage = sum(1 for t in qtf if t in on_surface) / len(terms[memory.pk])
        exempt = (
            memory.importance >= scoring.DECAY_EXEMPT_IMPORTANCE
            or raw[memory.pk] >= scoring.SUPER_MATCH * best_raw
        )
        recency = 1.0 if exempt else scoring.recency_weight(memory.updated_at, now)
        importance_weight = 1 + (memory.importance - 1) * IMPORTANCE_STEP
        title_bonus = TITLE_BONUS if any(t in qtf for t in tokenize(memory.title)) else 1.0
        hits.append(
            KeywordHit(
                memory=memory,
                score=raw[memory.pk] * coverage * recency * importance_weight * title_bonus,
                raw=raw[memory.pk],
                coverage=coverage,
                recency=recency,
                importance_weight=importance_weight,
                title_bonus=title_bonus,
            )
        )
    hits.sort(key=lambda h: (-h.score, h.memory.created_at, h.memory.pk))
    top = hits[:k]
    if session is not None:
        injected = selectors.injected_memory_ids(session=session, among=[h.memory.pk for h in top])
        top = [h for h in top if h.memory.pk not in injected]
    full = Memory.objects.in_bulk([h.memory.pk for h in top])
    return [replace(h, memory=full[h.memory.pk]) for h in top]
