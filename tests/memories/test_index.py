"""The SQL reads of the postings: document frequencies and the memories sharing the most terms."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db.models import Q

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


def shared(
    project: Project, terms: list[str], k: int, where: Q | None = None
) -> list[tuple[int, int]]:
    return index.sharing_most_terms(project.pk, terms, k, where=where)


def test_a_memory_s_term_count_is_the_sum_of_its_postings(
    project: Project, remember: Remember
) -> None:
    memory_id = remember("deploy docker docker compose")
    postings = dict(MemoryTerm.objects.filter(memory_id=memory_id).values_list("term", "tf"))
    assert postings["docker"] == 2 and len(postings) == 3
    assert Memory.objects.get(pk=memory_id).term_count == sum(postings.values()) == 4


def test_document_frequencies_count_memories_not_occurrences(
    project: Project, remember: Remember
) -> None:
    remember("zebra zebra stripes")
    remember("zebra crossing")
    remember("nothing shared")
    df = index.document_frequencies(project.pk, ["zebra", "stripe", "unknown"])
    assert df == {"zebra": 2, "stripe": 1}


def test_the_memories_holding_the_most_terms_come_first(
    project: Project, remember: Remember
) -> None:
    one = remember("kafka notes")
    three = remember("kafka consumer lag alert")
    two = remember("kafka consumer")
    remember("unrelated words")
    terms = ["kafka", "consum", "lag"]
    assert shared(project, terms, 3) == [(three, 3), (two, 2), (one, 1)]
    assert shared(project, terms, 1) == [(three, 3)]
    assert shared(project, [], 3) == [] and shared(project, terms, 0) == []


def test_ties_with_the_last_place_are_all_returned_newest_first(
    project: Project, remember: Remember
) -> None:
    tied = [remember(f"deploy note {i}") for i in range(5)]
    best = remember("deploy note checklist")
    remember("unrelated")
    # Five tie with the 2nd place: all are returned, past k.
    assert shared(project, ["deploy", "note", "checklist"], 2) == [(best, 3)] + [
        (i, 2) for i in tied[::-1]
    ]


def test_at_most_max_candidates_are_returned_the_newest_of_a_tie(
    project: Project, remember: Remember, monkeypatch: pytest.MonkeyPatch
) -> None:
    tied = [remember(f"deploy note {i}") for i in range(5)]
    monkeypatch.setattr(index, "MAX_CANDIDATES", 3)
    assert [i for i, _ in shared(project, ["deploy"], 1)] == tied[::-1][:3]


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
    terms = ["kafka", "partit"]
    assert shared(project, terms, 5) == [(archived, 2), (active, 1)]
    where = Q(memory__status=Memory.Status.ACTIVE)
    assert shared(project, terms, 5, where=where) == [(active, 1)]
