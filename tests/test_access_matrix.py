"""Every endpoint against the three ways access can be refused:
no credentials (401), an outsider (404, indistinguishable from a missing project) and a
read-only token (403 on writes, success on reads)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import ApiToken, User
from memoryhub.memories import artifacts
from memoryhub.memories.models import Memory
from memoryhub.recall import services as recall_services
from memoryhub.sessions.models import AgentSession, SessionRecord, ToolResultDecision
from projects.models import Project
from tests.factories import MemoryFactory

P = "/api/v1/projects/alpha"
M = P + "/memories/{mid}"
SS = P + "/sessions/s1"
MEMORY_BODY = {"content": "The CI runs on PostgreSQL.", "kind": "fact"}
RECALL_FILE = {"path": "synced.md", "content": "---\nname: Synced\n---\n"}
# Reads that use POST for their body (read-only tokens may call them; no audit event).
POST_READS = {P + "/recall/"}

# (method, path, body) of every project-scoped endpoint.
PROJECT_ENDPOINTS: list[tuple[str, str, Any]] = [
    ("get", P + "/", None),
    ("patch", P + "/", {"name": "Renamed"}),
    ("get", P + "/members/", None),
    ("post", P + "/members/", {"username": "dave", "role": "viewer"}),
    ("patch", P + "/members/bob/", {"role": "viewer"}),
    ("delete", P + "/members/bob/", None),
    ("get", P + "/memories/", None),
    ("get", P + "/memories/search/?q=hello", None),
    ("post", P + "/memories/", MEMORY_BODY),
    ("post", P + "/memories/bulk/", {"items": [MEMORY_BODY]}),
    ("get", M + "/", None),
    ("patch", M + "/", {"title": "new title"}),
    ("post", M + "/archive/", {"reason": "obsolete"}),
    ("post", M + "/stale/", {"reason": "outdated"}),
    ("post", M + "/restore/", {}),
    ("post", M + "/approve/", None),
    ("get", M + "/history/", None),
    ("get", P + "/llm/usage/", None),
    ("get", P + "/bank/stats/", None),
    ("get", P + "/bank/diagnose/", None),
    ("post", P + "/bank/enqueue/", None),
    ("post", P + "/bank/clear/", {"confirm": "alpha"}),
    ("post", P + "/bank/rebuild/", {"confirm": "alpha"}),
    ("get", P + "/bank/dream/", None),
    ("post", P + "/bank/dream/", {"session_id": "s1"}),
    ("get", P + "/sessions/", None),
    ("post", P + "/sessions/", {"external_id": "s2"}),
    ("post", P + "/sessions/import/", {"transcript": "x"}),
    ("get", SS + "/", None),
    ("delete", SS + "/", None),
    ("get", SS + "/records/", None),
    ("post", SS + "/records/", [{"type": "user", "content": "hi"}]),
    ("get", SS + "/resume/", None),
    ("get", SS + "/compaction/?context_window=100000", None),
    ("post", SS + "/compact/", {"context_window": 100000}),
    ("post", SS + "/end/", None),
    ("post", SS + "/transcript/?first_line=1", {"type": "summary", "summary": "x"}),
    ("post", SS + "/extract/", None),
    ("get", SS + "/tool-results/big/", None),
    ("get", P + "/injection/", None),
    ("get", P + "/injection/?profile=mewcode&format=text&session_id=s1", None),
    ("get", P + "/panorama/", None),
    ("get", M + "/similar/?session_id=s1", None),
    ("get", P + "/memory/?uri=memory://root", None),
    ("get", P + "/memory/?uri=memory://root/MEMORY.md", None),
    ("get", P + "/artifacts/", None),
    ("get", P + "/artifacts/MEMORY.md", None),
    ("put", P + "/artifacts/skills/deploy/SKILL.md", {"content": "# Deploy"}),
    ("delete", P + "/artifacts/MEMORY.md", None),
    ("get", P + "/instructions/", None),
    ("get", P + "/instructions/files/", None),
    ("get", P + "/instructions/files/MEWCODE.md", None),
    ("put", P + "/instructions/files/docs/style.md", {"content": "Use tabs."}),
    ("delete", P + "/instructions/files/MEWCODE.md", None),
    ("post", P + "/instructions/tree/", {"files": {"MEWCODE.md": "# Alpha v2"}}),
    ("get", P + "/instructions/user/", None),
    ("put", P + "/instructions/user/", {"content": "Short answers, please."}),
    ("delete", P + "/instructions/user/", None),
    ("get", P + "/recall-files/", None),
    ("get", P + "/recall-files/project/notes.md", None),
    ("put", P + "/recall-files/project/notes.md", {"content": "Notes, v2."}),
    ("delete", P + "/recall-files/project/notes.md", None),
    ("get", P + "/recall-files/user/prefs.md", None),
    ("put", P + "/recall-files/user/prefs.md", {"content": "Prefs, v2."}),
    ("delete", P + "/recall-files/user/prefs.md", None),
    ("post", P + "/recall-files/sync/", {"scope": "project", "files": [RECALL_FILE]}),
    ("post", P + "/recall/", {"query": "hello", "session_id": "s1"}),
    ("get", P + "/interchange/", None),
    ("get", P + "/interchange/meow/export/", None),
    ("post", P + "/interchange/mewcode/import/", {"file": "x"}),
]
ACCOUNT_ENDPOINTS: list[tuple[str, str, Any]] = [
    ("get", "/api/v1/me/", None),
    ("get", "/api/v1/projects/", None),
    ("post", "/api/v1/projects/", {"slug": "new-one"}),
    ("get", "/api/v1/tokens/", None),
    ("post", "/api/v1/tokens/", {"name": "ci"}),
    ("post", "/api/v1/tokens/{tid}/revoke/", None),
    ("get", "/api/v1/memory-kinds/", None),
]
ALL_ENDPOINTS = PROJECT_ENDPOINTS + ACCOUNT_ENDPOINTS


def ids(endpoints: list[tuple[str, str, Any]]) -> list[str]:
    return [f"{m.upper()} {p}" for m, p, _ in endpoints]


@pytest.fixture
def memory(project: Project) -> Memory:
    return MemoryFactory.create(project=project, status=Memory.Status.STALE, status_reason="old")


@pytest.fixture(autouse=True)
def transcript(project: Project, alice: User) -> AgentSession:
    """alice's session `s1` with one stored tool output."""
    session = AgentSession.objects.create(project=project, external_id="s1", created_by_user=alice)
    SessionRecord.objects.create(session=session, index=0, type="user", content="hello")
    session.record_count = 1
    session.save()
    ToolResultDecision.objects.create(session=session, tool_use_id="big", artifact="output")
    return session


