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

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from django.db import connection
from django.utils import timezone

from memoryhub.core import after_response, rows
from memoryhub.embeddings import rescore
from memoryhub.memories import text
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible_mask
from memoryhub.memories.services import memory_record_access
from memoryhub.recall import engine, scoring, selectors, services, signals
from memoryhub.recall.conf import RecallConfig, recall_config
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from projects.selectors import ProjectAccess

QUERY_MAX_TERMS = 64
FIRST_UNSEEN_BLIND = 5  # meow-memory's 5 + 5: the first five whatever was seen
# With a context signal on, at least this many candidates are ranked (ties at the cut and the
# neighbours join them). Deeper pools changed nothing on LoCoMo-R's dev split (20, 30, 50 and
# 100 gave the same hit@5) (bench/_locomo.SIGNAL_POOL).
SIGNAL_POOL = 20


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
    score: float  # the final score: base, then the context signals
    base: float  # raw × the recency factor
    importance: int
    updated_at: float  # epoch seconds
    created_at: float  # epoch seconds (ties: earlier first)
    parts: tuple[TermPart, ...] = ()  # with rank(explain=True) only
    signal: signals.Scored | None = None  # the signals' shares, when one is on


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


def _admitted_mask(
    bank: engine.BankIndex, access: ProjectAccess, query: SearchQuery, now: float
) -> np.ndarray:
    """_admitted over every slot, kept on the bank copy per reader and filters until the bank
    changes (a filter on age depends on "now": computed each time)."""
    every = np.arange(bank.size)
    if query.days is not None:
        return _admitted(bank, every, access, query, now)
    user = access.actor.user
    key = (
        user.pk if user is not None else None,
        query.statuses,
        query.kinds,
        query.scope,
        query.subcategory,
        query.source_sessions,
        query.exclude_source_sessions,
    )
    mask = bank.masks.get(key)
    if mask is None:
        if len(bank.masks) > 64:
            bank.masks.clear()
        mask = bank.masks[key] = _admitted(bank, every, access, query, now)
    return mask


def rank(
    *,
    access: ProjectAccess,
    query: SearchQuery,
    now: datetime,
    depth: int,
    config: RecallConfig,
    explain: bool = False,
) -> Ranking:
    """The best `depth` memories for the query (at least), best first, ranked exactly over the
    whole bank: BM25 (idf and average length over what the caller may see), the query's
    filters, the decay, the context signals, then the embedding re-scorer when it is on; ties:
    earlier insertion first. With `explain`, each carries its terms' parts."""
    # The embedding re-scorer wants the lexical top 200 (0 when off or the bank has no vectors).
    dense = rescore.rescore_depth(project_id=access.project.pk, weight=config.embedding_weight)
    depth = max(depth, dense)
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
        slots = slots[_admitted_mask(bank, access, query, at)[slots]]
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
        if config.signals_on:
            depth = max(depth, SIGNAL_POOL)
        # The pool: whoever could rank among the best `depth` once decayed (the decay keeps
        # at least `floor` of a raw score), as the signals were tuned on.
        floor = scoring.decay_floor(config.search_decay)
        key = -np.round(decayed, 9)
        if not config.signals_on and len(slots) > depth:
            # Only the depth best, and whoever ties with the last of them.
            kth = np.partition(key, depth - 1)[depth - 1]
            near = np.flatnonzero(key <= kth)
        elif config.signals_on and len(slots) > depth:
            kth_raw = -np.partition(-raw, depth - 1)[depth - 1]
            near = np.flatnonzero(raw >= floor * kth_raw)
        else:
            near = np.arange(len(slots))

        def ranked_of(slot: int, score: float, base: float, signal: Any = None) -> Ranked:
            return Ranked(
                memory_id=int(bank.ids[slot]),
                raw=float(scores[slot]),
                score=score,
                base=base,
                importance=int(bank.importance[slot]),
                updated_at=float(bank.updated[slot]),
                created_at=float(bank.created[slot]),
                parts=_parts(bank, slot, weights, qtf, df, stats.avgdl, config) if explain else (),
                signal=signal,
            )

        if config.signals_on:
            pool = _with_signals(
                bank,
                admitted=_admitted_mask(bank, access, query, at),
                config=config,
                stats=stats,
                qtf=qtf,
                weights=weights,
                scores=scores,
                pool=slots[near],
                pool_base=decayed[near],
                best=best,
                at=at,
                keep=depth,
                ranked_of=ranked_of,
            )
        else:
            pool = [ranked_of(int(slots[i]), float(decayed[i]), float(decayed[i])) for i in near]
    # Ties: insertion order, earlier first (the LoCoMo-R protocol's rule too).
    pool.sort(key=lambda r: (-round(r.score, 9), r.created_at, r.memory_id))
    if dense:
        pool = _rescored(query, config, pool, access.project)
    return Ranking(terms=terms, n_docs=stats.n_docs, avgdl=stats.avgdl, best_raw=best, ranked=pool)


