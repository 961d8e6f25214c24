"""Ranking on the postings alone: exact within the budget, common terms pruned beyond it."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import index
from memoryhub.memories.models import Memory, MemoryTerm
from memoryhub.memories.services import MemoryInput, memory_create, memory_set_status
from projects.models import Project

Remember = Callable[[str], int]


@pytest.fixture
def remember(project: Project, alice: User) -> Remember:
    def make(content: str) -> int:
        data = MemoryInput(kind="fact", content=content)
        return memory_create(project=project, actor=Actor(user=alice), data=data).pk

    return make


def rank(
    project: Project,
    weights: dict[str, float],
    k: int,
    where: Q | None = None,
    max_postings: int | None = None,
) -> list[int]:
    """Ids of the best k (and ties) by BM25 k1 1.2, b 0 with the given term weights."""
    df = index.document_frequencies(project.pk, list(weights))
    bm25 = index.Bm25(k1=1.2, b=0.0, avgdl=1.0)
    found = index.top_memories(
        project.pk, weights, df, bm25, k, where=where, max_postings=max_postings
    )
    return [i for i, _ in found]


def test_postings_carry_the_memory_length(project: Project, remember: Remember) -> None:
    memory_id = remember("deploy docker docker compose")
    lengths = set(MemoryTerm.objects.filter(memory_id=memory_id).values_list("length", flat=True))
    assert lengths == {Memory.objects.get(pk=memory_id).term_count} == {4}


def test_within_the_budget_the_scores_are_exact_bm25(project: Project, remember: Remember) -> None:
    a = remember("zebra crossing")  # dl 2
    b = remember("zebra zebra stripes everywhere")  # dl 4 (zebra ×2)
    remember("nothing shared")  # dl 2
    df = index.document_frequencies(project.pk, ["zebra", "unknown"])
    assert df == {"zebra": 2}
    assert index.corpus_stats(project.pk) == (3, pytest.approx(8 / 3))
    bm25 = index.Bm25(k1=1.2, b=0.75, avgdl=8 / 3)
    w = math.log(1 + 1.5 / 2.5)
    ranked = index.top_memories(project.pk, {"zebra": w}, df, bm25, 10)
    expected = {
        a: w * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / (8 / 3))),
        b: w * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 4 / (8 / 3))),
    }
    assert [i for i, _ in ranked] == sorted(expected, key=lambda i: -expected[i])
    assert dict(ranked) == pytest.approx(expected)


def test_common_terms_are_only_added_when_they_cannot_change_the_result(
    project: Project,
    remember: Remember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rare = [remember("zebra common"), remember("zebra common common")]
    for i in range(5):
        remember(f"common words {i}")
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 2)
    weights = {"zebra": 5.0, "common": 0.1}
    with CaptureQueriesContext(connection) as queries:
        found = rank(project, weights, 1)
    # "zebra" (2 postings) finds the candidates; "common" could add at most 0.1 × 2.2 to a
    # memory without "zebra", far below the best score: it is only added, in one statement.
    ranking_sql = [q["sql"] for q in queries.captured_queries if "ORDER BY" in q["sql"]]
    assert len(ranking_sql) == 1 and "'common'" not in ranking_sql[0]
    assert found == [rare[1]]  # tf 2 of "common"
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 10_000)
    assert rank(project, weights, 1) == found


def test_a_memory_found_only_by_common_terms_still_wins_when_it_can(
    project: Project,
    remember: Remember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zebras = [remember("zebra") for _ in range(2)]
    for i in range(4):
        remember(f"alpha {i}")
        remember(f"beta {i}")
    both = remember("alpha beta")
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 2)
    # Only "zebra" fits the budget, but 0.9 + 0.9 beats 1.0: the bound makes the common terms
    # generate candidates too, and the answer is the exact one.
    weights = {"zebra": 1.0, "alpha": 0.9, "beta": 0.9}
    assert rank(project, weights, 1) == [both]
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 10_000)
    assert rank(project, weights, 1) == [both]
    # Past max_postings the full ranking is not afforded: the pruned answer stands.
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 2)
    assert rank(project, weights, 1, max_postings=10) == zebras[::-1]  # tied, newest first


def test_ties_with_the_last_place_are_all_returned_newest_first(
    project: Project, remember: Remember
) -> None:
    tied = [remember(f"deploy note {i}") for i in range(5)]
    remember("unrelated")
    assert rank(project, {"deploy": 1.0}, 2) == tied[::-1]


def test_where_restricts_the_candidates(
    project: Project,
    remember: Remember,
    alice: User,
) -> None:
    archived = remember("kafka kafka partition")
    active = remember("kafka consumer")
    memory_set_status(
        memory=Memory.objects.get(pk=archived),
        actor=Actor(user=alice),
        status=Memory.Status.ARCHIVED,
        reason="",
    )
    weights = {"kafka": 1.0, "partit": 1.0}
    assert rank(project, weights, 5) == [archived, active]
    where = Q(memory__status=Memory.Status.ACTIVE)
    assert rank(project, weights, 5, where=where) == [active]