@pytest.fixture(autouse=True)
def artifact(project: Project) -> None:
    """The project's MEMORY.md, as stage 2 would have written it."""
    artifacts.artifact_put(
        project=project, path="MEMORY.md", content="# Memory", actor=Actor.for_system("test")
    )


@pytest.fixture(autouse=True)
def instruction_and_recall_files(project: Project, alice: User) -> None:
    """A project MEWCODE.md, alice's own instruction file, a project and a user recall file."""
    alice_actor = Actor(user=alice)
    recall_services.instruction_file_put(
        project=project, actor=alice_actor, path="MEWCODE.md", content="# Alpha"
    )
    recall_services.instruction_file_put(
        project=project, actor=alice_actor, path="MEWCODE.md", content="Mine.", owner=alice
    )
    for scope, path in (("project", "notes.md"), ("user", "prefs.md")):
        recall_services.recall_file_put(
            project=project,
            actor=alice_actor,
            scope=scope,
            data=recall_services.RecallFileInput(path=path, content="v1"),
        )


@pytest.fixture
def dave(db: None) -> User:
    return User.objects.create_user("dave")


def call(client: APIClient, method: str, path: str, body: Any, **fmt: Any) -> Any:
    return getattr(client, method)(path.format(**fmt), body, format="json")


@pytest.mark.parametrize(("method", "path", "body"), ALL_ENDPOINTS, ids=ids(ALL_ENDPOINTS))
def test_it_requires_credentials(
    method: str, path: str, body: Any, memory: Memory, alice: User
) -> None:
    token = ApiToken.objects.create(user=alice, name="x", prefix="mh_rw_aaaaaaaa", digest="0" * 64)
    response = call(APIClient(), method, path, body, mid=memory.public_id, tid=token.public_id)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "body"), PROJECT_ENDPOINTS, ids=ids(PROJECT_ENDPOINTS))
