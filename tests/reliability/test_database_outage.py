"""PostgreSQL goes away and comes back: requests fail fast with 503 in the envelope, /healthz
says so, and the same server process recovers without a restart."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from projects.models import Project
from tests.reliability.servers import gunicorn, proxied_test_database

pytestmark = pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres") is False,
    reason="needs PostgreSQL (a network database to cut); CI runs it",
)


@pytest.mark.django_db(transaction=True)
def test_requests_fail_fast_during_an_outage_and_recover(alice: User, project: Project) -> None:
    _, raw = token_create(user=alice, name="outage", actor=Actor.for_system("test"))
    headers = {"Authorization": f"Bearer {raw}"}
    memories = f"/api/v1/projects/{project.slug}/memories/"
    with (
        proxied_test_database() as (proxy, url),
        gunicorn(os.environ | {"DATABASE_URL": url, "DEBUG": "false"}) as base,
        httpx.Client(base_url=base, headers=headers, timeout=30) as http,
    ):
        assert http.get(memories).status_code == 200

        proxy.cut()
        # Within the client's timeout: a hanging request would raise here instead.
        during: list[Any] = [http.get(memories, timeout=15) for _ in range(3)]
        for response in during:
            assert response.status_code == 503
            assert response.json()["error"]["code"] == "database_unavailable"
            assert response.headers["Retry-After"] == "5"
        write = http.post(memories, json={"kind": "fact", "content": "written in the outage"})
        assert write.status_code == 503
        health = http.get("/healthz")
        assert health.status_code == 503
        assert health.json()["database"]["ok"] is False
        # The error's kind only: its text names hosts and ports, for the log, not for anyone.
        assert health.json()["database"]["error"] == "OperationalError", health.text

        proxy.restore()
        assert http.get(memories).status_code == 200  # the same process, reconnected
        assert http.get("/healthz").json()["database"]["ok"] is True
        created = http.post(memories, json={"kind": "fact", "content": "written after"})
        assert created.status_code == 201
