"""The MCP server under test, reached with the SDK's own client: over streamable HTTP from a
real gunicorn + uvicorn worker process serving memoryhub.asgi (as `make run` does), and over
stdio from `manage.py mcp_stdio` subprocesses, both on the test database.

Tests here use transactional_db: what a test writes must be committed for the server
processes to see it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from projects.models import Project
from projects.services import project_create
from tests.reliability.servers import asgi_gunicorn
from tests.worker import ROOT, database_url_of_test_db

TOKEN_RATE_LIMIT = 60


def server_env() -> dict[str, str]:
    """The test process's environment, on the test database, with no connection kept
    between requests (the test database is dropped at the end of the run)."""
    # Not inherited: browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process, and the
    # server must keep Django's guard against ORM calls on the event loop.
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return inherited | {
        "DATABASE_URL": database_url_of_test_db(),
        "DATABASE_CONN_MAX_AGE": "0",
        "LLM_PROVIDER": "offline",
        # Low enough for one test to reach it (each test's tokens are fresh), high enough for
        # every other test's calls.
        "API_TOKEN_RATE_LIMIT": f"{TOKEN_RATE_LIMIT}/min",
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class HttpServer:
    base_url: str
    log: Path

    def url(self, path: str = "/mcp") -> str:
        return self.base_url + path


@pytest.fixture(scope="session")
def mcp_http_server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HttpServer]:
    """gunicorn with two uvicorn workers serving memoryhub.asgi on a free loopback port: two
    workers, so a client whose requests land on different ones is covered too."""
    with django_db_blocker.unblock():
        env = server_env()
    log = tmp_path_factory.mktemp("mcp") / "gunicorn.log"

    def ready(base: str) -> bool:
        return httpx.post(base + "/mcp", timeout=5).status_code == 401

    with asgi_gunicorn(env, log=log, ready=ready, workers=2) as base:
        yield HttpServer(base_url=base, log=log)


def over_http[T](
    url: str, token: str, body: Callable[[Client], Awaitable[T]], *, mode: str = "auto"
) -> T:
    """Run `body` with an SDK client connected to `url` with `token`. mode "auto" speaks the
    current protocol (2026-07-28), "legacy" the initialize handshake older agents use."""

    async def main() -> T:
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=60, follow_redirects=True
        ) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode, cache=None) as client:
                return await body(client)

    return anyio.run(main)


def stdio_params(token: str, project: str | None = None) -> StdioServerParameters:
    args = [str(ROOT / "manage.py"), "mcp_stdio", "--token", token]
    if project:
        args += ["--project", project]
    env = {k: v for k, v in server_env().items() if k not in ("PATH", "HOME")}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


def over_stdio[T](
    token: str, body: Callable[[Client], Awaitable[T]], *, project: str | None = None
) -> T:
    """Spawn `manage.py mcp_stdio` and run `body` with an SDK client on its stdin/stdout."""

    async def main() -> T:
        async with Client(stdio_params(token, project), cache=None) as client:
            return await body(client)

    return anyio.run(main)


def stdio_refusal(token: str, project: str | None = None) -> tuple[int, str]:
    """Exit code and stderr of an mcp_stdio that must refuse to start."""
    params = stdio_params(token, project)
    done = subprocess.run(  # noqa: S603 — fixed argv
        [params.command, *params.args],
        cwd=params.cwd,
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr


# --- tokens of the personas (tests/conftest.py: alice owns alpha, bob is a member, charlie is an
# outsider with charlie-lab) ---------------------------------------------------------------------


def raw_token(user: User, *, project: Project | None = None, read_only: bool = False) -> str:
    _, raw = token_create(
        user=user,
        name="mcp-test",
        project=project,
        read_only=read_only,
        actor=Actor.for_system("test"),
    )
    return raw


@pytest.fixture
def beta(alice: User) -> Project:
    """A second project of alice's."""
    return project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
