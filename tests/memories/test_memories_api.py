from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memoryhub.memories.models import Memory, MemoryEvent
from projects.models import Project
from tests.factories import MemoryFactory

URL = "/api/v1/projects/alpha/memories/"


def create(client: APIClient, **body: Any) -> Any:
    body.setdefault("content", "We deploy with `make release`.")
    body.setdefault("kind", "project")
    return client.post(URL, body, format="json")


def test_a_memory_cites_only_its_authors_own_sessions(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    alices = alice_client.post(
        URL.replace("memories", "sessions"), {"external_id": "alice-s"}, format="json"
    )
    assert alices.status_code == 201
    public_id = alices.json()["id"]
    for ref in ("alice-s", public_id):
        cited = create(bob_client, source={"session": ref, "record_start": 0, "record_end": 3})
        assert cited.status_code == 403, cited.content
        assert "another person's" in cited.json()["error"]["message"]
        bulk = bob_client.post(
            URL + "bulk/",
            {"items": [{"content": "x", "kind": "fact", "source": {"session": ref}}]},
            format="json",
        )
        assert bulk.status_code == 403, bulk.content
    assert not Memory.objects.exists()
    # Her own session, or a name no session here has (provenance from an import), pass.
    assert create(alice_client, source={"session": "alice-s"}).status_code == 201
    assert create(bob_client, source={"session": "from-meow-42"}).status_code == 201


def test_it_creates_a_memory_with_provenance(alice_client: APIClient) -> None:
    response = create(
        alice_client,
        title="Release",
        keywords=["release", " Release ", "deploy", ""],
        importance=3,
        subcategory="ops",
        metadata={"agent": "mewcode"},
        source={"session": "sess-1", "record_start": 4, "record_end": 12},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "project" and body["scope"] == "project" and body["owner"] is None
    assert body["keywords"] == ["release", "deploy"]
    assert body["importance"] == 3 and body["subcategory"] == "ops"
    assert body["status"] == "active"
    assert body["provenance"] == {
        "session": "sess-1",
        "record_start": 4,
        "record_end": 12,
        "via": "token",
        "user": "alice",
        "token": body["provenance"]["token"],
    }
    assert body["provenance"]["token"].startswith("mh_rw_")
    memory = Memory.objects.get(public_id=body["id"])
    assert len(memory.content_hash) == 64


@pytest.mark.parametrize(
    ("alias", "kind", "scope"),
    [
        ("user-preference", "user", "user"),
        ("feedback-correction", "feedback", "user"),
        ("project-knowledge", "project", "project"),
        ("reference", "reference", "project"),
        ("rules", "rule", "project"),
        ("soul", "soul", "user"),
        ("纠正反馈", "feedback", "user"),
    ],
)
def test_it_maps_seed_kinds_to_the_taxonomy(
    alice_client: APIClient, alias: str, kind: str, scope: str
) -> None:
    response = create(alice_client, kind=alias)
    assert response.status_code == 201, response.content
    assert (response.json()["kind"], response.json()["scope"]) == (kind, scope)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "nonsense"}, "kind"),
        ({"content": "   "}, "content"),
        ({"importance": 0}, "importance"),
        ({"kind": "fact", "subcategory": "todo"}, "subcategory"),
        ({"kind": "fact", "goal": "ship"}, "goal"),
        ({"metadata": {"blob": "x" * 5000}}, "metadata"),
        ({"keywords": [f"k{i}" for i in range(40)]}, "keywords"),
        ({"source": {"record_start": 9, "record_end": 2}}, "source"),
        ({"status": "archived"}, "status"),
    ],
)
def test_it_rejects_invalid_memories_with_field_errors(
    alice_client: APIClient, body: dict[str, Any], field: str
) -> None:
    response = create(alice_client, **body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["details"]
    assert Memory.objects.count() == 0


def test_user_scope_memories_are_private_to_their_owner(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    mine = create(alice_client, kind="user", content="Alice prefers tabs.").json()
    shared = create(alice_client, kind="fact", content="The API is versioned.").json()
    bob_sees = {m["id"] for m in bob_client.get(URL).json()["results"]}
    assert shared["id"] in bob_sees and mine["id"] not in bob_sees
    assert bob_client.get(f"{URL}{mine['id']}/").status_code == 404
    assert mine["owner"] == "alice"


def test_list_filters(alice_client: APIClient, project: Project) -> None:
    old = datetime(2024, 1, 1, tzinfo=UTC)
    MemoryFactory.create(
        project=project,
        kind="fact",
        importance=1,
        content="pytest runs tests",
        created_at=old,
        updated_at=old,
    )
    MemoryFactory.create(
        project=project, kind="lesson", importance=3, content="Never force-push main"
    )
    MemoryFactory.create(
        project=project, kind="project", subcategory="todo", content="Add MCP server"
    )
    MemoryFactory.create(
        project=project, kind="fact", status=Memory.Status.ARCHIVED, content="gone"
    )

    def contents(**params: Any) -> set[str]:
        response = alice_client.get(URL, params)
        assert response.status_code == 200, response.content
        return {m["content"] for m in response.json()["results"]}

    assert contents() == {"pytest runs tests", "Never force-push main", "Add MCP server"}
    assert contents(kind="fact,lesson") == {"pytest runs tests", "Never force-push main"}
    assert contents(status="archived") == {"gone"}
    assert len(contents(status="all")) == 4
    assert contents(q="FORCE-push") == {"Never force-push main"}
    assert contents(importance_min=2) == {"Never force-push main"}
    assert contents(importance=1, kind="fact") == {"pytest runs tests"}
    assert contents(subcategory="todo") == {"Add MCP server"}
    assert contents(created_before="2025-01-01T00:00:00Z") == {"pytest runs tests"}
    cutoff = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    assert "pytest runs tests" not in contents(updated_after=cutoff)
    bad = alice_client.get(URL, {"kind": "fact,bogus", "importance": "x"})
    assert bad.status_code == 400
    assert set(bad.json()["error"]["details"]) == {"kind", "importance"}


def test_list_is_paginated_newest_first_in_constant_queries(
    alice_client: APIClient, project: Project
) -> None:
    base = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(30):
        MemoryFactory.create(
            project=project, content=f"memory {i}", updated_at=base + timedelta(hours=i)
        )
    alice_client.get(URL)  # the token's first use writes last_used_at; measure after it
    with CaptureQueriesContext(connection) as small:
        alice_client.get(URL, {"limit": 2})
    with CaptureQueriesContext(connection) as large:
        page = alice_client.get(URL, {"limit": 10, "offset": 5}).json()
    assert page["count"] == 30
    assert [m["content"] for m in page["results"]] == [f"memory {i}" for i in range(24, 14, -1)]
    assert page["next"] and page["previous"]
    assert len(large.captured_queries) == len(small.captured_queries)  # no N+1


def test_bulk_create_returns_ids_in_input_order(alice_client: APIClient) -> None:
    items = [
        {
            "content": f"fact {i}",
            "kind": "fact",
            "importance": 1 + i % 3,
            "created_at": "2023-05-01T10:00:00Z",
        }
        for i in range(1000)
    ]
    response = alice_client.post(URL + "bulk/", {"items": items}, format="json")
    assert response.status_code == 201, response.content
    ids = response.json()["ids"]
    assert len(ids) == 1000
    by_id = {str(m.public_id): m for m in Memory.objects.all()}
    assert [by_id[i].content for i in ids] == [f"fact {i}" for i in range(1000)]
    assert by_id[ids[0]].created_at == datetime(2023, 5, 1, 10, tzinfo=UTC)
    assert MemoryEvent.objects.filter(verb="created").count() == 1000


def test_bulk_create_is_all_or_nothing(alice_client: APIClient) -> None:
    items = [{"content": "fine", "kind": "fact"}] * 5 + [{"content": "bad", "kind": "nope"}]
    response = alice_client.post(URL + "bulk/", {"items": items}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["items"]["5"]["kind"]
    assert Memory.objects.count() == 0 and MemoryEvent.objects.count() == 0


def test_bulk_create_rejects_model_level_errors_atomically(alice_client: APIClient) -> None:
    items = [
        {"content": "ok", "kind": "fact"},
        {"content": "x", "kind": "fact", "subcategory": "todo"},
    ]
    response = alice_client.post(URL + "bulk/", {"items": items}, format="json")
    assert response.status_code == 400
    assert "1" in response.json()["error"]["details"]["items"]
    assert Memory.objects.count() == 0


def test_bulk_create_limits_the_batch(alice_client: APIClient) -> None:
    items = [{"content": "x", "kind": "fact"}] * 1001
    response = alice_client.post(URL + "bulk/", {"items": items}, format="json")
    assert response.status_code == 400
    assert "1000" in str(response.json()["error"]["details"])
    assert Memory.objects.count() == 0


def test_update_records_only_changed_fields(alice_client: APIClient) -> None:
    memory = create(alice_client, content="Use ruff.", kind="fact").json()
    url = f"{URL}{memory['id']}/"
    response = alice_client.patch(
        url, {"content": "Use ruff and mypy.", "importance": 2, "title": ""}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["content"] == "Use ruff and mypy."
    assert response.json()["content_hash"] != memory["content_hash"]
    history = alice_client.get(url + "history/").json()["results"]
    assert [e["verb"] for e in history] == ["created", "updated"]
    assert history[1]["before"] == {"content": "Use ruff.", "importance": 1}
    assert history[1]["after"] == {"content": "Use ruff and mypy.", "importance": 2}
    assert history[1]["actor"].startswith("alice via token")


def test_status_changes_and_history(alice_client: APIClient, bob_client: APIClient) -> None:
    a = create(alice_client, content="Node 18 is required.", kind="fact").json()
    b = create(alice_client, content="Node 20 is required.", kind="fact").json()
    url = f"{URL}{a['id']}/"
    no_reason = bob_client.post(url + "stale/", {}, format="json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()["error"]["details"]
    stale = bob_client.post(
        url + "stale/", {"reason": "upgraded", "superseded_by": b["id"]}, format="json"
    ).json()
    assert (stale["status"], stale["status_reason"], stale["superseded_by"]) == (
        "stale",
        "upgraded",
        b["id"],
    )
    again = bob_client.post(url + "stale/", {"reason": "again"}, format="json")
    assert again.status_code == 400 and again.json()["error"]["code"] == "invalid_request"
    archived = bob_client.post(url + "archive/", {"reason": "wrong"}, format="json").json()
    assert archived["status"] == "archived"
    restored = alice_client.post(url + "restore/", {}, format="json").json()
    assert (restored["status"], restored["status_reason"], restored["superseded_by"]) == (
        "active",
        "",
        None,
    )
    verbs = [e["verb"] for e in alice_client.get(url + "history/").json()["results"]]
    assert verbs == ["created", "marked_stale", "archived", "restored"]


def test_superseded_by_must_be_visible_in_the_same_project(
    alice_client: APIClient, charlie_client: APIClient
) -> None:
    a = create(alice_client, content="one", kind="fact").json()
    other = charlie_client.post(
        "/api/v1/projects/charlie-lab/memories/", {"content": "c", "kind": "fact"}, format="json"
    ).json()
    response = alice_client.post(
        f"{URL}{a['id']}/archive/", {"superseded_by": other["id"]}, format="json"
    )
    assert response.status_code == 404
    assert Memory.objects.get(public_id=a["id"]).status == "active"


def test_viewer_cannot_write(make_client: Any, project: Project, alice_client: APIClient) -> None:
    from accounts.models import User

    User.objects.create_user("vera")
    alice_client.post(
        "/api/v1/projects/alpha/members/", {"username": "vera", "role": "viewer"}, format="json"
    )
    vera = make_client(User.objects.get(username="vera"))
    assert vera.get(URL).status_code == 200
    response = create(vera)
    assert response.status_code == 403
    assert "member" in response.json()["error"]["message"]


def test_kinds_endpoint_documents_the_taxonomy(alice_client: APIClient) -> None:
    kinds = {k["kind"]: k for k in alice_client.get("/api/v1/memory-kinds/").json()}
    assert set(kinds) == {
        "soul",
        "user",
        "feedback",
        "project",
        "reference",
        "fact",
        "lesson",
        "topic",
        "rule",
    }
    assert "user-preference" in kinds["user"]["aliases"]
    assert kinds["project"]["subcategories"] == [
        "overview",
        "structure",
        "decisions",
        "quotes",
        "ops",
        "todo",
    ]
    assert kinds["topic"]["has_goal"] is True


def test_secrets_never_enter_the_bank(alice_client: APIClient) -> None:
    secret = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
    memory = create(
        alice_client,
        content=f"The deploy token is {secret}",
        title=secret,
        keywords=[secret],
        metadata={"token": secret},
    ).json()
    stored = Memory.objects.get(public_id=memory["id"])
    assert secret not in f"{stored.content}{stored.title}{stored.keywords}{stored.metadata}"
    url = f"{URL}{memory['id']}/"
    alice_client.patch(url, {"content": f"rotated: {secret}"}, format="json")
    stored.refresh_from_db()
    assert secret not in stored.content and "[REDACTED]" in stored.content
