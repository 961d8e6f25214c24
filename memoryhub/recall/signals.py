"""Context signals of the ranking (issue 14): what the bank knows about a memory besides its
words — the session it was learned from, its place in that session, and who or what it is about.

Applied to today's score (BM25 × the recency factor, `base`) of each candidate:

    score = (base
             + neighbour × (base of the previous + base of the next memory of its session)
             + session × best base × session BM25 / the best session BM25)
            × (subject when the memory's subject is named in the query, else 1)

- session coherence: the memory's whole source session taken as one document, scored by
  BM25 with idf over sessions, so a memory from the conversation or task the query is about
  rises above a stray match elsewhere. A memory without a source session is a session of its
  own (its own text).
- neighbour smoothing: a memory's previous and next memory in its source session (by
  source_record_start) lend it part of their score; they join the candidates, so the answer
  turn after a matching question is found even when it shares no word with the query.
- subject boost: the memory's subject (metadata "subject", else its title, else a leading
  `Name:` label of its content) has every term in the query.

Pure Python, no Django: bench/_locomo.py loads this file by path for the in-process replica,
and the candidate generator (memoryhub.memories.index, or an in-memory index) feeds it plain
values. Weights of 0 (and a subject factor of 1) turn a signal off; all off is today's ranking.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

# A leading "Name:" label — one to three words, a capital first (or CJK), before a colon and a
# space: "Caroline: …", "Melanie Smith: …", "Deploy: …". Not "http://", not "12:30".
_LABEL = re.compile(r"\s*([A-Z\u3400-\u9fff][\w'.-]*(?: [\w'.-]+){0,2})\s*[:：]\s")


class Weights(Protocol):
    """The recall settings the signals read (memoryhub.recall.conf.RecallConfig)."""

    @property
    def signal_session(self) -> float: ...
    @property
    def signal_neighbour(self) -> float: ...
    @property
    def signal_subject(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    base: float  # today's score; 0 for a neighbour that shares no term with the query
    session: str  # the session key (session_key)
    order: int | None  # source_record_start: None, no neighbours
    subject: frozenset[str]  # subject terms (subject_text, tokenized)


@dataclass(frozen=True, slots=True)
class Scored:
    id: int
    score: float
    base: float
    neighbours: float  # the neighbour term added
    session: float  # the session term added
    subject: float  # the factor applied (1 when not named)


def session_key(source_session: str, memory_id: int) -> str:
    """The session a memory counts in: its source session, or itself alone ("#<id>" cannot be
    an external session id of ours: they are never empty and a memory id is not one)."""
    return f"s:{source_session}" if source_session else f"#{memory_id}"


def subject_text(*, title: str, content: str, metadata: Mapping[str, Any]) -> str:
    """Who or what a memory is about: metadata "subject", else its title, else a leading
    `Name:` label of its content; "" when none."""
    subject = metadata.get("subject") if isinstance(metadata, Mapping) else None
    if isinstance(subject, str) and subject.strip():
        return subject
    if title.strip():
        return title
    match = _LABEL.match(content)
    return match.group(1) if match else ""


def session_bm25(
    *,
    tf: Mapping[str, Mapping[str, int]],
    lengths: Mapping[str, int],
    df: Mapping[str, int],
    n_sessions: int,
    qtf: Mapping[str, int],
    k1: float,
    b: float,
    avg_length: float,
) -> dict[str, float]:
    """BM25 of each session as one document: tf[session][term] is the term's count over the
    session's memories, lengths[session] their total term count, df[term] the number of
    sessions holding the term out of n_sessions (Lucene's idf, query repeats weigh more, as
    the memory ranking)."""
    out: dict[str, float] = {}
    norm_a, norm_b = k1 * (1 - b), k1 * b / max(avg_length, 1e-9)
    idf = {
        t: math.log(1 + (n_sessions - df[t] + 0.5) / (df[t] + 0.5)) * qtf[t]
        for t in qtf
        if df.get(t)
    }
    for session, counts in tf.items():
        norm = norm_a + norm_b * lengths.get(session, 0)
        score = 0.0
        for term, count in counts.items():
            if term in idf and count > 0:
                score += idf[term] * count * (k1 + 1) / (count + norm)
        out[session] = score
    return out


def neighbour_ids(
    members: Iterable[tuple[int, int | None]], of: Iterable[int]
) -> dict[int, tuple[int | None, int | None]]:
    """(previous, next) of each memory in `of` among `members` (id, order) of one session."""
    ordered = sorted((o, i) for i, o in members if o is not None)
    position = {i: n for n, (_, i) in enumerate(ordered)}
    out: dict[int, tuple[int | None, int | None]] = {}
    for i in of:
        n = position.get(i)
        if n is None:
            out[i] = (None, None)
            continue
        prev = ordered[n - 1][1] if n > 0 else None
        nxt = ordered[n + 1][1] if n + 1 < len(ordered) else None
        out[i] = (prev, nxt)
    return out


def rerank(
    candidates: Sequence[Candidate],
    *,
    adjacent: Mapping[int, tuple[int | None, int | None]],
    session_scores: Mapping[str, float],
    query_terms: frozenset[str],
    weights: Weights,
) -> list[Scored]:
    """Every candidate with its final score (unsorted). `adjacent`: (previous, next) memory of
    each candidate in its whole session (neighbour_ids over the session's members); the caller
    makes the neighbours of the memories that matched candidates too (base 0 when they share no
    term with the query)."""
    if not candidates:
        return []
    best_base = max(c.base for c in candidates)
    best_session = max((session_scores.get(c.session, 0.0) for c in candidates), default=0.0)
    base_of = {c.id: c.base for c in candidates}
    out = []
    for c in candidates:
        prev, nxt = adjacent.get(c.id, (None, None))
        around = (base_of.get(prev, 0.0) if prev is not None else 0.0) + (
            base_of.get(nxt, 0.0) if nxt is not None else 0.0
        )
        near = weights.signal_neighbour * around
        coherence = 0.0
        if best_session > 0:
            share = session_scores.get(c.session, 0.0) / best_session
            coherence = weights.signal_session * best_base * share
        factor = weights.signal_subject if c.subject and c.subject <= query_terms else 1.0
        out.append(
            Scored(
                id=c.id,
                score=(c.base + near + coherence) * factor,
                base=c.base,
                neighbours=near,
                session=coherence,
                subject=factor,
            )
        )
    return out
