"""NDJSON bodies through the server `make run` starts: gunicorn with uvicorn workers serving
memoryhub.asgi, where Django's WSGI app sits behind a2wsgi. a2wsgi's body answers b"" to
`readline(limit)` until something is buffered, and Django always passes a limit, so code that
read the body line by line saw nothing there (live_server, a WSGI server, never showed it).

transactional_db: the server process only sees what the test committed."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.core.streams import iter_lines
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.reliability.servers import asgi_gunicorn
from tests.worker import database_url_of_test_db

FIXTURES = Path(__file__).parent / "fixtures"
S = "/api/v1/projects/alpha/sessions/"


@pytest.fixture(scope="module")
def asgi_server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The Makefile's `run` server command on a free loopback port and the test database;
    yields its base URL."""
    with django_db_blocker.unblock():
        database_url = database_url_of_test_db()
    # Not inherited: browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"} | {
        "DATABASE_URL": database_url,
        "DATABASE_CONN_MAX_AGE": "0",  # the test database is dropped at the end of the run
        "LLM_PROVIDER": "offline",
    }
    log = tmp_path_factory.mktemp("asgi") / "gunicorn.log"
    # Any answer from /healthz: it serves.
    with asgi_gunicorn(env, log=log, ready=lambda base: bool(httpx.get(base + "/healthz"))) as base:
        yield base


@pytest.fixture
def http(asgi_server: str, alice: User, project: Project) -> Iterator[httpx.Client]:
    """alice's token over real HTTP to the ASGI server."""
    _, raw = token_create(user=alice, name="asgi", actor=Actor.for_system("test"))
    with httpx.Client(
        base_url=asgi_server, headers={"Authorization": f"Bearer {raw}"}, timeout=60
    ) as client:
        yield client


def ndjson(body: bytes) -> dict[str, str]:
    return {"Content-Type": "application/x-ndjson", "Content-Length": str(len(body))}


@pytest.mark.django_db(transaction=True)
def test_a_transcript_push_over_asgi_stores_what_it_does_over_wsgi(
    http: httpx.Client, alice_client: APIClient
) -> None:
    raw = (FIXTURES / "claude_code_session.jsonl").read_bytes()
    for name in ("over-asgi", "over-wsgi"):
        assert http.post(S, json={"external_id": name}).status_code == 201
    push = "transcript/?first_line=1&final=true"

    response = http.post(f"{S}over-asgi/{push}", content=raw, headers=ndjson(raw))
    wsgi = alice_client.post(f"{S}over-wsgi/{push}", raw, content_type="application/x-ndjson")

    assert response.status_code == wsgi.status_code == 201, response.text
    body = response.json()
    assert body["next_line"] == raw.count(b"\n") + 1  # every line was read
    assert body["created"] > 0 and body["format"] == "claude_code"
    assert {k: body[k] for k in ("created", "skipped", "next_line", "held_back", "format")} == {
        k: wsgi.json()[k] for k in ("created", "skipped", "next_line", "held_back", "format")
    }

    def stored(name: str) -> list[tuple[str, Any]]:
        rows = SessionRecord.objects.filter(session__external_id=name).order_by("index")
        return list(rows.values_list("type", "content"))

    assert len(stored("over-asgi")) == body["created"]
    assert stored("over-asgi") == stored("over-wsgi")


@pytest.mark.django_db(transaction=True)
def test_records_sent_as_ndjson_over_asgi_are_all_appended(http: httpx.Client) -> None:
    """Several of the reader's chunks (64 KiB), multi-byte text, blank lines, no final "\\n"."""
    assert http.post(S, json={"external_id": "ndjson"}).status_code == 201
    texts = [f"record {i}: naïve ✓ " + "x" * (i % 700) for i in range(600)]
    lines = [json.dumps({"type": "user", "content": t}, ensure_ascii=False) for t in texts]
    lines[100:100] = ["", "   "]
    body = "\n".join(lines).encode()
    assert len(body) > 3 * 64 * 1024

    response = http.post(f"{S}ndjson/records/", content=body, headers=ndjson(body))

    assert response.status_code == 201, response.text
    assert response.json()["created"] == len(texts)
    session = AgentSession.objects.get(external_id="ndjson")
    stored = SessionRecord.objects.filter(session=session).order_by("index")
    assert [r.content for r in stored] == texts


@pytest.mark.django_db(transaction=True)
def test_a_bad_ndjson_line_over_asgi_is_named(http: httpx.Client) -> None:
    assert http.post(S, json={"external_id": "bad-line"}).status_code == 201
    body = b'{"type": "user", "content": "a"}\n\nnot json\n'

    response = http.post(f"{S}bad-line/records/", content=body, headers=ndjson(body))

    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith("Line 3 is not valid JSON")
    assert SessionRecord.objects.count() == 0


# --- the line reader itself -------------------------------------------------------------------


@given(
    data=st.lists(st.sampled_from([b"\n", b"a", b"bc", b"\xc3\xa9", b"\r\n", b" "])).map(b"".join),
    chunk=st.integers(min_value=1, max_value=9),
)
def test_lines_come_out_as_readline_gives_them(data: bytes, chunk: int) -> None:
    assert list(iter_lines(io.BytesIO(data), chunk)) == io.BytesIO(data).readlines()


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1, /) -> bytes:
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk


def test_the_body_is_read_a_chunk_at_a_time_as_lines_are_taken() -> None:
    stream = CountingStream(b"first\n" + b"y" * 1_000_000 + b"\n")
    lines = iter_lines(stream, 4096)
    assert next(lines) == b"first\n"
    assert stream.bytes_read == 4096
    assert len(next(lines)) == 1_000_001
    assert stream.bytes_read == 1_000_007
    assert list(lines) == []
