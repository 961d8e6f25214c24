"""The permission matrix of the MCP HTTP endpoint: every tool × the ten callers of
test_permission_matrix.py, each tool's expected outcome declared once in TOOLS below.

Real HTTP against gunicorn + uvicorn serving memoryhub.asgi (tests/integrations/mcp's server):
plain JSON-RPC `tools/call` on /mcp (stateless streamable HTTP, JSON answers), naming the
project in the call's `project` argument, so every refusal is the tool's own. The tool list is
read with the official `mcp` SDK client, and a tool missing from TOOLS fails the test.

Outcomes: OK (the tool answered without error), DENIED (a tool error naming the role or the
read-only token), HIDDEN (a tool error byte-identical to the same call on a project that does
not exist), UNAUTH (HTTP 401 with WWW-Authenticate: Bearer). As for REST: a refused call writes
nothing, and a successful write leaves an audit (or memory) event; bob's private memory appears
in no one else's answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.db import connection
from django.utils import timezone
from mcp import Client

from accounts.actors import Actor
from accounts.models import ApiToken
from accounts.services import token_create
from memoryhub.core.models import AuditEvent
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project, ProjectMembership, Role
from projects.selectors import project_access
from projects.services import membership_add, project_create
from tests.factories import MemoryFactory, UserFactory
from tests.integrations.mcp.conftest import HttpServer, over_http, raw_token

pytestmark = pytest.mark.django_db(transaction=True)

OK, DENIED, HIDDEN, UNAUTH = "ok", "denied", "hidden", "unauth"
PEOPLE = ["owner", "maintainer", "member", "viewer", "outsider"]
TOKENS = ["read_only_token", "other_project_token", "revoked_token", "expired_token"]
CALLERS = [*PEOPLE, *TOKENS, "anonymous"]
RANK = {"viewer": 1, "member": 2, "maintainer": 3, "owner": 4}
MISSING = "no-such-project"
PRIVATE_MARKER = "quuxberry"  # only in bob's private memory


@dataclass(frozen=True)
class Tool:
    """The lowest role that may call the tool, whether it writes, and its arguments ("{…}" are
    filled from the world; `{caller}` keeps callers' writes apart)."""

    role: str
    write: bool
    arguments: dict[str, Any] = field(default_factory=dict)


REMEMBER = {
    "content": "Release builds run `make release` from a clean checkout ({caller}).",
    "keywords": ["release", "make", "checkout", "build"],
    "importance": 2,
}

HI = {"role": "user", "content": "hi"}

TOOLS: dict[str, Tool] = {
    "memory_remember": Tool("member", True, REMEMBER),
    "memory_search": Tool("viewer", False, {"query": "postgresql deploy"}),
    "memory_read": Tool("viewer", False, {"id": "{memory}"}),
    "memory_update": Tool("member", True, {"id": "{memory}", "title": "Deploy ({caller})"}),
    "memory_project": Tool("viewer", False),
    "memory_find_similar": Tool("viewer", False, {"id": "{memory}"}),
    # Maintainers only, as in the REST API (POST …/bank/dream/).
    "memory_dream": Tool("maintainer", True, {"session_id": "s1"}),
    # A session of the caller's own (writing to someone else's takes a maintainer).
    "session_append": Tool("member", True, {"session_id": "own-{caller}", "messages": [HI]}),
    "session_resume": Tool("viewer", False, {"session_id": "s1"}),
}


def expected(tool: Tool, caller: str) -> str:
    if caller in ("anonymous", "revoked_token", "expired_token"):
        return UNAUTH
    if caller == "read_only_token" and tool.write:
        return DENIED
    if caller in ("outsider", "other_project_token"):
        return HIDDEN
    role = caller if caller in RANK else "owner"  # the read-only token is the owner's
    return OK if RANK[role] >= RANK[tool.role] else DENIED


# --- the world ---------------------------------------------------------------------------------


@dataclass
class World:
    tokens: dict[str, str]  # caller → raw token ("" for nobody)
    values: dict[str, str]


def build_world() -> World:
    system = Actor.for_system("test")
    users = {
        name: UserFactory.create(username=username)
        for name, username in [
            ("owner", "alice"),
            ("maintainer", "mia"),
            ("member", "bob"),
            ("viewer", "vic"),
            ("outsider", "charlie"),
        ]
    }
    alice = users["owner"]
    project = project_create(slug="alpha", name="Alpha", owner=alice, actor=system)
    access = project_access(slug="alpha", actor=Actor(user=alice))
    for name, role in [
        ("maintainer", Role.MAINTAINER),
        ("member", Role.MEMBER),
        ("viewer", Role.VIEWER),
    ]:
        membership_add(access=access, user=users[name], role=role)
    project_create(slug="charlie-lab", owner=users["outsider"], actor=system)
    beta = project_create(slug="beta", owner=alice, actor=system)
    tokens = {name: raw_token(user) for name, user in users.items()}
    tokens["read_only_token"] = raw_token(alice, read_only=True)
    tokens["other_project_token"] = raw_token(alice, project=beta)
    for name, change in [
        ("revoked_token", {"revoked_at": timezone.now()}),
        ("expired_token", {"expires_at": timezone.now() - timedelta(days=1)}),
    ]:
        made, tokens[name] = token_create(user=alice, name="matrix", actor=system)
        ApiToken.objects.filter(pk=made.pk).update(**change)
    tokens["anonymous"] = ""
    memory = MemoryFactory.create(
        project=project, content="Deploy to PostgreSQL with make deploy.", keywords=["deploy"]
    )
    MemoryFactory.create(
        project=project,
        scope=Scope.USER,
        owner=users["member"],
        title=f"bob's {PRIVATE_MARKER} note",
        content=f"Only bob knows the {PRIVATE_MARKER} deploy trick for postgresql.",
        keywords=[PRIVATE_MARKER, "deploy", "postgresql"],
    )
    session = AgentSession.objects.create(project=project, external_id="s1", created_by_user=alice)
    SessionRecord.objects.create(session=session, index=0, type="user", content="hello")
    session.record_count = 1
    session.save()
    return World(tokens=tokens, values={"memory": str(memory.public_id)})


# --- one cell ----------------------------------------------------------------------------------

_COUNTED = [
    m._meta.db_table
    for m in (Memory, AgentSession, SessionRecord, Project, ProjectMembership, ApiToken, Job)
]
_EVENTS = [AuditEvent._meta.db_table, MemoryEvent._meta.db_table]


def _counts() -> tuple[int, ...]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in _COUNTED + _EVENTS)
        )
        row = cursor.fetchone()
    return tuple(row)


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**values)
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value


