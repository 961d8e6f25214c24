"""memory_search: BM25 over the bank's inverted index, × a recency decay.

Exact: every memory sharing a term with the query is scored, in numpy over the worker's copy
of the bank (memoryhub.recall.engine), then the query's filters and the caller's visibility
apply, then the decay; one query loads the winners. idf and the average length are over what
the caller may see — project-scope memories and the caller's own, every status — so scores
reveal nothing of another person's private memories. k1, b and the decay's strength are
per-project settings (memoryhub.recall.conf); meow-memory's exact ranking is one setting away.
rank() is the one ranking: memory_search and the explanations (explain.py) both call it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import transaction
from django.utils import timezone

from memoryhub.memories import text
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible_mask
from memoryhub.memories.services import memory_record_access
from memoryhub.recall import engine, scoring, selectors, services
from memoryhub.recall.conf import RecallConfig, recall_config
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess

QUERY_MAX_TERMS = 64
FIRST_UNSEEN_BLIND = 5  # meow-memory's 5 + 5: the first five whatever was seen


@dataclass(frozen=True)
class SearchQuery:
    text: str
    k: int = 20
    kinds: tuple[str, ...] = ()
    scope: str | None = None
    statuses: tuple[str, ...] = (Memory.Status.ACTIVE,)
    subcategory: str | None = None
    days: int | None = None  # created within the last N days
    as_of: datetime | None = None  # "now" for recency (replays and benchmarks); default: now
    session: AgentSession | None = None
    # False for people browsing the bank (the dashboard): only agents' searches count as hits.
    record: bool = True
    # Provenance filters by the memory's source session (external id): only memories from
    # `source_sessions` when given, none from `exclude_source_sessions` (Hindsight's tags).
    source_sessions: frozenset[str] | None = None
    exclude_source_sessions: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float
    raw: float


@dataclass(frozen=True)
class TermPart:
    """One query term's share of a memory's BM25 (for explanations)."""

    term: str
    query_count: int  # repeats in the query count (meow-memory)
    df: int
    idf: float
    tf: int  # occurrences in the memory
    length: int  # the memory's term count
    score: float  # idf × query_count × tf × (k1 + 1) / (tf + k1 × (1 − b + b × length / avgdl))


@dataclass(frozen=True)
class Ranked:
    memory_id: int
    raw: float  # BM25
    score: float  # after the decay
    importance: int
    updated_at: float  # epoch seconds
    parts: tuple[TermPart, ...] = ()  # with rank(explain=True) only


@dataclass(frozen=True)
class Ranking:
    """The ranking's answer and the statistics it used (explain shows them)."""

    terms: list[str]
    n_docs: int
    avgdl: float
    best_raw: float
    ranked: list[Ranked]


def _bm25(
    bank: engine.BankIndex, weights: dict[str, float], avgdl: float, config: RecallConfig
) -> np.ndarray:
    """Raw BM25 of every slot (0: shares no term)."""
    k1, b = config.search_k1, config.search_b
    scores = np.zeros(bank.size, np.float64)
    for term, weight in weights.items():
        postings = bank.postings[term]
        tf = postings.tf.astype(np.float64)
        norm: float | np.ndarray = k1 * (1 - b)
        if b:
            norm = norm + k1 * b * bank.length[postings.slots] / max(avgdl, 1e-9)
        scores[postings.slots] += weight * tf * (k1 + 1) / (tf + norm)
    return scores


def _admitted(
    bank: engine.BankIndex, slots: np.ndarray, access: ProjectAccess, query: SearchQuery, now: float
) -> np.ndarray:
    """Which of `slots` the query may return: alive, visible to the caller, and through every
    filter of the query."""
    user = access.actor.user
    keep = bank.alive[slots] & memory_visible_mask(
        user=user, project_scope=bank.project_scope[slots], owner=bank.owner[slots]
    )
    statuses = [engine.STATUS_CODES[s] for s in query.statuses if s in engine.STATUS_CODES]
    keep &= np.isin(bank.status[slots], statuses)
    if query.kinds:
        keep &= np.isin(bank.kind[slots], [engine.KIND_CODES.get(k, -2) for k in query.kinds])
    if query.scope:
        keep &= bank.project_scope[slots] == (query.scope == Scope.PROJECT)
    if query.subcategory:
        keep &= bank.subcategory[slots] == engine.SUBCATEGORY_CODES.get(query.subcategory, -2)
    if query.days is not None:
        keep &= bank.created[slots] >= now - query.days * 86_400
    if query.source_sessions is not None:
        keep &= np.isin(bank.session[slots], bank.session_codes(query.source_sessions))
    if query.exclude_source_sessions:
        keep &= ~np.isin(bank.session[slots], bank.session_codes(query.exclude_source_sessions))
    return keep


