"""memory_search: BM25 over the bank's inverted index, × meow-memory's recency decay.

Candidates come from the postings of the query's terms (an index range scan per term), so the
cost follows how many memories share the query's words, not the size of the bank. idf and the
average length are computed over the whole project bank (cached briefly); filters narrow the
candidates.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import transaction
from django.db.models import Avg, Case, Count, F, FloatField, Q, Sum, Value, When
from django.db.models.functions import Cast
from django.utils import timezone

from memoryhub.memories import text
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory, MemoryTerm
from memoryhub.recall import scoring
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from projects.selectors import ProjectAccess

QUERY_MAX_TERMS = 64
# Raw-BM25 candidates re-ranked with the decay: decay only ever lowers a score, so a memory
# outside the raw top-N would need a ≥ 2× raw deficit recovered by recency to matter.
RERANK_POOL = 200
STATS_TTL_SECONDS = 60
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


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float
    raw: float


def bank_stats(project: Project) -> tuple[int, float]:
    """(number of memories, average term count) of the project's bank."""
    key = f"recall:stats:{project.pk}"
    stats = cache.get(key)
    if stats is None:
        row = Memory.objects.filter(project=project).aggregate(n=Count("id"), avg=Avg("term_count"))
        stats = (row["n"] or 0, float(row["avg"] or 0.0))
        cache.set(key, stats, STATS_TTL_SECONDS)
    return stats


def _filters(access: ProjectAccess, query: SearchQuery, now: datetime) -> Q:
    q = Q(memory__status__in=query.statuses) & (
        Q(memory__scope=Scope.PROJECT) | Q(memory__owner=access.actor.user)
    )
    if query.kinds:
        q &= Q(memory__kind__in=query.kinds)
    if query.scope:
        q &= Q(memory__scope=query.scope)
    if query.subcategory:
        q &= Q(memory__subcategory=query.subcategory)
    if query.days is not None:
        q &= Q(memory__created_at__gte=now - timedelta(days=query.days))
    return q


def raw_bm25(
    access: ProjectAccess, query: SearchQuery, now: datetime, limit: int
) -> list[tuple[int, float]]:
    """(memory id, raw BM25) of the best `limit` candidates, best first."""
    qtf = Counter(text.tokenize(query.text))
    terms = [t for t, _ in qtf.most_common(QUERY_MAX_TERMS)]
    if not terms:
        return []
    n_docs, avgdl = bank_stats(access.project)
    if n_docs == 0:
        return []
    postings = MemoryTerm.objects.filter(project=access.project, term__in=terms)
    df = dict(postings.values_list("term").annotate(df=Count("id")).values_list("term", "df"))
    # meow-memory sums over query tokens with repeats: a repeated word weighs qtf times.
    weight = {t: scoring.idf(n_docs, df[t]) * qtf[t] for t in terms if t in df}
    if not weight:
        return []
    k1, b = scoring.BM25_K1, scoring.BM25_B
    tf = Cast("tf", FloatField())
    length_norm = Value(k1 * (1 - b)) + Value(k1 * b / max(avgdl, 1e-9)) * Cast(
        "memory__term_count", FloatField()
    )
    term_weight = Case(
        *(When(term=t, then=Value(w)) for t, w in weight.items()),
        default=Value(0.0),
        output_field=FloatField(),
    )
    score = Sum(term_weight * tf * Value(k1 + 1) / (tf + length_norm), output_field=FloatField())
    rows = (
        postings.filter(term__in=list(weight))
        .filter(_filters(access, query, now))
        .values("memory_id")
        .annotate(raw=score)
        .order_by("-raw", "memory_id")[:limit]
    )
    return [(row["memory_id"], row["raw"]) for row in rows]


def _seen_ids(session: AgentSession) -> set[int]:
    boundary = (
        SessionRecord.objects.filter(session=session, type="compact_boundary")
        .order_by("-index")
        .values_list("created_at", flat=True)
        .first()
    )
    seen = RecallSeen.objects.filter(session=session)
    if boundary is not None:
        seen = seen.filter(created_at__gt=boundary)
    return set(seen.values_list("memory_id", flat=True))


def memory_search(*, access: ProjectAccess, query: SearchQuery) -> list[Hit]:
    """The best `k` memories for the query, best first.

    With a session: the first five whatever the session saw, then unseen ones only (meow-memory
    5 + 5). Results are recorded as searched by the session and their hit counts go up.
    """
    now = query.as_of or timezone.now()
    pool = raw_bm25(access, query, now, max(RERANK_POOL, query.k * 4))
    if not pool:
        return []
    memories = Memory.objects.in_bulk([memory_id for memory_id, _ in pool])
    best = pool[0][1]
    ranked = sorted(
        (
            Hit(
                memory=memories[mid],
                raw=raw,
                score=scoring.decayed(
                    raw,
                    best_raw=best,
                    importance=memories[mid].importance,
                    updated_at=memories[mid].updated_at,
                    now=now,
                ),
            )
            for mid, raw in pool
        ),
        # Ties: insertion order, earlier first (the LoCoMo-R protocol's rule too).
        key=lambda hit: (-hit.score, hit.memory.created_at, hit.memory.pk),
    )
    if query.session is None:
        hits = ranked[: query.k]
    else:
        seen = _seen_ids(query.session)
        blind = ranked[: min(FIRST_UNSEEN_BLIND, query.k)]
        rest = [h for h in ranked[len(blind) :] if h.memory.pk not in seen]
        hits = blind + rest[: query.k - len(blind)]
    _record_access(hits, query.session)
    return hits


@transaction.atomic
def _record_access(hits: list[Hit], session: AgentSession | None) -> None:
    """Bookkeeping: hit counts, last access, and the session's seen set (an upsert, so a memory
    seen again after a compaction counts as seen again)."""
    ids = [hit.memory.pk for hit in hits]
    now = timezone.now()
    Memory.objects.filter(pk__in=ids).update(hit_count=F("hit_count") + 1, last_accessed_at=now)
    if session is not None:
        RecallSeen.objects.bulk_create(
            [
                RecallSeen(
                    session=session, memory_id=i, reason=RecallSeen.Reason.SEARCHED, created_at=now
                )
                for i in ids
            ],
            update_conflicts=True,
            unique_fields=["session", "memory", "reason"],
            update_fields=["created_at"],
        )
