"""Reads of the bank's inverted index (MemoryTerm; the services write it) in SQL: bank
statistics, document frequencies, and the best memories for a weighted query, ranked on the
postings alone. Search and recall rank over each process's in-memory copy instead
(memoryhub.recall.engine); this SQL path serves the memory services, whose writes must see
their own transaction (memory_remember's near-duplicate candidates).

Cost model: ranking reads only postings (each carries its memory's length; index-only scans,
no join), and the query's common terms only generate candidates when a bound says a memory
found by them alone could make the cut (top_memories: MaxScore-style; exact up to
FULL_RANK_POSTINGS, or always with max_postings=None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Avg, Case, Count, FloatField, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Cast

from memoryhub.memories.models import Memory, MemoryTerm

POSTINGS_BUDGET = 5_000
MIN_FETCH = 200  # candidates per ranking statement, at least
MAX_CANDIDATES = 2_000
# The most postings one exact ranking statement may read (about 15 ms at 100k memories).
FULL_RANK_POSTINGS = 30_000
# Counts this large cost an index scan of their own; they move slowly, so they are cached.
CACHE_FROM = 1_000
STATS_TTL_SECONDS = 60


@dataclass(frozen=True)
class Bm25:
    k1: float
    b: float
    avgdl: float

    def max_term_score(self, weight: float) -> float:
        """A bound on term_score over every tf and length."""
        return weight * (self.k1 + 1)

    def term_score(self, weight: float, tf: float, length: float) -> float:
        norm = self.k1 * (1 - self.b) + self.k1 * self.b * length / max(self.avgdl, 1e-9)
        return weight * tf * (self.k1 + 1) / (tf + norm)


def corpus_stats(project_id: int) -> tuple[int, float]:
    """BM25's corpus statistics: (number of memories, average term count) of the project's
    bank, every status and scope (idf is a property of the bank, not of one reader)."""
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


def _generating_count(order: list[str], df: dict[str, int], volume: int) -> int:
    """How many of the rarest terms fit `volume` postings (at least one)."""
    total, count = 0, 0
    for term in order:
        if count and total + df[term] > volume:
            break
        total += df[term]
        count += 1
    return count


def top_memories(
    project_id: int,
    weights: dict[str, float],
    df: dict[str, int],
    bm25: Bm25,
    k: int,
    *,
    floor: float = 1.0,
    where: Q | None = None,
    max_postings: int | None = FULL_RANK_POSTINGS,
) -> list[tuple[int, float]]:
    """(memory id, BM25) of every memory that scores at least floor × the k-th best score, best
    first (ties: newest first); at least the best k when that many match, at most
    MAX_CANDIDATES. `where` restricts to memories matching it (lookups through `memory__`) at
    the price of a join.

    Exact, MaxScore-style: the rarest terms (POSTINGS_BUDGET postings) find candidates in SQL,
    the other terms' contributions are added to those candidates, and the result stands only
    if no memory outside them could reach the threshold: a memory the SQL did not return
    scores at most (the lowest partial score it kept, when it hit its LIMIT) + Σ (k1 + 1) ×
    weight over the other terms. Otherwise one statement ranks on every term — when the query's
    postings number at most `max_postings` (None: always); past that the pruned answer stands,
    an approximation (bench/recall_scale.py --explain measures how close). Only a tie group
    larger than MAX_CANDIDATES is cut (its newest are kept).
    """
    terms = sorted((t for t in weights if t in df), key=lambda t: (df[t], t))
    if not terms or k <= 0:
        return []
    postings = MemoryTerm.objects.filter(project_id=project_id)
    if where is not None:
        postings = postings.filter(where)
    generating = _generating_count(terms, df, POSTINGS_BUDGET)
    rest = terms[generating:]
    fetch = min(max(2 * k, MIN_FETCH), MAX_CANDIDATES)
    scores = _partial_scores(postings, terms[:generating], weights, bm25, fetch)
    truncated = len(scores) == fetch
    # The best a memory the statement left out can score on these terms.
    cut = min(scores.values()) if truncated else 0.0
    if rest and scores:
        extra = MemoryTerm.objects.filter(
            project_id=project_id, term__in=rest, memory_id__in=list(scores)
        ).values_list("memory_id", "term", "tf", "length")
        for memory_id, term, term_tf, length in extra:
            scores[memory_id] += bm25.term_score(weights[term], term_tf, length)
    ranked, threshold = _cut(scores, k, floor)
    rest_bound = sum(bm25.max_term_score(weights[t]) for t in rest)
    exact = (not rest and not truncated) or (threshold > 0 and cut + rest_bound < threshold)
    affordable = max_postings is None or sum(df[t] for t in terms) <= max_postings
    if not exact and affordable:
        # A memory outside could make the cut: rank on every term, as deep as allowed. One
        # statement; growing the candidates step by step measured slower at 100k memories.
        scores = _partial_scores(postings, terms, weights, bm25, fetch)
        ranked, threshold = _cut(scores, k, floor)
        if len(scores) == fetch and min(scores.values()) >= threshold:  # a long tie group
            scores = _partial_scores(postings, terms, weights, bm25, MAX_CANDIDATES)
            ranked, threshold = _cut(scores, k, floor)
    kept = [item for item in ranked if item[1] >= threshold]
    return (kept if len(kept) >= k else ranked[:k])[:MAX_CANDIDATES]


def _cut(scores: dict[int, float], k: int, floor: float) -> tuple[list[tuple[int, float]], float]:
    """The scores best first (ties: newest first), and floor × the k-th best (0 below k)."""
    ranked = sorted(scores.items(), key=lambda item: (-round(item[1], 9), -item[0]))
    return ranked, floor * ranked[k - 1][1] if len(ranked) >= k else 0.0


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
        # Ties: newest first, as recency would order them.
        .order_by("-score", "-memory_id")
        .values_list("memory_id", "score")[:limit]
    )
    return dict(rows)