def rank(
    *,
    access: ProjectAccess,
    query: SearchQuery,
    now: datetime,
    depth: int,
    config: RecallConfig,
    explain: bool = False,
) -> Ranking:
    """The best `depth` memories for the query, best first, ranked exactly over the whole bank:
    BM25 (idf and average length over what the caller may see), the query's filters, the decay;
    ties: earlier insertion first. With `explain`, each carries its terms' parts."""
    qtf = Counter(text.tokenize(query.text))
    terms = [t for t, _ in qtf.most_common(QUERY_MAX_TERMS)]
    with engine.reading(access.project.pk) as bank:
        stats = bank.stats(access.actor.user)
        empty = Ranking(
            terms=terms, n_docs=stats.n_docs, avgdl=stats.avgdl, best_raw=0.0, ranked=[]
        )
        df = {t: n for t in terms if (n := bank.document_frequency(t, stats)) > 0}
        if not df or depth <= 0:
            return empty
        # meow-memory sums over query tokens with repeats: a repeated word weighs qtf times.
        weights = {t: scoring.idf(stats.n_docs, df[t]) * qtf[t] for t in df}
        scores = _bm25(bank, weights, stats.avgdl, config)
        slots = np.flatnonzero(scores)
        at = now.timestamp()
        slots = slots[_admitted(bank, slots, access, query, at)]
        if not len(slots):
            return empty
        raw = scores[slots]
        best = float(raw.max())
        importance = bank.importance[slots]
        updated = bank.updated[slots]
        decayed = scoring.decayed_many(
            raw,
            best_raw=best,
            importance=importance,
            age_days=(at - updated) / 86_400,
            strength=config.search_decay,
        )
        key = -np.round(decayed, 9)
        if len(slots) > depth:  # only the depth best, and whoever ties with the last of them
            kth = np.partition(key, depth - 1)[depth - 1]
            near = np.flatnonzero(key <= kth)
        else:
            near = np.arange(len(slots))
        # Ties: insertion order, earlier first (the LoCoMo-R protocol's rule too).
        order = near[np.lexsort((bank.ids[slots[near]], bank.created[slots[near]], key[near]))]
        order = order[:depth]
        ranked = [
            Ranked(
                memory_id=int(bank.ids[slots[i]]),
                raw=float(raw[i]),
                score=float(decayed[i]),
                importance=int(importance[i]),
                updated_at=float(updated[i]),
                parts=_parts(bank, int(slots[i]), weights, qtf, df, stats.avgdl, config)
                if explain
                else (),
            )
            for i in order
        ]
        return Ranking(
            terms=terms, n_docs=stats.n_docs, avgdl=stats.avgdl, best_raw=best, ranked=ranked
        )


def _parts(
    bank: engine.BankIndex,
    slot: int,
    weights: dict[str, float],
    qtf: Counter[str],
    df: dict[str, int],
    avgdl: float,
    config: RecallConfig,
) -> tuple[TermPart, ...]:
    k1, b = config.search_k1, config.search_b
    length = float(bank.length[slot])
    parts = []
    for term, weight in weights.items():
        postings = bank.postings[term]
        where = np.flatnonzero(postings.slots == slot)
        if not len(where):
            continue
        tf = float(postings.tf[where[0]])
        norm = k1 * (1 - b) + (k1 * b * length / max(avgdl, 1e-9) if b else 0.0)
        parts.append(
            TermPart(
                term=term,
                query_count=qtf[term],
                df=df[term],
                idf=weight / qtf[term],
                tf=int(tf),
                length=int(length),
                score=weight * tf * (k1 + 1) / (tf + norm),
            )
        )
    return tuple(parts)


def memory_search(*, access: ProjectAccess, query: SearchQuery) -> list[Hit]:
    """The best `k` memories for the query, best first.

    With a session: the first five whatever the session saw, then unseen ones only (meow-memory
    5 + 5). Results are recorded as searched by the session and their hit counts go up.
    """
    now = query.as_of or timezone.now()
    seen = selectors.seen_memory_ids(session=query.session) if query.session is not None else set()
    # With a session, seen memories after the first five do not count: look that much deeper.
    config = recall_config(access.project.settings)
    ranking = rank(access=access, query=query, now=now, depth=query.k + len(seen), config=config)
    ranked = ranking.ranked
    if query.session is None:
        chosen = ranked[: query.k]
    else:
        blind = ranked[: min(FIRST_UNSEEN_BLIND, query.k)]
        rest = [r for r in ranked[len(blind) :] if r.memory_id not in seen]
        chosen = blind + rest[: query.k - len(blind)]
    if not chosen:
        return []
    full = Memory.objects.filter(project=access.project).in_bulk([r.memory_id for r in chosen])
    # A memory deleted since the bank copy was read is left out.
    hits = [
        Hit(memory=full[r.memory_id], score=r.score, raw=r.raw)
        for r in chosen
        if r.memory_id in full
    ]
    if query.record:
        _record_access(hits, query.session)
    return hits


@transaction.atomic
def _record_access(hits: list[Hit], session: AgentSession | None) -> None:
    """Bookkeeping: hit counts, last access, and the session's seen set (an upsert, so a memory
    seen again after a compaction counts as seen again)."""
    ids = [hit.memory.pk for hit in hits]
    now = timezone.now()
    memory_record_access(memory_ids=ids, at=now)
    if session is not None:
        services.recall_seen_mark(
            session=session, memory_ids=ids, reason=RecallSeen.Reason.SEARCHED
        )
