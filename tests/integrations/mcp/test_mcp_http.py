"""The MCP server over streamable HTTP: the SDK's client against gunicorn + uvicorn serving
memoryhub.asgi on the test database."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.memories.services import MemoryInput, memory_create
from memoryhub.pipeline.models import Job
from memoryhub.recall import injection
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from projects.selectors import project_access
from tests.integrations.mcp.conftest import TOKEN_RATE_LIMIT, HttpServer, over_http, raw_token

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "memory_remember",
    "memory_search",
    "memory_read",
    "memory_update",
    "memory_project",
    "memory_find_similar",
    "memory_dream",
    "session_append",
    "session_resume",
}
RULE = {
    "content": "Never force-push to main; open a pull request instead.",
    "keywords": ["git", "force-push", "main", "pull request"],
    "importance": 3,
    "kind": "rule",
}


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def stored(
    user: User, project: Project, content: str, kind: str = "fact", importance: int = 1
) -> Memory:
    return memory_create(
        project=project,
        actor=Actor(user=user),
        data=MemoryInput(
            content=content,
            kind=kind,
            keywords=content.lower().split()[:8],
            importance=importance,
        ),
    )


def test_it_lists_the_tools_with_descriptions_and_schemas(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    token = raw_token(alice)

    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in over_http(mcp_http_server.url(), token, body)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        assert "project" in tool.input_schema["properties"], tool.name
    remember = tools["memory_remember"].input_schema
    assert set(remember["required"]) == {"content", "keywords", "importance"}
    assert remember["properties"]["keywords"]["minItems"] == 1
    assert tools["memory_search"].annotations.read_only_hint is True
    assert tools["memory_remember"].annotations.read_only_hint is False


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_it_remembers_then_searches(
    mcp_http_server: HttpServer, alice: User, project: Project, mode: str
) -> None:
    token = raw_token(alice)

    async def body(client: Client) -> Any:
        first = await client.call_tool("memory_remember", RULE)
        again = await client.call_tool("memory_remember", RULE | {"importance": 4})
        found = await client.call_tool("memory_search", {"query": "may I force push to main?"})
        return first, again, found

    first, again, found = over_http(mcp_http_server.url("/mcp/p/alpha/"), token, body, mode=mode)
    assert not first.is_error, text(first)
    assert first.structured_content["merged"] is False
    memory_id = first.structured_content["memory"]["id"]
    # The same memory again merges into it (memory_remember), keeping the higher importance.
    assert again.structured_content["merged"] is True
    assert again.structured_content["memory"]["id"] == memory_id
    assert not found.is_error, text(found)
    results = found.structured_content["results"]
    assert [r["id"] for r in results] == [memory_id]
    assert memory_id in text(found) and "force-push" in text(found)
    # Stored like any write: by alice's token, with its audit trail.
    memory = Memory.objects.get(public_id=memory_id)
    assert (memory.project.slug, memory.importance, memory.created_via) == ("alpha", 4, "token")
    assert memory.created_by_token is not None and memory.created_by_token.user == alice
    verbs = list(MemoryEvent.objects.filter(memory=memory).values_list("verb", flat=True))
    assert verbs == ["created", "merged"]


def test_it_redacts_secrets_before_storing(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

    async def body(client: Client) -> Any:
        return await client.call_tool(
            "memory_remember",
            {
                "content": f"The CI bot pushes with the token {secret} from the vault.",
                "keywords": ["ci", "bot", "token", "vault"],
                "importance": 2,
                "project": "alpha",
            },
        )

    result = over_http(mcp_http_server.url(), raw_token(alice), body)
    assert not result.is_error, text(result)
    memory = Memory.objects.get(public_id=result.structured_content["memory"]["id"])
    assert secret not in memory.content and "[REDACTED]" in memory.content
    assert secret not in text(result)


def test_it_reads_memories_and_artifacts_as_resources(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    memory = stored(alice, project, "The staging database is restored every Sunday at 02:00.")

    async def body(client: Client) -> Any:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        read = await client.read_resource(f"memory://memories/{memory.public_id}")
        root = await client.read_resource("memory://root")
        return listed, templates, read, root

    listed, templates, read, root = over_http(
        mcp_http_server.url("/mcp/p/alpha"), raw_token(alice), body
    )
    assert f"memory://memories/{memory.public_id}" in {str(r.uri) for r in listed}
    assert "memory://root" in {str(r.uri) for r in listed}
    assert {t.uri_template for t in templates} >= {
        "memory://memories/{memory_id}{?project}",
        "memory://root/{+path}{?project}",
    }
    data = json.loads(read.contents[0].text)
    assert data["id"] == str(memory.public_id)
    assert data["content"] == memory.content
    assert "memory://root of alpha" in root.contents[0].text

    # An unrestricted token on /mcp names the project in the URI instead.
    async def by_query(client: Client) -> Any:
        return await client.read_resource(f"memory://memories/{memory.public_id}?project=alpha")

    again = over_http(mcp_http_server.url(), raw_token(alice), by_query)
    assert json.loads(again.contents[0].text)["id"] == str(memory.public_id)


def test_it_serves_the_injection_payload_as_a_prompt_per_profile(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    rule = "Always run the migrations check before merging."
    stored(alice, project, rule, kind="rule", importance=2)  # meow shows rules of importance ≥ 2
    access = project_access(slug="alpha", actor=Actor(user=alice))
    expected = injection.build_payload(access=access, profile=injection.Profile.MEOW).text

    async def body(client: Client) -> Any:
        prompts = (await client.list_prompts()).prompts
        meow = await client.get_prompt("injection_meow", {})
        return prompts, meow

    prompts, meow = over_http(mcp_http_server.url("/mcp/p/alpha/"), raw_token(alice), body)
    assert {p.name for p in prompts} == {
        "injection_mewcode",
        "injection_omp",
        "injection_meow",
        "injection_default",
    }
    assert meow.messages[0].role == "user"
    assert meow.messages[0].content.text == expected
    assert "Always run the migrations check" in expected


def test_a_read_only_token_cannot_remember(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    stored(alice, project, "Releases are cut from the release branch on Thursdays.")

    async def body(client: Client) -> Any:
        remember = await client.call_tool("memory_remember", RULE)
        search = await client.call_tool("memory_search", {"query": "release branch"})
        return remember, search

    remember, search = over_http(
        mcp_http_server.url("/mcp/p/alpha/"), raw_token(alice, read_only=True), body
    )
    assert remember.is_error and "read-only" in text(remember)
    assert not Memory.objects.filter(content=RULE["content"]).exists()
    assert not search.is_error and len(search.structured_content["results"]) == 1


def test_an_outsider_sees_nothing(
    mcp_http_server: HttpServer,
    alice: User,
    charlie: User,
    project: Project,
    charlies_project: Project,
) -> None:
    memory = stored(alice, project, "The payroll export runs on the 25th of each month.")
    token = raw_token(charlie)
    # Pinning a project in the URL: alpha answers exactly like a project that does not exist.
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    hidden = httpx.post(mcp_http_server.url("/mcp/p/alpha/"), headers=headers, json=ping)
    missing = httpx.post(mcp_http_server.url("/mcp/p/no-such/"), headers=headers, json=ping)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()

    async def body(client: Client) -> Any:
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("memory_search", {"query": "payroll export", "project": "alpha"}),
            ("memory_read", {"id": str(memory.public_id), "project": "alpha"}),
            ("memory_project", {"project": "alpha"}),
            ("memory_remember", RULE | {"project": "alpha"}),
            ("memory_search", {"query": "payroll export", "project": "no-such"}),
        ]
        calls = [await client.call_tool(name, args) for name, args in attempts]
        listed = (await client.list_resources()).resources
        try:
            await client.read_resource(f"memory://memories/{memory.public_id}?project=alpha")
            read_error = ""
        except MCPError as exc:
            read_error = str(exc)
        try:
            await client.get_prompt("injection_default", {"project": "alpha"})
            prompt_error = ""
        except MCPError as exc:
            prompt_error = str(exc)
        own = await client.call_tool("memory_search", {"query": "payroll export"})
        return calls, listed, read_error, prompt_error, own

    calls, listed, read_error, prompt_error, own = over_http(mcp_http_server.url(), token, body)
    messages = {text(result) for result in calls}
    assert len(calls) == 5 and all(result.is_error for result in calls)
    # One answer for all of them, the same as for a missing project: nothing to tell apart.
    assert len({m.split(": ", 1)[1] for m in messages}) == 1, messages
    assert all("Project not found." in m and "payroll" not in m for m in messages)
    assert read_error == prompt_error == "Project not found."
    assert listed == []  # no project pinned: nothing listed
    # His own connection names no project: he is told which ones he has, alpha not among them.
    assert own.is_error and "charlie-lab" in text(own) and "alpha" not in text(own)


def test_a_token_restricted_to_another_project_is_refused(
    mcp_http_server: HttpServer, alice: User, project: Project, beta: Project
) -> None:
    stored(alice, project, "The alpha deploy needs the VPN.")
    stored(alice, beta, "The beta deploy needs the bastion host.")
    token = raw_token(alice, project=beta)
    refused = httpx.post(
        mcp_http_server.url("/mcp/p/alpha/"),
        headers={"Authorization": f"Bearer {token}"},
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    assert refused.status_code == 404

    async def body(client: Client) -> Any:
        elsewhere = await client.call_tool("memory_search", {"query": "deploy", "project": "alpha"})
        own = await client.call_tool("memory_search", {"query": "deploy"})
        return elsewhere, own

    elsewhere, own = over_http(mcp_http_server.url(), token, body)
    assert elsewhere.is_error and "Project not found." in text(elsewhere)
    # Without a project argument the token acts in its own project.
    assert not own.is_error
    assert [r["content"] for r in own.structured_content["results"]] == [
        "The beta deploy needs the bastion host."
    ]


def test_it_answers_401_without_a_valid_token_and_400_for_a_foreign_host(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    missing = httpx.post(mcp_http_server.url(), json=ping)
    wrong = httpx.post(
        mcp_http_server.url(), json=ping, headers={"Authorization": "Bearer mh_rw_nope"}
    )
    for response in (missing, wrong):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
    # No server-to-client stream on GET (stateless): 405 at once, nothing held open.
    stream = httpx.get(
        mcp_http_server.url(),
        headers={"Authorization": f"Bearer {raw_token(alice)}", "Accept": "text/event-stream"},
        timeout=10,
    )
    assert stream.status_code == 405 and stream.headers["allow"] == "POST"
    foreign = httpx.post(
        mcp_http_server.url(),
        json=ping,
        headers={"Authorization": f"Bearer {raw_token(alice)}", "Host": "evil.example"},
    )
    assert foreign.status_code == 400
    # Django still serves everything else from the same process.
    assert httpx.get(mcp_http_server.url("/healthz")).status_code in (200, 503)
    api = httpx.get(
        mcp_http_server.url("/api/v1/projects/alpha/"),
        headers={"Authorization": f"Bearer {raw_token(alice)}"},
    )
    assert api.status_code == 200 and api.json()["slug"] == "alpha"


def test_it_keeps_a_session_transcript_and_redacts_it(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    messages = [
        {"role": "user", "content": f"Deploy with key {secret} please"},
        {"role": "assistant", "content": "Deployed to staging."},
    ]

    async def body(client: Client) -> Any:
        first = await client.call_tool(
            "session_append", {"session_id": "session_20261201_090000_ab12", "messages": messages}
        )
        bad = await client.call_tool(
            "session_append",
            {"session_id": "session_20261201_090000_ab12", "records": [{"type": "nonsense"}]},
        )
        resumed = await client.call_tool(
            "session_resume", {"session_id": "session_20261201_090000_ab12"}
        )
        return first, bad, resumed

    first, bad, resumed = over_http(mcp_http_server.url("/mcp/p/alpha/"), raw_token(alice), body)
    assert not first.is_error, text(first)
    assert first.structured_content["session_created"] is True
    assert first.structured_content["created"] == 2
    assert bad.is_error and "records[0]" in text(bad)
    session = AgentSession.objects.get(external_id="session_20261201_090000_ab12")
    assert session.record_count == 2 and session.redaction_count == 1
    replay = resumed.structured_content["messages"]
    assert [m["role"] for m in replay] == ["user", "assistant"]
    assert secret not in json.dumps(replay) and "[REDACTED]" in replay[0]["content"]


def test_it_updates_finds_similar_and_shows_the_project(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    old = stored(alice, project, "The frontend builds with webpack and babel.", kind="project")
    twin = stored(alice, project, "The frontend builds with webpack and esbuild.", kind="project")

    async def body(client: Client) -> Any:
        similar = await client.call_tool("memory_find_similar", {"id": str(old.public_id)})
        update = await client.call_tool(
            "memory_update",
            {
                "id": str(old.public_id),
                "status": "archived",
                "reason": "replaced",
                "superseded_by": str(twin.public_id),
                "importance": 2,
            },
        )
        stale_without_reason = await client.call_tool(
            "memory_update", {"id": str(twin.public_id), "status": "stale"}
        )
        bad_kind = await client.call_tool("memory_remember", RULE | {"kind": "bogus"})
        overview = await client.call_tool("memory_project", {})
        return similar, update, stale_without_reason, bad_kind, overview

    similar, update, stale, bad_kind, overview = over_http(
        mcp_http_server.url("/mcp/p/alpha/"), raw_token(alice), body
    )
    assert similar.structured_content["results"][0]["id"] == str(twin.public_id)
    assert 0 < similar.structured_content["results"][0]["score"] <= 1
    assert not update.is_error, text(update)
    old.refresh_from_db()
    assert (old.status, old.importance, old.superseded_by_id) == ("archived", 2, twin.pk)
    assert stale.is_error and "reason" in text(stale)
    twin.refresh_from_db()
    assert twin.status == "active"  # refused as a whole
    assert bad_kind.is_error and "kind" in text(bad_kind) and "Traceback" not in text(bad_kind)
    assert "[Project: Alpha]" in text(overview) and "esbuild" in text(overview)  # English bank
    assert "babel" not in text(overview)  # archived


def test_only_maintainers_queue_a_dream(
    mcp_http_server: HttpServer, alice: User, bob: User, project: Project
) -> None:
    AgentSession.objects.create(project=project, external_id="s1", created_by_user=alice)

    async def body(client: Client) -> Any:
        return await client.call_tool("memory_dream", {"session_id": "s1"})

    refused = over_http(mcp_http_server.url("/mcp/p/alpha/"), raw_token(bob), body)
    assert refused.is_error and "maintainer" in text(refused)
    assert not Job.objects.filter(kind=Job.Kind.DREAM).exists()
    queued = over_http(mcp_http_server.url("/mcp/p/alpha/"), raw_token(alice), body)
    assert not queued.is_error, text(queued)
    job = Job.objects.get(kind=Job.Kind.DREAM)
    assert queued.structured_content["job"] == job.pk
    assert job.detail["requested"]["by"].startswith("alice via token")


def test_mcp_and_rest_share_the_tokens_rate_limit(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    headers = {
        "Authorization": f"Bearer {raw_token(alice)}",
        "Accept": "application/json, text/event-stream",
    }
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with httpx.Client(base_url=mcp_http_server.base_url, headers=headers) as http:
        statuses = [http.post("/mcp/p/alpha/", json=ping).status_code for _ in range(20)]
        statuses += [
            http.get("/api/v1/projects/alpha/").status_code for _ in range(TOKEN_RATE_LIMIT - 20)
        ]
        over = http.post("/mcp/p/alpha/", json=ping)
        rest_over = http.get("/api/v1/projects/alpha/")
    assert 429 not in statuses
    assert over.status_code == 429 and int(over.headers["retry-after"]) > 0
    assert rest_over.status_code == 429


def test_another_persons_session_takes_no_words_and_marks_nothing(
    mcp_http_server: HttpServer, alice: User, bob: User, project: Project
) -> None:
    sid = "session_20261202_100000_cd34"
    mine = [{"role": "user", "content": "I prefer tabs."}]
    theirs = [{"role": "user", "content": "I prefer zebra themes."}]

    async def alice_body(client: Client) -> Any:
        return await client.call_tool("session_append", {"session_id": sid, "messages": mine})

    async def bob_body(client: Client) -> Any:
        append = await client.call_tool("session_append", {"session_id": sid, "messages": theirs})
        search = await client.call_tool("memory_search", {"query": "tabs", "session_id": sid})
        cite = await client.call_tool(
            "memory_remember",
            {
                "content": "Zebra themes everywhere.",
                "keywords": ["zebra"],
                "importance": 2,
                "session_id": sid,
            },
        )
        return append, search, cite

    first = over_http(mcp_http_server.url("/mcp/p/alpha/"), raw_token(alice), alice_body)
    assert not first.is_error, text(first)
    append, search, cite = over_http(mcp_http_server.url("/mcp/p/alpha/"), raw_token(bob), bob_body)
    assert append.is_error and "another person" in text(append)
    assert search.is_error and "another person" in text(search)
    # Nor is it a source bob can cite (it would lend his memory alice's session and tags).
    assert cite.is_error and "another person" in text(cite)
    assert not Memory.objects.filter(content__contains="Zebra").exists()
    session = AgentSession.objects.get(external_id=sid)
    assert session.record_count == 1
