"""What /mcp says besides the memories: memory_search's fixed wording and relative times in the
memories' language (or the one the request asks for), and refusals before the SDK (no token, a
bad one, a hidden project) in the REST API's error envelope, with the REST API's words.

The SDK's client and plain HTTP against gunicorn + uvicorn serving memoryhub.asgi."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from accounts.actors import Actor
from accounts.models import ApiToken, User
from accounts.services import token_create, token_revoke
from memoryhub.memories.models import Memory
from memoryhub.memories.services import MemoryInput, memory_create
from projects.models import Project
from tests.integrations.mcp.conftest import HttpServer, raw_token

pytestmark = pytest.mark.django_db(transaction=True)

CJK = re.compile(r"[\u3400-\u9fff]")
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def remember(user: User, project: Project, content: str, keywords: list[str]) -> Memory:
    """A memory last updated four minutes ago (its line shows its age)."""
    when = timezone.now() - timedelta(minutes=4, seconds=10)
    return memory_create(
        project=project,
        actor=Actor(user=user),
        data=MemoryInput(
            content=content,
            kind="fact",
            keywords=keywords,
            importance=2,
            created_at=when,
            updated_at=when,
        ),
    )


def search(server: HttpServer, token: str, query: str, **headers: str) -> str:
    """memory_search through the SDK's client, with these extra request headers."""

    async def main() -> str:
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}", **headers}, timeout=60
        ) as http:
            transport = streamable_http_client(server.url("/mcp/p/alpha/"), http_client=http)
            async with Client(transport, cache=None) as client:
                result = await client.call_tool("memory_search", {"query": query})
        assert not result.is_error, result.content
        return "\n".join(b.text for b in result.content if isinstance(b, TextContent))

    return anyio.run(main)


def test_search_speaks_english_for_english_memories(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    remember(alice, project, "Deploys go through make release.", ["deploy", "release"])

    text = search(mcp_http_server, raw_token(alice), "deploy release")

    assert "[4 min ago] about: deploy, release" in text
    assert text.startswith("Oldest first.")
    assert not CJK.search(text), text  # it read "[4分钟前]"


def test_search_keeps_meow_memorys_chinese_for_chinese_memories(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    remember(alice, project, "发布一律走 make release，不要手动打包。", ["发布", "打包"])

    text = search(mcp_http_server, raw_token(alice), "发布 打包")

    assert "[4分钟前] 关于：发布, 打包" in text
    assert text.startswith("按时间从旧到新排列。")


def test_the_requests_accept_language_wins_over_the_memories(
    mcp_http_server: HttpServer, alice: User, project: Project
) -> None:
    remember(alice, project, "Deploys go through make release.", ["deploy", "release"])
    token = raw_token(alice)

    chinese = search(mcp_http_server, token, "deploy", **{"Accept-Language": "zh-CN,zh;q=0.9"})
    no_preference = search(mcp_http_server, token, "deploy", **{"Accept-Language": "*"})
    nothing = search(mcp_http_server, token, "payroll", **{"Accept-Language": "zh-CN"})

    assert "[4分钟前] 关于：deploy, release" in chinese
    assert "[4 min ago] about: deploy, release" in no_preference
    assert nothing == "没有匹配的记忆。"


def rest_and_mcp(server: HttpServer, authorization: str | None) -> tuple[Any, Any]:
    """The REST API's and /mcp's answers to the same Authorization header (None: none)."""
    headers = {"Authorization": authorization} if authorization is not None else {}
    rest = httpx.get(server.url("/api/v1/me/"), headers=headers, timeout=30)
    mcp = httpx.post(server.url("/mcp"), json=PING, headers=headers, timeout=30)
    return rest, mcp


def test_auth_failures_say_what_is_wrong_in_the_apis_envelope(
    mcp_http_server: HttpServer, alice: User, bob: User, project: Project
) -> None:
    system = Actor.for_system("test")
    soon, expired = token_create(user=alice, name="soon", actor=system)
    ApiToken.objects.filter(pk=soon.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    withdrawn, revoked = token_create(user=alice, name="withdrawn", actor=system)
    token_revoke(token=withdrawn, actor=Actor(user=alice))
    deactivated = raw_token(bob)
    User.objects.filter(pk=bob.pk).update(is_active=False)
    failures = {
        "missing": None,
        "another scheme": "Basic YWxpY2U6c2VjcmV0",
        "unknown": "Bearer mh_rw_notarealtoken0000000000000000000000",
        "expired": f"Bearer {expired}",
        "revoked": f"Bearer {revoked}",
        "deactivated user": f"Bearer {deactivated}",
    }
    for what, authorization in failures.items():
        rest, mcp = rest_and_mcp(mcp_http_server, authorization)
        assert mcp.status_code == rest.status_code == 401, what
        assert mcp.headers["www-authenticate"] == rest.headers["www-authenticate"], what
        # Word for word what REST says of the same token: no more (expired and revoked
        # tokens are not told apart from unknown ones).
        assert mcp.json() == rest.json(), what
    assert rest_and_mcp(mcp_http_server, None)[1].json()["error"] == {
        "code": "not_authenticated",
        "message": "Authentication credentials were not provided.",
        "details": {},
    }
    assert rest_and_mcp(mcp_http_server, f"Bearer {expired}")[1].json()["error"] == {
        "code": "authentication_failed",
        "message": "Invalid, expired or revoked token.",
        "details": {},
    }


def test_other_refusals_before_the_sdk_are_the_apis_envelope(
    mcp_http_server: HttpServer, alice: User, charlie: User, project: Project
) -> None:
    headers = {"Authorization": f"Bearer {raw_token(charlie)}"}
    hidden = httpx.post(mcp_http_server.url("/mcp/p/alpha/"), json=PING, headers=headers)
    rest = httpx.get(mcp_http_server.url("/api/v1/projects/alpha/"), headers=headers)
    stream = httpx.get(mcp_http_server.url(), headers=headers)

    assert hidden.status_code == rest.status_code == 404
    assert hidden.json() == rest.json()
    assert stream.status_code == 405
    assert stream.json()["error"]["code"] == "method_not_allowed"
