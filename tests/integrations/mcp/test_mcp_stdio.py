"""The MCP server over stdio: the SDK's client spawns `manage.py mcp_stdio` on the test
database, as an agent that only launches local servers would."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.memories.services import MemoryInput, memory_create
from memoryhub.recall import injection
from projects.models import Project
from projects.selectors import project_access
from tests.integrations.mcp.conftest import over_stdio, raw_token, stdio_refusal
from tests.integrations.mcp.test_mcp_http import RULE, TOOLS, text

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_serves_tools_resources_and_prompts_over_stdio(alice: User, project: Project) -> None:
    older = memory_create(
        project=project,
        actor=Actor(user=alice),
        data=MemoryInput(
            content="Use pnpm, not npm, in this repository.",
            kind="rule",
            keywords=["pnpm", "npm", "package manager"],
            importance=2,
        ),
    )

    async def body(client: Client) -> Any:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        remembered = await client.call_tool("memory_remember", RULE)
        found = await client.call_tool("memory_search", {"query": "force push to main"})
        resource = await client.read_resource(f"memory://memories/{older.public_id}")
        prompt = await client.get_prompt("injection_meow", {})
        return tools, remembered, found, resource, prompt

    tools, remembered, found, resource, prompt = over_stdio(raw_token(alice), body, project="alpha")
    assert tools == TOOLS
    assert not remembered.is_error, text(remembered)
    memory_id = remembered.structured_content["memory"]["id"]
    assert [r["id"] for r in found.structured_content["results"]] == [memory_id]
    memory = Memory.objects.get(public_id=memory_id)
    assert memory.project == project and memory.created_by_token is not None
    assert MemoryEvent.objects.filter(memory=memory, verb="created").count() == 1
    assert json.loads(resource.contents[0].text)["content"] == older.content
    # The payload of the bank as the prompt saw it: both rules, the one just remembered too.
    access = project_access(slug="alpha", actor=Actor(user=alice))
    expected_prompt = injection.build_payload(access=access, profile=injection.Profile.MEOW).text
    assert prompt.messages[0].content.text == expected_prompt
    assert "Use pnpm, not npm" in expected_prompt and "Never force-push" in expected_prompt


def test_a_read_only_token_cannot_remember_over_stdio(alice: User, project: Project) -> None:
    async def body(client: Client) -> Any:
        remember = await client.call_tool("memory_remember", RULE)
        overview = await client.call_tool("memory_project", {})
        return remember, overview

    remember, overview = over_stdio(raw_token(alice, read_only=True), body, project="alpha")
    assert remember.is_error and "read-only" in text(remember)
    assert not Memory.objects.exists()
    assert not overview.is_error and "Alpha" in text(overview)


def test_an_outsider_sees_nothing_over_stdio(
    alice: User, charlie: User, project: Project, charlies_project: Project
) -> None:
    memory_create(
        project=project,
        actor=Actor(user=alice),
        data=MemoryInput(content="The payroll export runs on the 25th.", kind="fact"),
    )
    token = raw_token(charlie)
    hidden = stdio_refusal(token, "alpha")
    missing = stdio_refusal(token, "no-such")
    assert hidden[0] != 0 and "Project 'alpha' not found." in hidden[1]
    assert missing[0] != 0 and hidden[1].replace("alpha", "X") == missing[1].replace("no-such", "X")

    async def body(client: Client) -> Any:
        search = await client.call_tool("memory_search", {"query": "payroll", "project": "alpha"})
        anchor = await client.call_tool("memory_project", {"project": "alpha"})
        return search, anchor

    search, anchor = over_stdio(token, body)
    for result in (search, anchor):
        assert result.is_error and "Project not found." in text(result)
        assert "payroll" not in text(result)


def test_a_token_restricted_to_another_project_is_refused_over_stdio(
    alice: User, project: Project, beta: Project
) -> None:
    code, stderr = stdio_refusal(raw_token(alice, project=beta), "alpha")
    assert code != 0 and "Project 'alpha' not found." in stderr
    code, stderr = stdio_refusal("mh_rw_not-a-real-token")
    assert code != 0 and "valid MemoryHub token" in stderr
