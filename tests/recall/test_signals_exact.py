"""The ranking with the context signals (computed in numpy over the bank copy, issue 15) against
the documented ranking recomputed in plain Python from the database rows through the pure
signals module (signals.session_bm25, signals.rerank): the same top 20 with the same scores,
on a bank with sessions, record orders, session-less memories, `Name:` labels, titles, subject
fields, stale and archived memories and many ties."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from memoryhub.memories.models import Memory, MemoryTerm
from memoryhub.memories.text import tokenize
from memoryhub.recall import scoring, signals
from memoryhub.recall.conf import RecallConfig

PROJECT = "/api/v1/projects/alpha/"
NOW = datetime(2026, 3, 1, tzinfo=UTC)
WORDS = [
    "kafka",
    "topic",
    "billing",
    "retention",
    "deploy",
    "staging",
    "lunch",
    "friday",
    "redis",
    "port",
    "cache",
    "paint",
    "lake",
]
NAMES = ["Caroline", "Melanie", "Jon"]


def _bank(client: APIClient, rng: random.Random, n: int) -> None:
    items: list[dict[str, Any]] = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        name = rng.choice([*NAMES, None, None])
        item: dict[str, Any] = {
            "content": f"{name}: {words}." if name else f"About {words}.",
            "kind": "fact",
            "importance": rng.choice((1, 1, 2, 3)),
            "created_at": (NOW - timedelta(days=rng.randint(0, 300))).isoformat(),
        }
        if rng.random() < 0.15:
            item["title"] = rng.choice(NAMES)
        if rng.random() < 0.1:
            item["metadata"] = {"subject": rng.choice(WORDS)}
        if rng.random() < 0.75:
            item["source"] = {"session": f"s{rng.randint(1, 8)}", "record_start": i}
        items.append(item)
    response = client.post(PROJECT + "memories/bulk/", {"items": items}, format="json")
    assert response.status_code == 201, response.content
    for memory in Memory.objects.order_by("pk")[: n // 10]:
        action = rng.choice(("archive", "stale"))
        url = f"{PROJECT}memories/{memory.public_id}/{action}/"
        assert client.post(url, {"reason": "old"}, format="json").status_code == 200, url


def _reference(query: str, k: int = 20) -> list[tuple[str, float]]:
    config = RecallConfig()
    memories = {m.pk: m for m in Memory.objects.all()}
    n_docs = len(memories)
    avgdl = sum(m.term_count for m in memories.values()) / n_docs
    qtf = Counter(tokenize(query))
    postings: dict[str, dict[int, int]] = {}
    for memory_id, term, tf in MemoryTerm.objects.filter(term__in=list(qtf)).values_list(
        "memory_id", "term", "tf"
    ):
        postings.setdefault(term, {})[memory_id] = tf
    weights = {t: scoring.idf(n_docs, len(postings[t])) * qtf[t] for t in qtf if t in postings}
    k1, b = config.search_k1, config.search_b
    raw: dict[int, float] = {}
    for term, weight in weights.items():
        for memory_id, tf in postings[term].items():
            norm = k1 * (1 - b + b * memories[memory_id].term_count / avgdl)
            raw[memory_id] = raw.get(memory_id, 0.0) + weight * tf * (k1 + 1) / (tf + norm)
    active = {i for i, m in memories.items() if m.status == Memory.Status.ACTIVE}
    admitted = {i: r for i, r in raw.items() if i in active}
    best = max(admitted.values())

    def decayed(i: int) -> float:
        r = raw.get(i, 0.0)
        if not r:
            return 0.0
        m = memories[i]
        return scoring.decayed(
            r,
            best_raw=best,
            importance=m.importance,
            updated_at=m.updated_at,
            now=NOW,
            strength=config.search_decay,
        )

    depth = 20
    if len(admitted) > depth:
        kth = sorted(admitted.values(), reverse=True)[depth - 1]
        pool = {
            i for i, r in admitted.items() if r >= scoring.decay_floor(config.search_decay) * kth
        }
    else:
        pool = set(admitted)

    def key(i: int) -> str:
        return signals.session_key(memories[i].source_session, i)

    # Sessions of the pool over the admitted memories: neighbours (by record, then id).
    adjacent: dict[int, tuple[int | None, int | None]] = {}
    joined: set[int] = set()
    by_session: dict[str, list[int]] = {}
    for i in active:
        if memories[i].source_session:
            by_session.setdefault(memories[i].source_session, []).append(i)
    pool_sessions = {memories[i].source_session for i in pool if memories[i].source_session}
    for name in pool_sessions:
        ordered = sorted(
            (i for i in by_session[name] if memories[i].source_record_start is not None),
            key=lambda i: (memories[i].source_record_start, i),
        )
        for n, i in enumerate(ordered):
            prev = ordered[n - 1] if n > 0 else None
            nxt = ordered[n + 1] if n + 1 < len(ordered) else None
            adjacent[i] = (prev, nxt)
            if i in pool:
                joined |= {x for x in (prev, nxt) if x is not None and x not in pool}
    candidates = pool | joined
    session_tf: dict[str, dict[str, int]] = {}
    lengths: dict[str, int] = {}
    for i in candidates:
        if not memories[i].source_session:
            lengths[key(i)] = memories[i].term_count
            for term in weights:
                if i in postings[term]:
                    session_tf.setdefault(key(i), {})[term] = postings[term][i]
    for name in pool_sessions:
        group = by_session[name]
        lengths[f"s:{name}"] = sum(memories[i].term_count for i in group)
        for term in weights:
            count = sum(postings[term].get(i, 0) for i in group)
            if count:
                session_tf.setdefault(f"s:{name}", {})[term] = count
    sessions_of = {term: {key(i) for i in postings[term]} for term in weights}
    n_sessions = len({key(i) for i in memories})
    session_scores = signals.session_bm25(
        tf=session_tf,
        lengths=lengths,
        df={t: len(s) for t, s in sessions_of.items()},
        n_sessions=n_sessions,
        qtf=qtf,
        k1=k1,
        b=b,
        avg_length=n_docs * avgdl / n_sessions,
    )

    def subject(i: int) -> frozenset[str]:
        m = memories[i]
        text = signals.subject_text(title=m.title, content=m.content[:80], metadata=m.metadata)
        return frozenset(tokenize(text)) if text else frozenset()

    scored = signals.rerank(
        [
            signals.Candidate(
                id=i,
                base=decayed(i),
                session=key(i),
                order=memories[i].source_record_start,
                subject=subject(i),
            )
            for i in candidates
        ],
        adjacent=adjacent,
        session_scores=session_scores,
        query_terms=frozenset(qtf),
        weights=config,
    )
    order = sorted(scored, key=lambda s: (-round(s.score, 9), memories[s.id].created_at, s.id))
    return [(str(memories[s.id].public_id), s.score) for s in order[:k]]


@pytest.mark.parametrize("seed", [3, 11])
def test_the_signals_in_numpy_equal_the_documented_ranking(
    alice_client: APIClient, seed: int
) -> None:
    rng = random.Random(seed)
    _bank(alice_client, rng, 240)
    questions = [" ".join(rng.sample(WORDS + NAMES, rng.randint(1, 4))) for _ in range(25)]
    for question in questions:
        response = alice_client.get(
            PROJECT + "memories/search/", {"q": question, "k": "20", "as_of": NOW.isoformat()}
        )
        assert response.status_code == 200
        got = [(r["id"], r["score"]) for r in response.json()["results"]]
        expected = _reference(question)
        assert [i for i, _ in got] == [i for i, _ in expected], question
        assert [s for _, s in got] == pytest.approx([s for _, s in expected]), question
