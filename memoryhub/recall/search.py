"""memory_search: BM25 over the bank's inverted index, × a recency decay, then the context
signals (memoryhub.recall.signals: session coherence, neighbour smoothing, subject boost).

Candidates and their raw BM25 come from the postings of the query's terms (memoryhub.memories.
index: index-only scans, common terms pruned on large banks), so the cost follows how many
memories share the query's rarer words, not the size of the bank. idf and the average length
are over the whole project bank; filters are applied to the ranked candidates, with a joined
second pass when they remove most of them. k1, b and the decay's strength are per-project
settings (memoryhub.recall.conf); meow-memory's exact ranking is one setting away.

`ranked` is THE ranking: memory_search (REST search, the dashboard, Hindsight recall, MCP) and
the injection preview's explanation (explain.py) all take their order and scores from it.
"""

from __future__ import annotations

from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Substr
from django.utils import timezone

from memoryhub.embeddings import rescore
from memoryhub.memories import index, text
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_scope_q, memory_visible_q
from memoryhub.memories.services import memory_record_access
from memoryhub.recall import context, scoring, selectors, services, signals
from memoryhub.recall.conf import RecallConfig, recall_config
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess

QUERY_MAX_TERMS = 64
FIRST_UNSEEN_BLIND = 5  # meow-memory's 5 + 5: the first five whatever was seen
# With a context signal on, at least this many candidates are ranked (ties at the cut and the
# neighbours join them). Deeper pools changed nothing on LoCoMo-R's dev split (20, 30, 50 and
# 100 gave the same hit@5) and cost model loads (bench/_locomo.SIGNAL_POOL).
SIGNAL_POOL = 20
SUBJECT_LABEL_CHARS = 80  # a leading "Name:" label is looked for in this much of the content


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
    raw: float  # BM25
    base: float = 0.0  # raw × the recency factor: the score before the context signals
    parts: signals.Scored | None = None  # the signals' shares, when one is on


def _filters(access: ProjectAccess, query: SearchQuery, now: datetime, prefix: str = "") -> Q:
    def q(**lookups: object) -> Q:
        return Q(**{prefix + key: value for key, value in lookups.items()})

    visible = q(status__in=query.statuses) & memory_visible_q(user=access.actor.user, prefix=prefix)
    if query.kinds:
        visible &= q(kind__in=query.kinds)
    if query.scope:
        visible &= memory_scope_q(scope=query.scope, prefix=prefix)
    if query.subcategory:
        visible &= q(subcategory=query.subcategory)
    if query.days is not None:
        with suppress(OverflowError):  # before year 1: every memory is that recent
            visible &= q(created_at__gte=now - timedelta(days=query.days))
    if query.source_sessions is not None:
        visible &= q(source_session__in=sorted(query.source_sessions))
    if query.exclude_source_sessions:
        visible &= ~q(source_session__in=sorted(query.exclude_source_sessions))
    return visible


@dataclass(frozen=True)
class Weighted:
    """A query's terms as the ranking weighs them."""

    qtf: Counter[str]  # the kept terms (QUERY_MAX_TERMS most frequent) with their counts
    df: dict[str, int]  # of the kept terms that occur in the bank
    weights: dict[str, float]  # idf × query count
    bm25: index.Bm25
    n_docs: int


def weighted(project_id: int, query_text: str, config: RecallConfig) -> Weighted | None:
    """None when no term of the query occurs in the bank."""
    qtf = Counter(text.tokenize(query_text))
    kept = Counter(dict(qtf.most_common(QUERY_MAX_TERMS)))
    if not kept:
        return None
    df = index.document_frequencies(project_id, list(kept))
    if not df:
        return None
    n_docs, avgdl = index.corpus_stats(project_id)
    n_docs = max(n_docs, *df.values())  # the cached count may lag behind a fresh df
    # meow-memory sums over query tokens with repeats: a repeated word weighs qtf times.
    weights = {t: scoring.idf(n_docs, df[t]) * kept[t] for t in df}
    bm25 = index.Bm25(k1=config.search_k1, b=config.search_b, avgdl=avgdl)
    return Weighted(qtf=kept, df=df, weights=weights, bm25=bm25, n_docs=n_docs)


