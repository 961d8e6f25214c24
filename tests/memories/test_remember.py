from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services, similarity
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.memories.services import MemoryInput, contradicts, memory_remember
from projects.models import Project


def remember(project: Project, user: User, content: str, **fields: object) -> Memory:
    fields.setdefault("kind", "fact")
    data = MemoryInput(content=content, **fields)  # type: ignore[arg-type]
    return memory_remember(
        project=project, actor=Actor.for_system("pipeline", user=user), data=data
    ).memory


def test_similarity_measures_match_hand_computed_values() -> None:
    assert similarity.meow_tokens("Use pytest 测试用例") == [
        "use",
        "pytest",
        "测试",
        "试用",
        "用例",
    ]
    # {a, b, c} vs {a, b, d}: 2 shared of 4
    assert similarity.jaccard("a b c", "a b d") == 0.5
    assert similarity.cosine("a a b", "a b") == (2 + 1) / ((5**0.5) * (2**0.5))


def test_near_duplicates_merge_into_the_newest_match(project: Project, alice: User) -> None:
    first = remember(
        project, alice, "The CI pipeline runs ruff, mypy and pytest on every push", importance=1
    )
    again = remember(
        project,
        alice,
        "The CI pipeline runs ruff, mypy and pytest on every push!",
        importance=3,
        keywords=["ci"],
    )
    assert again.pk == first.pk
    assert again.importance == 3 and again.keywords == ["ci"]
    assert Memory.objects.count() == 1
    assert list(MemoryEvent.objects.order_by("id").values_list("verb", flat=True)) == [
        "created",
        "merged",
    ]


def test_writing_the_same_memory_twice_keeps_one(project: Project, alice: User) -> None:
    a = remember(project, alice, "Deploys go through `make release`.")
    b = remember(project, alice, "Deploys go through `make release`.")
    assert a.pk == b.pk and Memory.objects.count() == 1
    assert MemoryEvent.objects.filter(verb="merged").count() == 1


def test_different_kinds_never_merge(project: Project, alice: User) -> None:
    remember(project, alice, "Always run migrations before deploying", kind="rule")
    remember(project, alice, "Always run migrations before deploying", kind="lesson")
    assert Memory.objects.count() == 2


def test_contradictions_make_the_older_memory_stale(project: Project, alice: User) -> None:
    assert contradicts("The backend requires Node 18", "The backend requires Node 20")
    assert contradicts("We use black for formatting", "We no longer use black for formatting")
    assert not contradicts("We use black for formatting", "Deploys happen on Fridays")
    old = remember(project, alice, "The backend service requires Node 18 to build")
    new = remember(project, alice, "The backend service requires Node 20 to build")
    old.refresh_from_db()
    assert old.status == Memory.Status.STALE and old.superseded_by_id == new.pk
    assert str(new.public_id) in old.status_reason
    assert new.status == Memory.Status.ACTIVE


def test_review_approval(
    alice_client: APIClient, bob_client: APIClient, project: Project, alice: User
) -> None:
    memory = remember(
        project, alice, "Use feature flags for risky changes", status=Memory.Status.PROPOSED
    )
    url = f"/api/v1/projects/alpha/memories/{memory.public_id}/approve/"
    assert bob_client.post(url).status_code == 403  # members propose, maintainers approve
    response = alice_client.post(url)
    assert response.status_code == 200 and response.json()["status"] == "active"
    assert alice_client.post(url).status_code == 400
    assert MemoryEvent.objects.filter(verb="approved").count() == 1


LETTERS = str.maketrans("0123456789", "ghijklmnop")


def test_a_repeat_merges_even_when_many_older_memories_share_its_words(
    project: Project, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sixty memories written after the original hold both of the repeat's words, far more than
    # the candidates asked for: they all tie, and the original, the oldest of the tie, must not
    # be cut (the newest-first order alone would cut it).
    monkeypatch.setattr(services, "REMEMBER_CANDIDATES", 5)
    first = remember(project, alice, "alpha beta")
    for i in range(60):  # each its own memory: no near-duplicates, no numbers to contradict
        word = hashlib.sha256(str(i).encode()).hexdigest()[:24].translate(LETTERS)
        remember(project, alice, f"alpha beta {word}")
    assert Memory.objects.filter(project=project).count() == 61
    again = remember(project, alice, "alpha beta.")  # a near-duplicate, not the same text
    assert again.pk == first.pk
    short = Memory.objects.filter(project=project, content__in=["alpha beta", "alpha beta."])
    assert short.count() == 1