def test_it_rejects_outsider_as_not_found(
    method: str, path: str, body: Any, memory: Memory, charlie_client: APIClient, dave: User
) -> None:
    response = call(charlie_client, method, path, body, mid=memory.public_id)
    missing = call(
        charlie_client, method, path.replace("alpha", "no-such-project"), body, mid=memory.public_id
    )
    assert response.status_code == 404
    # The outsider cannot tell alice's project from one that does not exist.
    assert response.json() == missing.json()
    assert Project.objects.get(slug="alpha").name == "Alpha"
    assert Memory.objects.get(pk=memory.pk).status == Memory.Status.STALE


def test_it_hides_other_users_tokens(
    alice: User, charlie_client: APIClient, alice_client: APIClient
) -> None:
    token = ApiToken.objects.filter(user=alice).first()
    assert token is not None
    response = charlie_client.post(f"/api/v1/tokens/{token.public_id}/revoke/")
    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


@pytest.mark.parametrize(("method", "path", "body"), ALL_ENDPOINTS, ids=ids(ALL_ENDPOINTS))
def test_read_only_token_reads_but_never_writes(
    method: str,
    path: str,
    body: Any,
    memory: Memory,
    alice: User,
    alice_ro_client: APIClient,
    dave: User,
) -> None:
    token = ApiToken.objects.filter(user=alice).first()
    assert token is not None
    before = (
        Memory.objects.count(),
        Project.objects.count(),
        ApiToken.objects.count(),
        SessionRecord.objects.count(),
        AgentSession.objects.count(),
    )
    response = call(alice_ro_client, method, path, body, mid=memory.public_id, tid=token.public_id)
    if method == "get" or path in POST_READS:
        assert response.status_code == 200, response.content
    else:
        assert response.status_code == 403, response.content
        assert response.json()["error"]["code"] == "permission_denied"
        assert "read-only" in response.json()["error"]["message"]
    after = (
        Memory.objects.count(),
        Project.objects.count(),
        ApiToken.objects.count(),
        SessionRecord.objects.count(),
        AgentSession.objects.count(),
    )
    assert before == after


# Appended records are their own append-only log (each names its session and position); the
# import needs a file upload and compaction a long session: both are audited in tests/sessions.
# A transcript push appends records too (tests/agent_cli).
WRITE_ENDPOINTS = [
    e
    for e in ALL_ENDPOINTS
    if e[0] != "get"
    and e[1] not in POST_READS
    and not e[1].split("?")[0].endswith(("/records/", "/import/", "/compact/", "/transcript/"))
]


def _event_count() -> int:
    from memoryhub.core.models import AuditEvent
    from memoryhub.memories.models import MemoryEvent

    return AuditEvent.objects.count() + MemoryEvent.objects.count()


@pytest.mark.parametrize(("method", "path", "body"), WRITE_ENDPOINTS, ids=ids(WRITE_ENDPOINTS))
def test_every_successful_write_leaves_an_audit_event(
    method: str,
    path: str,
    body: Any,
    project: Project,
    alice: User,
    alice_client: APIClient,
    dave: User,
) -> None:
    memory = MemoryFactory.create(project=project, status=Memory.Status.STALE, status_reason="old")
    if path.endswith(("/archive/", "/stale/", "/approve/")):
        memory.status = (
            Memory.Status.PROPOSED if path.endswith("/approve/") else Memory.Status.ACTIVE
        )
        memory.save(update_fields=["status"])
    token = ApiToken.objects.filter(user=alice).first()
    assert token is not None
    before = _event_count()
    response = call(alice_client, method, path, body, mid=memory.public_id, tid=token.public_id)
    assert response.status_code in (200, 201, 202, 204), response.content
    assert _event_count() > before