def _rescored(
    query: SearchQuery, config: RecallConfig, pool: list[Ranked], project: Project
) -> list[Ranked]:
    """Last: the embedding re-scorer over the final lexical scores (memoryhub.embeddings)."""
    by_id = {r.memory_id: r for r in pool}
    fused = rescore.rescore(
        query_text=query.text,
        scored=[(r.memory_id, r.score) for r in pool],
        weight=config.embedding_weight,
        project=project,
    )
    return [replace(by_id[i], score=score) for i, score in fused]


def _with_signals(
    bank: engine.BankIndex,
    *,
    admitted: np.ndarray,
    config: RecallConfig,
    stats: engine.Stats,
    qtf: Counter[str],
    weights: dict[str, float],
    scores: np.ndarray,
    pool: np.ndarray,
    pool_base: np.ndarray,
    best: float,
    at: float,
    keep: int,
    ranked_of: Callable[[int, float, float, signals.Scored], Ranked],
) -> list[Ranked]:
    """The context signals (memoryhub.recall.signals.rerank's formula) over the pool and the
    neighbours that join it, in numpy: a query of common words has thousands of candidates at
    100k memories. Only the best `keep` (and whoever ties with the last of them) become Ranked
    rows, sorted. Sessions and their statistics are over the memories the query may return;
    session document frequencies over what the caller may see."""
    session = bank.session
    members = bank.by_session()
    in_pool = set(pool.tolist())
    pool_codes = session[pool]
    named = np.unique(pool_codes[pool_codes >= 0]).tolist()
    adjacent: dict[int, tuple[int | None, int | None]] = {}  # slot → (previous, next) slot
    lengths: dict[str, float] = {}
    joined: dict[int, float] = {}  # slot → base of a neighbour joining the pool
    for code in named:
        group = members[code]
        group = group[admitted[group]]
        lengths[f"s{code}"] = float(bank.length[group].sum())
        ordered = group[bank.order[group] != engine.NO_ORDER].tolist()
        for position, slot in enumerate(ordered):
            prev = ordered[position - 1] if position > 0 else None
            nxt = ordered[position + 1] if position + 1 < len(ordered) else None
            adjacent[slot] = (prev, nxt)
            if slot in in_pool:
                for neighbour in (prev, nxt):
                    if neighbour is not None and neighbour not in in_pool:
                        joined[neighbour] = _decayed_one(bank, scores, neighbour, best, at, config)
    candidates = np.concatenate([pool, np.array(list(joined), np.int64)]).astype(np.int64)
    base = np.concatenate([pool_base, np.array(list(joined.values()), np.float64)])
    # Session BM25 (signals.session_bm25's formula): a named session is one document (its
    # query terms summed over its memories), a memory without a session is one of its own.
    k1, b = config.search_k1, config.search_b
    n_sessions = bank.session_count(stats)
    avg_length = stats.n_docs * stats.avgdl / max(n_sessions, 1)
    sdf = {term: bank.session_frequency(term, stats) for term in weights}
    tf: dict[str, dict[str, int]] = {}
    loner = np.zeros(bank.size, np.bool_)
    loner[candidates[session[candidates] < 0]] = True
    loner_score = np.zeros(bank.size, np.float64)
    norm_a, norm_b = k1 * (1 - b), k1 * b / max(avg_length, 1e-9)
    for term in weights:
        postings = bank.postings[term]
        if named:
            codes = session[postings.slots]
            take = admitted[postings.slots] & (codes >= 0)
            sums = np.bincount(codes[take], weights=postings.tf[take], minlength=len(bank.sessions))
            for code in named:
                if sums[code]:
                    tf.setdefault(f"s{code}", {})[term] = int(sums[code])
        if sdf[term]:
            idf = math.log(1 + (n_sessions - sdf[term] + 0.5) / (sdf[term] + 0.5)) * qtf[term]
            mine = loner[postings.slots]
            at_slots = postings.slots[mine]
            count = postings.tf[mine].astype(np.float64)
            norm = norm_a + norm_b * bank.length[at_slots]
            loner_score[at_slots] += idf * count * (k1 + 1) / (count + norm)
    named_scores = signals.session_bm25(
        tf=tf,
        lengths=lengths,  # type: ignore[arg-type]
        df=sdf,
        n_sessions=n_sessions,
        qtf=qtf,
        k1=k1,
        b=b,
        avg_length=avg_length,
    )
    code_score = np.zeros(max(len(bank.sessions), 1), np.float64)
    for code in named:
        code_score[code] = named_scores.get(f"s{code}", 0.0)
    codes = session[candidates]
    session_score = np.where(codes >= 0, code_score[np.maximum(codes, 0)], loner_score[candidates])
    # rerank: (base + neighbour × (previous + next base) + session × best base × share) × subject
    best_base = float(base.max())
    best_session = float(session_score.max())
    base_of = dict(zip(candidates.tolist(), base.tolist(), strict=True))
    around = np.zeros(len(candidates), np.float64)
    for i in np.flatnonzero(codes >= 0).tolist():
        prev, nxt = adjacent.get(int(candidates[i]), (None, None))
        around[i] = (base_of.get(prev, 0.0) if prev is not None else 0.0) + (
            base_of.get(nxt, 0.0) if nxt is not None else 0.0
        )
    near = config.signal_neighbour * around
    coherence = (
        config.signal_session * best_base * (session_score / best_session)
        if best_session > 0
        else np.zeros(len(candidates), np.float64)
    )
    factor = np.ones(len(candidates), np.float64)
    if config.signal_subject != 1:
        query_terms = frozenset(qtf)
        subject_codes = bank.subject[candidates]
        for code in np.unique(subject_codes[subject_codes >= 0]).tolist():
            terms = bank.subject_terms(int(candidates[np.argmax(subject_codes == code)]))
            if terms and terms <= query_terms:
                factor[subject_codes == code] = config.signal_subject
    final = (base + near + coherence) * factor
    # The best `keep` and whoever ties with the last of them, then the exact sort in Python.
    key = -np.round(final, 9)
    if len(key) > keep:
        kth = np.partition(key, keep - 1)[keep - 1]
        chosen = np.flatnonzero(key <= kth + 1e-9)
    else:
        chosen = np.arange(len(key))
    out = [
        ranked_of(
            int(candidates[i]),
            float(final[i]),
            float(base[i]),
            signals.Scored(
                id=int(bank.ids[candidates[i]]),
                score=float(final[i]),
                base=float(base[i]),
                neighbours=float(near[i]),
                session=float(coherence[i]),
                subject=float(factor[i]),
            ),
        )
        for i in chosen.tolist()
    ]
    return out


