"""POST /recall/: keyword hits and recall files for a user message, as one injection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories.models import Memory
from memoryhub.recall.api.recall import RecallMemoryResultSerializer
from memoryhub.recall.models import RecallSeen, RecallSurfaced
from memoryhub.recall.search import Hit
from memoryhub.sessions.models import SessionRecord
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory

P = "/api/v1/projects/alpha/"
RECALL = P + "recall/"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOTE = "---\nname: Testing\ndescription: pytest conventions\ntype: feedback\n---\n\nUse -q."


def setup_bank(client: APIClient) -> str:
    assert client.post(P + "sessions/", {"external_id": "s1"}, format="json").status_code == 201
    memory = client.post(
        P + "memories/",
        {
            "kind": "lesson",
            "content": "Run pytest with -q; the full output floods the context.",
            "keywords": ["pytest", "output"],
            "updated_at": (NOW - timedelta(hours=1, minutes=30)).isoformat(),
        },
        format="json",
    )
    assert memory.status_code == 201
    note = client.put(
        P + "recall-files/project/testing.md",
        {"content": NOTE, "mtime": NOW.isoformat()},
        format="json",
    )
    assert note.status_code == 201
    return str(memory.json()["id"])


def recall(client: APIClient, query: str, **extra: Any) -> Any:
    extra.setdefault("session_id", "s1")
    extra.setdefault("as_of", NOW.isoformat())
    return client.post(RECALL, {"query": query, **extra}, format="json")


def test_it_returns_hits_and_files_in_one_injection(alice_client: APIClient) -> None:
    memory_id = setup_bank(alice_client)
    response = recall(alice_client, "How should I run pytest?")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == (
        f"{INJECTION_OPEN}\n<system-reminder>\n"
        "Possibly relevant memories, for reference only:\n"
        f"[lesson] [{memory_id}] 2026-03-01 10:30 UTC\n"
        "Run pytest with -q; the full output floods the context.\n"
        "\n"
        "The following relevant memories from prior conversations may help:\n\n"
        "## Memory: testing.md (saved today)\n\n"
        f"{NOTE}\n\n---\n\n"
        f"</system-reminder>\n{INJECTION_CLOSE}"
    )
    memory, file = body["results"]
    assert memory["type"] == "memory" and memory["id"] == memory_id
    assert (memory["kind"], memory["scope"], memory["importance"]) == ("lesson", "project", 1)
    assert memory["score"] > 0
    assert (file["type"], file["path"], file["age_days"]) == ("file", "testing.md", 0)
    assert RecallSeen.objects.filter(reason="injected").count() == 1
    assert RecallSurfaced.objects.count() == 1


def test_memory_results_are_exactly_the_serializers_output(alice_client: APIClient) -> None:
    setup_bank(alice_client)
    alice_client.post(
        P + "memories/",
        {
            "kind": "rule",
            "content": "pytest 中文说明：先跑 -q。",
            "title": "pytest",
            "importance": 4,
        },
        format="json",
    )
    results = recall(alice_client, "pytest").json()["results"]
    rows = [r for r in results if r["type"] == "memory"]
    assert len(rows) == 2
    memories = {str(m.public_id): m for m in Memory.objects.all()}
    for row in rows:
        hit = Hit(memory=memories[row["id"]], score=row["score"], raw=0.0)
        assert row == RecallMemoryResultSerializer(hit).data


def test_the_agents_transcript_flags_the_injection(alice_client: APIClient) -> None:
    setup_bank(alice_client)
    text = recall(alice_client, "pytest output").json()["text"]
    record = [{"type": "user", "content": f"{text}\nplease run the tests"}]
    assert alice_client.post(P + "sessions/s1/records/", record, format="json").status_code == 201
    assert SessionRecord.objects.get(type="user").contains_injection


def test_nothing_found_is_empty(alice_client: APIClient) -> None:
    setup_bank(alice_client)
    for query in ["", "   ", "kubernetes helm charts"]:
        response = recall(alice_client, query)
        assert response.status_code == 200
        assert response.json() == {"results": [], "text": ""}
    assert not RecallSeen.objects.exists()


def test_a_named_session_must_be_of_this_project(
    alice_client: APIClient, charlie_client: APIClient
) -> None:
    setup_bank(alice_client)
    missing = recall(alice_client, "pytest", session_id="nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    charlie_client.post("/api/v1/projects/charlie-lab/sessions/", {"external_id": "c1"})
    other = charlie_client.post(
        "/api/v1/projects/charlie-lab/recall/",
        {"query": "pytest", "session_id": "s1"},
        format="json",
    )
    assert other.status_code == 404


def test_read_only_tokens_and_viewers_may_recall(
    alice_client: APIClient,
    alice_ro_client: APIClient,
    alice: User,
    project: Project,
    make_client: Any,
) -> None:
    setup_bank(alice_client)
    assert len(recall(alice_ro_client, "pytest").json()["results"]) == 2
    dave = UserFactory.create(username="dave")
    membership_add(
        access=project_access(slug="alpha", actor=Actor(user=alice)), user=dave, role=Role.VIEWER
    )
    assert make_client(dave).post(P + "sessions/", {"external_id": "d1"}).status_code == 403
    # A viewer has no session of their own: recall without one marks nothing.
    response = make_client(dave).post(P + "recall/", {"query": "pytest"}, format="json")
    assert len(response.json()["results"]) == 2
    # Someone else's session is refused: recalling into it would hide from its author's agent
    # what the viewer was shown.
    alice_client.post(P + "sessions/", {"external_id": "s2"}, format="json")
    refused = recall(make_client(dave), "pytest", session_id="s2")
    assert refused.status_code == 403
    assert not RecallSeen.objects.filter(session__external_id="s2").exists()
    assert len(recall(alice_client, "pytest", session_id="s2").json()["results"]) == 2
    # A read-only token still cannot write through other endpoints.
    denied = alice_ro_client.post(P + "memories/", {"content": "x", "kind": "fact"}, format="json")
    assert denied.status_code == 403


def test_recent_tools_and_as_of_are_validated(alice_client: APIClient) -> None:
    setup_bank(alice_client)
    assert recall(alice_client, "pytest", recent_tools=["Bash"] * 51).status_code == 400
    assert recall(alice_client, "pytest", as_of="yesterday").status_code == 400
    later = recall(alice_client, "pytest", as_of=(NOW + timedelta(days=4)).isoformat()).json()
    assert "## Memory: testing.md (saved 4 days ago)\n\nThis memory is 4 days old." in later["text"]


def test_it_recalls_every_kind_the_pipeline_learns_and_never_repeats_one(
    alice_client: APIClient,
) -> None:
    """Issue 9: project, feedback and user memories (what the offline extractor writes) were
    never recalled. Every visible kind is now; seen-tracking keeps each one to a single time."""
    assert (
        alice_client.post(P + "sessions/", {"external_id": "s1"}, format="json").status_code == 201
    )
    ids = {}
    for kind, content, keywords in (
        ("project", "We use conventional commits for every merge.", ["commit", "convention"]),
        ("feedback", "Stop squashing commits before review.", ["commit", "squash"]),
    ):
        response = alice_client.post(
            P + "memories/",
            {"kind": kind, "content": content, "keywords": keywords},
            format="json",
        )
        assert response.status_code == 201
        ids[kind] = response.json()["id"]
    first = recall(alice_client, "How do I name a commit?").json()
    assert {r["id"] for r in first["results"] if r["type"] == "memory"} == set(ids.values())
    again = recall(alice_client, "How do I name a commit?").json()
    assert [r for r in again["results"] if r["type"] == "memory"] == []
