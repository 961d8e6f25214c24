"""Per-message recall hits (POST …/recall/): the one ranking's top two (issue 14), minus the
session's own memories, then minus what was already injected into the session."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.recall import keyword_hits
from memoryhub.recall.search import Hit
from projects.selectors import project_access
from tests.recall.memories import add_memory

MEMORIES = "/api/v1/projects/alpha/memories/"
SEARCH = MEMORIES + "search/"
RECALL = "/api/v1/projects/alpha/recall/"
SESSIONS = "/api/v1/projects/alpha/sessions/"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def add(client: APIClient, content: str, **fields: Any) -> str:
    fields.setdefault("updated_at", NOW.isoformat())
    return add_memory(client, content, fields.pop("kind", "fact"), **fields)


def hits(alice: User, message: str, *, k: int = 10, now: datetime = NOW) -> list[Hit]:
    access = project_access(slug="alpha", actor=Actor(user=alice))
    return keyword_hits.keyword_hits(access=access, message=message, session=None, now=now, k=k)


def ids(found: list[Hit]) -> list[str]:
    return [str(h.memory.public_id) for h in found]


def recall(client: APIClient, query: str, session: str = "s1") -> list[dict[str, Any]]:
    response = client.post(RECALL, {"query": query, "session_id": session}, format="json")
    assert response.status_code == 200, response.content
    return [r for r in response.json()["results"] if r["type"] == "memory"]


@pytest.fixture
def session(alice_client: APIClient) -> str:
    assert alice_client.post(SESSIONS, {"external_id": "s1"}, format="json").status_code == 201
    return "s1"


def test_the_hits_are_the_search_rankings_top_two(alice_client: APIClient, alice: User) -> None:
    add(alice_client, "Caroline: the staging deploy runs every night at two.")
    add(alice_client, "Deploys to production need a second reviewer.", importance=3)
    add(alice_client, "Melanie: I painted a sunrise over the lake last week.")
    add(alice_client, "The nightly staging job also rotates the deploy keys.")
    add(alice_client, "Staging is reset on Mondays.")
    question = "When does Caroline's staging deploy run?"
    searched = alice_client.get(SEARCH, {"q": question, "k": "20", "as_of": NOW.isoformat()})
    assert searched.status_code == 200
    ranking = searched.json()["results"]
    assert len(ranking) >= 3
    found = hits(alice, question, k=20)
    assert ids(found) == [r["id"] for r in ranking]
    assert [h.score for h in found] == pytest.approx([r["score"] for r in ranking])
    top = hits(alice, question, k=keyword_hits.HIT_TOP_K)
    assert ids(top) == [r["id"] for r in ranking[: keyword_hits.HIT_TOP_K]]


def test_candidates_are_every_active_visible_kind(
    alice_client: APIClient, bob_client: APIClient, alice: User
) -> None:
    """Every kind the pipeline writes can be recalled (issue 9: project, feedback and user
    memories were never candidates, so learned conventions were never recalled)."""
    expected = {
        add(alice_client, "zookeeper quorum", kind="fact"),
        add(alice_client, "zookeeper quorum", kind="lesson"),
        add(alice_client, "zookeeper quorum", kind="rule"),
        add(alice_client, "zookeeper quorum", kind="topic"),
        add(alice_client, "zookeeper quorum", kind="fact", scope="user"),  # alice's own
        add(alice_client, "zookeeper quorum", kind="project"),
        add(alice_client, "zookeeper quorum", kind="reference"),
        add(alice_client, "zookeeper quorum", kind="user"),
        add(alice_client, "zookeeper quorum", kind="feedback"),
    }
    archived = add(alice_client, "zookeeper quorum")
    assert alice_client.post(f"{MEMORIES}{archived}/archive/", {}, format="json").status_code == 200
    add(alice_client, "zookeeper quorum", status="proposed")
    add(bob_client, "zookeeper quorum", kind="fact", scope="user")  # bob's: never alice's
    add(bob_client, "zookeeper quorum", kind="user")  # bob's preference: never alice's either
    assert set(ids(hits(alice, "zookeeper", k=20))) == expected


def test_chinese_messages_match_chinese_memories(alice_client: APIClient, alice: User) -> None:
    zh = add(alice_client, "部署前必须先运行数据库迁移", keywords=["数据库迁移", "部署"])
    add(alice_client, "Run migrations before deploying")
    assert ids(hits(alice, "部署之前要做数据库迁移吗？")) == [zh]


def test_only_the_first_500_characters_of_the_message_count(
    alice_client: APIClient, alice: User
) -> None:
    add(alice_client, "elasticsearch shards")
    assert hits(alice, "x " * 250 + "elasticsearch") == []
    assert len(hits(alice, "x " * 240 + "elasticsearch")) == 1
    assert hits(alice, "") == [] and hits(alice, "the and of") == []


def test_it_skips_memories_written_by_the_same_session(
    alice_client: APIClient, session: str
) -> None:
    add(alice_client, "jenkins pipeline", source={"session": "s1"})
    other = add(alice_client, "jenkins pipeline", source={"session": "s2"})
    add(alice_client, "python")
    assert [r["id"] for r in recall(alice_client, "jenkins")] == [other]


def test_top_two_then_already_injected_ones_are_dropped_until_compaction(
    alice_client: APIClient, alice: User, session: str
) -> None:
    add(alice_client, "postgres vacuum settings", importance=2)
    add(alice_client, "postgres vacuum and autovacuum", importance=3)
    add(alice_client, "postgres")
    first, second = ids(hits(alice, "postgres vacuum", k=2))
    assert [r["id"] for r in recall(alice_client, "postgres vacuum")] == [first, second]
    # The same two rank first again and were injected: nothing is injected, the third one
    # does not move up (meow-memory filters after taking the top two).
    assert recall(alice_client, "postgres vacuum") == []
    # Another session has its own seen set.
    alice_client.post(SESSIONS, {"external_id": "s2"}, format="json")
    assert [r["id"] for r in recall(alice_client, "postgres vacuum", "s2")] == [first, second]
    # After a compaction the agent has forgotten them: they may be injected again.
    boundary = [{"type": "compact_boundary", "content": {"summary": "…", "keep": []}}]
    response = alice_client.post(SESSIONS + "s1/records/", boundary, format="json")
    assert response.status_code == 201, response.content
    assert [r["id"] for r in recall(alice_client, "postgres vacuum")] == [first, second]
