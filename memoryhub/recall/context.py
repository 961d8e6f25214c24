"""The database side of the context signals (memoryhub.recall.signals): for the candidates of one
search, their source sessions' members (neighbours, session lengths), the query terms' counts
per session and the bank's session statistics. An in-memory index can replace these reads; the
signals themselves only take plain values.

Cost: one statement per piece, each bounded by the candidates' sessions, except the session
statistics, which count the postings of the query's terms and the bank's sessions (cached for
STATS_TTL_SECONDS on banks of index.CACHE_FROM memories or more).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Case, CharField, Count, F, Q, Sum, Value, When
from django.db.models.functions import Cast, Concat

from memoryhub.memories.index import CACHE_FROM, STATS_TTL_SECONDS, Bm25
from memoryhub.memories.models import Memory, MemoryTerm
from memoryhub.recall import signals


def _key_expression(prefix: str = "") -> Case:
    """signals.session_key in SQL: "s:<source session>", or "#<memory id>" without one."""
    return Case(
        When(
            **{prefix + "source_session": ""},
            then=Concat(Value("#"), Cast(prefix + "id", CharField())),
        ),
        default=Concat(Value("s:"), F(prefix + "source_session")),
        output_field=CharField(),
    )


@dataclass
class Sessions:
    """What the signals need about the candidates' sessions."""

    adjacent: dict[int, tuple[int | None, int | None]]  # member id → (previous, next)
    lengths: dict[str, int]  # session key → term count of its visible memories
    members: dict[int, str]  # memory id → session key, for every member read


def sessions_of(
    *, project_id: int, visible: Q, candidates: Sequence[tuple[int, str, int | None]]
) -> Sessions:
    """Neighbours and lengths of the sessions of `candidates` (id, source session, order), over
    the memories `visible` lets the caller see. A session-less memory is a session of its own:
    no neighbours, its own length (filled by the caller's term counts)."""
    named = sorted({session for _, session, _ in candidates if session})
    groups: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
    lengths: Counter[str] = Counter()
    members: dict[int, str] = {}
    if named:
        rows = Memory.objects.filter(
            visible, project_id=project_id, source_session__in=named
        ).values_list("id", "source_session", "source_record_start", "term_count")
        for memory_id, session, order, term_count in rows:
            key = signals.session_key(session, memory_id)
            groups[key].append((memory_id, order))
            lengths[key] += term_count
            members[memory_id] = key
    adjacent: dict[int, tuple[int | None, int | None]] = {}
    for group in groups.values():
        # Every member: a neighbour that joins the candidates has neighbours of its own.
        adjacent |= signals.neighbour_ids(group, [i for i, _ in group])
    return Sessions(adjacent=adjacent, lengths=dict(lengths), members=members)


def session_term_counts(
    *, project_id: int, visible: Q, sessions: Iterable[str], loners: Iterable[int], terms: list[str]
) -> dict[str, dict[str, int]]:
    """tf of each query term over each session's visible memories (session keys), and over each
    session-less memory in `loners` (its own key). One statement."""
    named = sorted(key[2:] for key in sessions if key.startswith("s:"))
    loner_ids = sorted(set(loners))
    which = Q(visible, memory__source_session__in=named) if named else Q(pk__in=[])
    if loner_ids:
        which |= Q(memory_id__in=loner_ids)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    if not named and not loner_ids:
        return out
    rows = (
        MemoryTerm.objects.filter(which, project_id=project_id, term__in=terms)
        .annotate(key=_key_expression("memory__"))
        .values_list("key", "term")
        .annotate(tf=Sum("tf"))
    )
    for key, term, tf in rows:
        out[key][term] = int(tf)
    return out


def session_frequencies(
    project_id: int, terms: Sequence[str], n_docs: int
) -> tuple[int, dict[str, int]]:
    """The bank's number of sessions and, per term, how many sessions hold it (every status and
    scope, as index.document_frequencies: idf is a property of the bank). Cached for a bank of
    index.CACHE_FROM memories (`n_docs`) or more, where one write barely moves them."""
    keys = {term: f"recall:sdf:{project_id}:{term}" for term in terms}
    count_key = f"recall:sessions:{project_id}"
    cached = cache.get_many([*keys.values(), count_key]) if n_docs >= CACHE_FROM else {}
    df = {term: cached[key] for term, key in keys.items() if key in cached}
    missing = [term for term in terms if term not in df]
    if missing:
        counted = dict(
            MemoryTerm.objects.filter(project_id=project_id, term__in=missing)
            .values("term")
            .annotate(n=Count(_key_expression("memory__"), distinct=True))
            .values_list("term", "n")
        )
        if n_docs >= CACHE_FROM:
            cache.set_many({keys[t]: n for t, n in counted.items()}, STATS_TTL_SECONDS)
        df |= counted
    n_sessions = cached.get(count_key)
    if n_sessions is None:
        n_sessions = Memory.objects.filter(project_id=project_id).aggregate(
            n=Count(_key_expression(), distinct=True)
        )["n"]
        if n_docs >= CACHE_FROM:
            cache.set(count_key, n_sessions, STATS_TTL_SECONDS)
    # The cached count may lag behind a fresh df.
    return max(n_sessions, *df.values(), 1) if df else max(n_sessions, 1), df


def memory_scores(
    project_id: int, ids: Sequence[int], weights: dict[str, float], bm25: Bm25
) -> dict[int, float]:
    """BM25 of a few memories (neighbours that joined the candidates) from their postings;
    memories sharing no term are left out."""
    scores: dict[int, float] = defaultdict(float)
    for memory_id, term, tf, length in MemoryTerm.objects.filter(
        project_id=project_id, memory_id__in=list(ids), term__in=list(weights)
    ).values_list("memory_id", "term", "tf", "length"):
        scores[memory_id] += bm25.term_score(weights[term], tf, length)
    return dict(scores)
