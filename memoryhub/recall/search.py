"""memory_search: BM25 over the bank's inverted index, × a recency decay.

Candidates and their raw BM25 come from the postings of the query's terms (memoryhub.memories.
index: index-only scans, common terms pruned on large banks), so the cost follows how many
memories share the query's rarer words, not the size of the bank. idf and the average length
are over the whole project bank; filters are applied to the ranked candidates, with a joined
second pass when they remove most of them. k1, b and the decay's strength are per-project
settings (memoryhub.recall.conf); meow-memory's exact ranking is one setting away.
"""

from __future__ import annotations

from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryhub.memories import index, text
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_scope_q, memory_visible_q
from memoryhub.memories.services import memory_record_access
from memoryhub.recall import scoring, selectors, services
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


def raw_pool(
    access: ProjectAccess, query: SearchQuery, now: datetime, depth: int, config: RecallConfig
) -> list[tuple[Memory, float]]:
    """(memory, raw BM25) of the memories the query may return that could rank among the best
    `depth` once decayed, best first."""
    qtf = Counter(text.tokenize(query.text))
    terms = [t for t, _ in qtf.most_common(QUERY_MAX_TERMS)]
    if not terms:
        return []
    project_id = access.project.pk
    df = index.document_frequencies(project_id, terms)
    if not df:
        return []
    n_docs, avgdl = index.corpus_stats(project_id)
    n_docs = max(n_docs, *df.values())  # the cached count may lag behind a fresh df
    # meow-memory sums over query tokens with repeats: a repeated word weighs qtf times.
    weights = {t: scoring.idf(n_docs, df[t]) * qtf[t] for t in df}
    bm25 = index.Bm25(k1=config.search_k1, b=config.search_b, avgdl=avgdl)
    # The decay keeps at least this share of a raw score: a memory below floor × the depth-th
    # raw score cannot overtake it.
    floor = scoring.decay_floor(config.search_decay)
    ranked = index.top_memories(project_id, weights, df, bm25, depth, floor=floor)
    # Tie groups can make this hundreds of memories: only what the decay needs, for now.
    light = Memory.objects.only("importance", "created_at", "updated_at")
    visible = light.filter(_filters(access, query, now)).in_bulk([i for i, _ in ranked])
    if any(i not in visible for i, _ in ranked[:depth]):
        # Hidden memories took places among the best: rank again among the visible ones.
        where = _filters(access, query, now, prefix="memory__")
        ranked = index.top_memories(project_id, weights, df, bm25, depth, floor=floor, where=where)
        visible = light.in_bulk([i for i, _ in ranked])
    return [(visible[i], raw) for i, raw in ranked if i in visible]


def memory_search(*, access: ProjectAccess, query: SearchQuery) -> list[Hit]:
    """The best `k` memories for the query, best first.

    With a session: the first five whatever the session saw, then unseen ones only (meow-memory
    5 + 5). Results are recorded as searched by the session and their hit counts go up.
    """
    now = query.as_of or timezone.now()
    seen = selectors.seen_memory_ids(session=query.session) if query.session is not None else set()
    # With a session, seen memories after the first five do not count: look that much deeper.
    config = recall_config(access.project.settings)
    pool = raw_pool(access, query, now, min(query.k + len(seen), index.MAX_CANDIDATES), config)
    if not pool:
        return []
    best = pool[0][1]
    ranked = sorted(
        (
            Hit(
                memory=memory,
                raw=raw,
                score=scoring.decayed(
                    raw,
                    best_raw=best,
                    importance=memory.importance,
                    updated_at=memory.updated_at,
                    now=now,
                    strength=config.search_decay,
                ),
            )
            for memory, raw in pool
        ),
        # Ties: insertion order, earlier first (the LoCoMo-R protocol's rule too).
        key=lambda hit: (-round(hit.score, 9), hit.memory.created_at, hit.memory.pk),
    )
    if query.session is None:
        hits = ranked[: query.k]
    else:
        blind = ranked[: min(FIRST_UNSEEN_BLIND, query.k)]
        rest = [h for h in ranked[len(blind) :] if h.memory.pk not in seen]
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