def _light(config: RecallConfig) -> QuerySet[Memory]:
    """What ranking reads of a candidate: the decay's fields, and the signals' when on."""
    fields = ["importance", "created_at", "updated_at"]
    if not config.signals_on:
        return Memory.objects.only(*fields)
    fields += ["source_session", "source_record_start", "title", "term_count"]
    head = Substr("content", 1, SUBJECT_LABEL_CHARS)
    subject = KeyTextTransform("subject", "metadata")  # not the whole metadata: decoding costs
    return Memory.objects.only(*fields).annotate(content_head=head, subject_field=subject)


def raw_pool(
    access: ProjectAccess,
    query: SearchQuery,
    now: datetime,
    depth: int,
    config: RecallConfig,
    w: Weighted | None = None,
) -> list[tuple[Memory, float]]:
    """(memory, raw BM25) of the memories the query may return that could rank among the best
    `depth` once decayed, best first."""
    project_id = access.project.pk
    w = w or weighted(project_id, query.text, config)
    if w is None:
        return []
    weights, df, bm25 = w.weights, w.df, w.bm25
    # The decay keeps at least this share of a raw score: a memory below floor × the depth-th
    # raw score cannot overtake it.
    floor = scoring.decay_floor(config.search_decay)
    ranked = index.top_memories(project_id, weights, df, bm25, depth, floor=floor)
    # Tie groups can make this hundreds of memories: only what the decay needs, for now.
    light = _light(config)
    visible = light.filter(_filters(access, query, now)).in_bulk([i for i, _ in ranked])
    if any(i not in visible for i, _ in ranked[:depth]):
        # Hidden memories took places among the best: rank again among the visible ones.
        where = _filters(access, query, now, prefix="memory__")
        ranked = index.top_memories(project_id, weights, df, bm25, depth, floor=floor, where=where)
        visible = light.in_bulk([i for i, _ in ranked])
    return [(visible[i], raw) for i, raw in ranked if i in visible]


def _order_key(hit: Hit) -> tuple[float, datetime, int]:
    # Ties: insertion order, earlier first (the LoCoMo-R protocol's rule too).
    return (-round(hit.score, 9), hit.memory.created_at, hit.memory.pk)


def ranked(
    access: ProjectAccess, query: SearchQuery, now: datetime, depth: int, config: RecallConfig
) -> list[Hit]:
    """THE ranking: candidates best first with their scores, at least the best `depth`.
    Memories are loaded light (ranking fields only)."""
    if config.signals_on:
        depth = max(depth, SIGNAL_POOL)
    # The embedding re-scorer wants the lexical top 200 (0 when off or the bank has no vectors).
    dense = rescore.rescore_depth(project_id=access.project.pk, weight=config.embedding_weight)
    depth = max(depth, dense)
    w = weighted(access.project.pk, query.text, config)
    if w is None:
        return []
    pool = raw_pool(access, query, now, min(depth, index.MAX_CANDIDATES), config, w)
    if not pool:
        return []
    best = pool[0][1]
    hits = [
        Hit(memory=memory, raw=raw, score=score, base=score)
        for memory, raw in pool
        for score in [_decayed(memory, raw, best, now, config)]
    ]
    if config.signals_on:
        hits = _with_signals(access, query, now, config, w, hits, best)
    hits.sort(key=_order_key)
    return _rescored(query, config, hits) if dense else hits


def _rescored(query: SearchQuery, config: RecallConfig, hits: list[Hit]) -> list[Hit]:
    """Last: the embedding re-scorer over the final lexical scores (memoryhub.embeddings)."""
    by_id = {hit.memory.pk: hit for hit in hits}
    fused = rescore.rescore(
        query_text=query.text,
        scored=[(hit.memory.pk, hit.score) for hit in hits],
        weight=config.embedding_weight,
    )
    return [replace(by_id[i], score=score) for i, score in fused]