# --- The Hindsight-compatible routes (/v1/default/banks/…), in Hindsight's {"detail"} shape ---
HB = "/v1/default/banks/alpha"
HINDSIGHT_READS: list[tuple[str, str, Any]] = [
    ("get", HB, None),
    ("get", HB + "/profile", None),
    ("get", HB + "/stats", None),
    ("get", HB + "/memories/list", None),
    ("get", HB + "/memories/{mid}", None),
    ("get", HB + "/documents", None),
    ("get", HB + "/documents/s1", None),
    ("get", HB + "/mental-models/mm", None),
    ("get", HB + "/mental-models/mm/history", None),
    ("post", HB + "/reflect", {"query": "hello"}),
]
HINDSIGHT_WRITES: list[tuple[str, str, Any]] = [
    ("patch", HB, {"reflect_mission": "m"}),
    ("post", HB + "/memories", {"items": [{"content": "hi", "document_id": "d1"}]}),
    ("patch", HB + "/memories/{mid}", {"state": "invalidated", "reason": "old"}),
    ("delete", HB + "/documents/s1", None),
    ("post", HB + "/mental-models", {"id": "new", "name": "N", "source_query": "q"}),
    ("post", HB + "/mental-models/mm/refresh", None),
    ("delete", HB + "/mental-models/mm", None),
]
HINDSIGHT_ENDPOINTS = HINDSIGHT_READS + HINDSIGHT_WRITES


@pytest.fixture
def mental_model(project: Project) -> None:
    project.settings = {"hindsight": {"mental_models": {"mm": {"name": "M", "source_query": "q"}}}}
    project.save(update_fields=["settings"])


@pytest.mark.parametrize(
    ("method", "path", "body"), HINDSIGHT_ENDPOINTS, ids=ids(HINDSIGHT_ENDPOINTS)
)
def test_hindsight_routes_require_a_token(
    method: str, path: str, body: Any, memory: Memory, mental_model: None
) -> None:
    response = call(APIClient(), method, path, body, mid=memory.public_id)
    assert response.status_code == 401
    assert set(response.json()) == {"detail"}


@pytest.mark.parametrize(
    ("method", "path", "body"), HINDSIGHT_ENDPOINTS, ids=ids(HINDSIGHT_ENDPOINTS)
)
def test_hindsight_routes_hide_a_bank_from_outsiders(
    method: str,
    path: str,
    body: Any,
    memory: Memory,
    mental_model: None,
    charlie_client: APIClient,
) -> None:
    response = call(charlie_client, method, path, body, mid=memory.public_id)
    missing = call(
        charlie_client, method, path.replace("alpha", "no-such-bank"), body, mid=memory.public_id
    )
    assert response.status_code == 404, response.content
    assert response.json() == missing.json()
    assert Memory.objects.get(pk=memory.pk).status == Memory.Status.STALE
    assert not AgentSession.objects.filter(external_id="d1").exists()


@pytest.mark.parametrize(
    ("method", "path", "body"), HINDSIGHT_ENDPOINTS, ids=ids(HINDSIGHT_ENDPOINTS)
)
def test_hindsight_read_only_tokens_read_but_never_write(
    method: str,
    path: str,
    body: Any,
    memory: Memory,
    mental_model: None,
    alice_ro_client: APIClient,
) -> None:
    before = (Memory.objects.count(), AgentSession.objects.count(), SessionRecord.objects.count())
    response = call(alice_ro_client, method, path, body, mid=memory.public_id)
    if (method, path, body) in HINDSIGHT_READS:
        assert response.status_code == 200, response.content
    else:
        assert response.status_code == 403, response.content
        assert "read-only" in response.json()["detail"]
    assert before == (
        Memory.objects.count(),
        AgentSession.objects.count(),
        SessionRecord.objects.count(),
    )
