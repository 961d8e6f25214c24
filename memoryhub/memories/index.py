"""Reads of the bank's inverted index (MemoryTerm; the services write it): bank statistics,
document frequencies, and the best memories for a weighted query, ranked on the postings alone.

Cost model (bench/recall_scale.py): at 100k memories a typical question shares a term with
thousands of memories, and ranking every one of them in SQL is what costs, not finding them.
So ranking reads only postings (each carries its memory's length; index-only scans, no join),
and when the query's postings exceed POSTINGS_BUDGET the common terms do not generate
candidates (MaxScore-style): candidates come from the rarest terms, up to the budget, and the
common terms' contributions are then added for those candidates only. A memory matching only
common terms can be missed; it would score at most Σ idf(common) × (k1 + 1), low by
construction. A bank where the query's postings fit the budget is ranked exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Avg, Case, Count, FloatField, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Cast

from memoryhub.memories.models import Memory, MemoryTerm

POSTINGS_BUDGET = 5_000
# Counts this large cost an index scan of their own; they move slowly, so they are cached.
CACHE_FROM = 1_000
STATS_TTL_SECONDS = 60


@dataclass(frozen=True)
class Bm25:
    k1: float
    b: float
    avgdl: float

    def term_score(self, weight: float, tf: float, length: float) -> float:
        norm = self.k1 * (1 - self.b) + self.k1 * self.b * length / max(self.avgdl, 1e-9)
        return weight * tf * (self.k1 + 1) / (tf + norm)


def bank_stats(project_id: int) -> tuple[int, float]:
    """(number of memories, average term count) of the project's bank, every status."""
    key = f"recall:stats:{project_id}"
    stats = cache.get(key)
    if stats is None:
        row = Memory.objects.filter(project_id=project_id).aggregate(
            n=Count("id"), avg=Avg("term_count")
        )
        stats = (row["n"] or 0, float(row["avg"] or 0.0))
        if stats[0] >= CACHE_FROM:  # small banks change visibly with every write
            cache.set(key, stats, STATS_TTL_SECONDS)
    return stats


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
        cache.set_many(
            {keys[t]: n for t, n in counted.items() if n >= CACHE_FROM}, STATS_TTL_SECONDS
        )
        df |= counted
    return {term: n for term, n in df.items() if n > 0}


def split_by_budget(df: dict[str, int]) -> tuple[list[str], list[str]]:
    """(terms that generate candidates, terms only added to them): the rarest terms while their
    postings fit POSTINGS_BUDGET — at least one — then the rest."""
    ordered = sorted(df, key=lambda t: (df[t], t))
    volume, cut = 0, 0
    for term in ordered:
        if cut and volume + df[term] > POSTINGS_BUDGET:
            break
        volume += df[term]
        cut += 1
    return ordered[:cut], ordered[cut:]


def top_memories(
    project_id: int,
    weights: dict[str, float],
    df: dict[str, int],
    bm25: Bm25,
    limit: int,
    where: Q | None = None,
) -> list[tuple[int, float]]:
    """(memory id, BM25) of the best `limit` memories for the weighted terms, best first (ties:
    lower id first). `where` restricts to memories matching it (lookups through `memory__`) at
    the price of a join; without it every memory of the bank is a candidate."""
    terms = [t for t in weights if t in df]
    if not terms or limit <= 0:
        return []
    generating, added = split_by_budget({t: df[t] for t in terms})
    postings = MemoryTerm.objects.filter(project_id=project_id)
    if where is not None:
        postings = postings.filter(where)
    while True:
        # Partial scores rank candidates; the pruned terms may reorder them: take a margin.
        wanted = 2 * limit if added else limit
        scores = _partial_scores(postings, generating, weights, bm25, wanted)
        if len(scores) >= wanted or not added:
            break
        # Too few memories have the rare terms: the next common term generates candidates too.
        generating.append(added.pop(0))
    if added and scores:
        extra = MemoryTerm.objects.filter(
            project_id=project_id, term__in=added, memory_id__in=list(scores)
        ).values_list("memory_id", "term", "tf", "length")
        for memory_id, term, term_tf, length in extra:
            scores[memory_id] += bm25.term_score(weights[term], term_tf, length)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:limit]


def _partial_scores(
    postings: QuerySet[MemoryTerm],
    terms: list[str],
    weights: dict[str, float],
    bm25: Bm25,
    limit: int,
) -> dict[int, float]:
    """The best `limit` memories by BM25 over `terms` only, computed in SQL."""
    tf = Cast("tf", FloatField())
    norm = Value(bm25.k1 * (1 - bm25.b)) + Value(bm25.k1 * bm25.b / max(bm25.avgdl, 1e-9)) * Cast(
        "length", FloatField()
    )
    weight = Case(
        *(When(term=t, then=Value(weights[t])) for t in terms),
        default=Value(0.0),
        output_field=FloatField(),
    )
    score = Sum(weight * tf * Value(bm25.k1 + 1) / (tf + norm), output_field=FloatField())
    rows = (
        postings.filter(term__in=terms)
        .values("memory_id")
        .annotate(score=score)
        .order_by("-score", "memory_id")
        .values_list("memory_id", "score")[:limit]
    )
    return dict(rows)


def memory_ids_with_terms(project_id: int, terms: Sequence[str]) -> list[int]:
    """Every memory sharing a term with `terms` (callers bound the count by df first)."""
    return list(
        MemoryTerm.objects.filter(project_id=project_id, term__in=list(terms))
        .values_list("memory_id", flat=True)
        .distinct()
    )