def _decayed(memory: Memory, raw: float, best: float, now: datetime, config: RecallConfig) -> float:
    return scoring.decayed(
        raw,
        best_raw=best,
        importance=memory.importance,
        updated_at=memory.updated_at,
        now=now,
        strength=config.search_decay,
    )


def _subject(memory: Memory) -> frozenset[str]:
    head = getattr(memory, "content_head", "")
    metadata = {"subject": getattr(memory, "subject_field", None)}
    subject = signals.subject_text(title=memory.title, content=head, metadata=metadata)
    return frozenset(text.tokenize(subject)) if subject else frozenset()


def _with_signals(
    access: ProjectAccess,
    query: SearchQuery,
    now: datetime,
    config: RecallConfig,
    w: Weighted,
    hits: list[Hit],
    best: float,
) -> list[Hit]:
    """The pool's neighbours join it, then signals.rerank scores every one."""
    project_id = access.project.pk
    visible = _filters(access, query, now)
    sessions = context.sessions_of(
        project_id=project_id,
        visible=visible,
        candidates=[
            (h.memory.pk, h.memory.source_session, h.memory.source_record_start) for h in hits
        ],
    )
    by_id = {h.memory.pk: h for h in hits}
    joined = {
        n
        for h in hits
        for n in sessions.adjacent.get(h.memory.pk, (None, None))
        if n is not None and n not in by_id
    }
    if joined:
        memories = _light(config).in_bulk(sorted(joined))
        raws = context.memory_scores(project_id, sorted(memories), w.weights, w.bm25)
        for memory_id, memory in memories.items():
            raw = raws.get(memory_id, 0.0)
            base = _decayed(memory, raw, best, now, config) if raw else 0.0
            by_id[memory_id] = Hit(memory=memory, raw=raw, score=base, base=base)
    keys = {i: signals.session_key(h.memory.source_session, i) for i, h in by_id.items()}
    loners = [i for i, key in keys.items() if key.startswith("#")]
    lengths = sessions.lengths | {keys[i]: by_id[i].memory.term_count for i in loners}
    n_docs, avgdl = index.corpus_stats(project_id)
    n_sessions, sdf = context.session_frequencies(project_id, list(w.df), n_docs)
    tf = context.session_term_counts(
        project_id=project_id,
        visible=_filters(access, query, now, prefix="memory__"),
        sessions=set(keys.values()),
        loners=loners,
        terms=list(w.df),
    )
    session_scores = signals.session_bm25(
        tf=tf,
        lengths=lengths,
        df=sdf,
        n_sessions=n_sessions,
        qtf=w.qtf,
        k1=config.search_k1,
        b=config.search_b,
        avg_length=n_docs * avgdl / n_sessions,
    )
    scored = signals.rerank(
        [
            signals.Candidate(
                id=i,
                base=h.base,
                session=keys[i],
                order=h.memory.source_record_start,
                subject=_subject(h.memory),
            )
            for i, h in by_id.items()
        ],
        adjacent=sessions.adjacent,
        session_scores=session_scores,
        query_terms=frozenset(w.qtf),
        weights=config,
    )
    return [replace(by_id[s.id], score=s.score, parts=s) for s in scored]


def memory_search(*, access: ProjectAccess, query: SearchQuery) -> list[Hit]:
    """The best `k` memories for the query, best first.

    With a session: the first five whatever the session saw, then unseen ones only (meow-memory
    5 + 5). Results are recorded as searched by the session and their hit counts go up.
    """
    now = query.as_of or timezone.now()
    seen = selectors.seen_memory_ids(session=query.session) if query.session is not None else set()
    # With a session, seen memories after the first five do not count: look that much deeper.
    config = recall_config(access.project.settings)
    ranking = ranked(access, query, now, query.k + len(seen), config)
    if query.session is None:
        hits = ranking[: query.k]
    else:
        blind = ranking[: min(FIRST_UNSEEN_BLIND, query.k)]
        rest = [h for h in ranking[len(blind) :] if h.memory.pk not in seen]
        hits = blind + rest[: query.k - len(blind)]
    full = Memory.objects.in_bulk([hit.memory.pk for hit in hits])
    hits = [replace(hit, memory=full[hit.memory.pk]) for hit in hits]
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
