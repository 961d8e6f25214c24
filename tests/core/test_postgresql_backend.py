"""Our PostgreSQL backend (memoryhub.core.postgresql): a connection that served a request a
moment ago is not pinged again, one that sat idle is, so a server still heals by itself after
PostgreSQL drops its connections."""

from __future__ import annotations

import os
import time

import httpx
import pytest
from django.core.signals import request_finished
from django.db import connections

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.core.postgresql.base import RECENTLY_SERVED_S, DatabaseWrapper
from projects.models import Project
from tests.reliability.servers import gunicorn, proxied_test_database

pytestmark = pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres") is False,
    reason="the backend is PostgreSQL's; CI runs it",
)


@pytest.mark.django_db(transaction=True)
def test_only_a_connection_idle_since_its_last_request_is_pinged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = connections["default"]
    assert isinstance(db, DatabaseWrapper)
    assert db.settings_dict["CONN_HEALTH_CHECKS"] is True
    pings: list[bool] = []
    real_is_usable = db.is_usable

    def counted() -> bool:
        pings.append(real_is_usable())
        return pings[-1]

    monkeypatch.setattr(db, "is_usable", counted)
    db.ensure_connection()

    request_finished.send(sender=None)  # a request ended: Django's cleanup, then ours
    db.close_if_unusable_or_obsolete()  # the next request starts
    with db.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert pings == []

    assert db.served_at is not None
    db.served_at -= RECENTLY_SERVED_S + 0.1  # as if idle since
    db.close_if_unusable_or_obsolete()
    with db.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert pings == [True]


@pytest.mark.django_db(transaction=True)
def test_a_server_idle_while_postgresql_dropped_its_connection_answers_the_next_request(
    alice: User, project: Project
) -> None:
    _, raw = token_create(user=alice, name="idle", actor=Actor.for_system("test"))
    memories = f"/api/v1/projects/{project.slug}/memories/"
    headers = {"Authorization": f"Bearer {raw}"}
    with (
        proxied_test_database() as (proxy, url),
        gunicorn(os.environ | {"DATABASE_URL": url, "DEBUG": "false"}) as base,
        httpx.Client(base_url=base, headers=headers, timeout=30) as http,
    ):
        assert http.get(memories).status_code == 200
        proxy.cut()  # PostgreSQL restarts while the server is idle
        proxy.restore()
        time.sleep(RECENTLY_SERVED_S + 0.2)
        # Without a health check the reused, dead connection would fail this request (503).
        assert http.get(memories).status_code == 200