@dataclass
class Answer:
    status: int
    body: bytes
    headers: httpx.Headers
    rows_written: list[str]
    events_written: int

    @property
    def result(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)["result"]
        return data

    @property
    def text(self) -> str:
        return "\n".join(block.get("text", "") for block in self.result["content"])


def call_tool(base: str, token: str, name: str, arguments: dict[str, Any]) -> Answer:
    before = _counts()
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    response = httpx.post(f"{base}/mcp", json=request, headers=headers, timeout=60)
    after = _counts()
    split = len(_COUNTED)
    rows = [t for t, b, a in zip(_COUNTED, before[:split], after[:split], strict=True) if a != b]
    return Answer(
        status=response.status_code,
        body=response.content,
        headers=response.headers,
        rows_written=rows,
        events_written=sum(after[split:]) - sum(before[split:]),
    )


def outcome(answer: Answer, hidden_twin: Callable[[], Answer]) -> str:
    if answer.status == 401:
        return UNAUTH
    assert answer.status == 200, answer.body
    if not answer.result.get("isError"):
        return OK
    text = answer.text
    if "read-only" in text or "role or higher" in text:
        return DENIED
    twin = hidden_twin()
    if twin.body.replace(MISSING.encode(), b"alpha") == answer.body:
        return HIDDEN
    return f"error: {text[:200]}"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_tool(name: str, mcp_http_server: HttpServer) -> None:
    world = build_world()
    tool = TOOLS[name]
    wrong = []
    for caller in CALLERS:
        values = world.values | {"caller": caller}
        arguments = _fill(tool.arguments, values) | {"project": "alpha"}
        token = world.tokens[caller]
        answer = call_tool(mcp_http_server.base_url, token, name, arguments)

        def twin(token: str = token, arguments: dict[str, Any] = arguments) -> Answer:
            return call_tool(
                mcp_http_server.base_url, token, name, arguments | {"project": MISSING}
            )

        want, got = expected(tool, caller), outcome(answer, twin)
        if got != want:
            wrong.append(f"{caller}: expected {want}, got {got}")
        if got == UNAUTH and not answer.headers.get("www-authenticate", "").startswith("Bearer"):
            wrong.append(f"{caller}: 401 without WWW-Authenticate: Bearer")
        if got != OK and (answer.rows_written or answer.events_written):
            wrong.append(f"{caller}: refused yet wrote {answer.rows_written}")
        if got == OK and tool.write and answer.events_written < 1:
            wrong.append(f"{caller}: a successful write left no audit event")
        if caller != "member" and PRIVATE_MARKER.encode() in answer.body:
            wrong.append(f"{caller}: the answer shows bob's private memory")
    assert wrong == [], f"{name}:\n" + "\n".join(wrong)


def test_every_tool_is_in_the_table(mcp_http_server: HttpServer) -> None:
    world = build_world()

    async def body(client: Client) -> list[str]:
        return [tool.name for tool in (await client.list_tools()).tools]

    listed = over_http(mcp_http_server.url(), world.tokens["owner"], body)
    assert sorted(listed) == sorted(TOOLS), "tools missing from (or extra in) TOOLS"


def test_a_project_in_the_url_hides_like_a_missing_one(mcp_http_server: HttpServer) -> None:
    """/mcp/p/<slug>/ pins the connection: an outsider's answer is the missing project's."""
    world = build_world()
    headers = {
        "Authorization": f"Bearer {world.tokens['outsider']}",
        "Accept": "application/json, text/event-stream",
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answers = [
        httpx.post(f"{mcp_http_server.base_url}/mcp/p/{slug}/", json=request, headers=headers)
        for slug in ("alpha", MISSING)
    ]
    assert answers[0].status_code == answers[1].status_code == 404
    assert answers[0].content == answers[1].content