def _decayed_one(
    bank: engine.BankIndex, scores: np.ndarray, slot: int, best: float, at: float, config: Any
) -> float:
    """The decayed score of one neighbour joining the pool (0 when it shares no term)."""
    raw = float(scores[slot])
    if not raw:
        return 0.0
    return float(
        scoring.decayed_many(
            np.array([raw]),
            best_raw=best,
            importance=bank.importance[[slot]],
            age_days=(at - bank.updated[[slot]]) / 86_400,
            strength=config.search_decay,
        )[0]
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
    full = load_memories(project_id=access.project.pk, ids=[r.memory_id for r in chosen])
    # A memory deleted since the bank copy was read is left out.
    hits = [
        Hit(memory=full[r.memory_id], score=r.score, raw=r.raw, base=r.base, parts=r.signal)
        for r in chosen
        if r.memory_id in full
    ]
    if query.record:
        _record_access(hits, query.session)
    return hits


def load_memories(
    *, project_id: int, ids: list[int], unless_injected_into: AgentSession | None = None
) -> dict[int, Memory]:
    """The winners, by id: one hand-written statement on PostgreSQL (the queryset's compilation
    cost more than the read). With `unless_injected_into`, without those injected into that
    session since its last compaction (the same statement: per-message recall asks each time)."""
    if connection.vendor != "postgresql":
        found = Memory.objects.filter(project_id=project_id).in_bulk(ids)
        if unless_injected_into is not None:
            injected = selectors.injected_memory_ids(session=unless_injected_into, among=ids)
            found = {pk: m for pk, m in found.items() if pk not in injected}
        return found
    sql = (
        f"SELECT {rows.columns(Memory, 'm')} FROM memories_memory m"  # noqa: S608
        " WHERE m.project_id = %(project)s AND m.id = ANY(%(ids)s::bigint[])"
    )
    params: dict[str, Any] = {"project": project_id, "ids": rows.int_array(ids)}
    if unless_injected_into is not None:
        reason = RecallSeen.Reason.INJECTED
        sql += f" AND NOT {selectors.seen_sql(memory_column='m.id', reason=reason)}"
        params.update(session=unless_injected_into.pk, reason=reason)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        loaded = [rows.build(Memory, row) for row in cursor.fetchall()]
    return {memory.pk: memory for memory in loaded}


def _record_access(hits: list[Hit], session: AgentSession | None) -> None:
    """Bookkeeping: hit counts and last access once the response is out (statistics nobody
    waits for), and now the session's seen set (an upsert, so a memory seen again after a
    compaction counts as seen again; the session's next recall must not see them again)."""
    ids = [hit.memory.pk for hit in hits]
    now = timezone.now()
    after_response.defer(partial(memory_record_access, memory_ids=ids, at=now))
    if session is not None:
        services.recall_seen_mark(
            session=session, memory_ids=ids, reason=RecallSeen.Reason.SEARCHED
        )
