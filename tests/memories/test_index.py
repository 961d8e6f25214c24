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


def rank(project: Project, query: list[str], limit: int, where: Q | None = None) -> list[int]:
    df = index.document_frequencies(project.pk, query)
    n, avgdl = index.bank_stats(project.pk)
    weights = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in df}
    bm25 = index.Bm25(k1=1.2, b=0.75, avgdl=avgdl)
    return [i for i, _ in index.top_memories(project.pk, weights, df, bm25, limit, where)]


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
    assert index.bank_stats(project.pk) == (3, pytest.approx(8 / 3))
    bm25 = index.Bm25(k1=1.2, b=0.75, avgdl=8 / 3)
    w = math.log(1 + 1.5 / 2.5)
    ranked = index.top_memories(project.pk, {"zebra": w}, df, bm25, 10)
    expected = {
        a: w * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / (8 / 3))),
        b: w * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 4 / (8 / 3))),
    }
    assert [i for i, _ in ranked] == sorted(expected, key=lambda i: -expected[i])
    assert dict(ranked) == pytest.approx(expected)


def test_common_terms_only_add_to_candidates_found_by_rare_ones(
    project: Project,
    remember: Remember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rare = [remember("zebra common"), remember("zebra common common")]
    common_only = [remember("common words " + str(i)) for i in range(5)]
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 2)
    with CaptureQueriesContext(connection) as queries:
        found = rank(project, ["zebra", "common"], 1)
    # Two candidates (2 × limit) come from "zebra" alone; "common" is only added to them.
    ranking_sql = [q["sql"] for q in queries.captured_queries if "ORDER BY" in q["sql"]]
    assert len(ranking_sql) == 1 and "'common'" not in ranking_sql[0]
    assert found[0] in rare
    # With the budget, the full scores of the candidates are the exact ones.
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 10_000)
    assert rank(project, ["zebra", "common"], 1) == found
    # Too few rare candidates for the limit: the common term generates candidates too.
    monkeypatch.setattr(index, "POSTINGS_BUDGET", 2)
    top = rank(project, ["zebra", "common"], 4)
    assert top[:2] == rank(project, ["zebra"], 2) and set(top[2:]) <= set(common_only)


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
    assert rank(project, ["kafka", "partit"], 5) == [archived, active]
    where = Q(memory__status=Memory.Status.ACTIVE)
    assert rank(project, ["kafka", "partit"], 5, where=where) == [active]
