"""Reads of the bank's inverted index (MemoryTerm; the services write it) in SQL, for the
memory services, whose writes must see their own transaction: document frequencies, and the
memories that hold the most of a set of terms (memory_remember's near-duplicate candidates).
Search and recall rank over each process's in-memory copy instead (memoryhub.recall.engine).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Q

from memoryhub.memories.models import MemoryTerm

MAX_CANDIDATES = 2_000
# Counts this large cost an index scan of their own; they move slowly, so they are cached.
CACHE_FROM = 1_000
DF_TTL_SECONDS = 60


def document_frequencies(project_id: int, terms: Sequence[str]) -> dict[str, int]:
    """df of each term that occurs in the bank (absent terms are left out)."""
    keys = {term: f"recall:df:{project_id}:{term}" for term in terms}
    cached = cache.get_many(list(keys.values()))
    df = {term: cached[key] for term, key in keys.items() if key in cached}
    missing = [term for term in terms if term not in df]
    if missing:
        counted = dict(
            MemoryTerm.objects.filter(project_id=project_id, term__in=missing)
            .values_list("term")
            .annotate(df=Count("*"))
            .values_list("term", "df")
        )
        cache.set_many({keys[t]: n for t, n in counted.items() if n >= CACHE_FROM}, DF_TTL_SECONDS)
        df |= counted
    return {term: n for term, n in df.items() if n > 0}


def sharing_most_terms(
    project_id: int, terms: Sequence[str], k: int, *, where: Q | None = None
) -> list[tuple[int, int]]:
    """(memory id, how many of `terms` it holds) of the k memories that hold the most of
    `terms`, best first (ties: newest first), and every memory tied with the k-th, at most
    MAX_CANDIDATES. `where` restricts to memories matching it (lookups through `memory__`) at
    the price of a join. One statement: the counts are computed once, then cut at the k-th."""
    if not terms or k <= 0:
        return []
    postings = MemoryTerm.objects.filter(project_id=project_id, term__in=list(terms))
    if where is not None:
        postings = postings.filter(where)
    counts, params = (
        postings.values("memory_id")
        .annotate(shared=Count("*"))
        .values_list("memory_id", "shared")
        .query.sql_with_params()
    )
    # `counts` is Django's own SQL; every value in it is a parameter.
    sql = (
        f"WITH counts AS ({counts}) SELECT memory_id, shared FROM counts"  # noqa: S608
        " WHERE shared >= COALESCE("
        "(SELECT shared FROM counts ORDER BY shared DESC LIMIT 1 OFFSET %s), 0)"
        " ORDER BY shared DESC, memory_id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, k - 1, MAX_CANDIDATES])
        return [(memory_id, shared) for memory_id, shared in cursor.fetchall()]
