"""Two rebuilds, or a rebuild and a clear, sent at once for one project: one runs, the other
is told so (409) — never two at the same time (the project row serialises them)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.pipeline.models import Job
from projects.models import Project


def _at_once(live_server: Any, raw: str, requests: list[tuple[str, dict[str, Any]]]) -> list[int]:
    barrier = threading.Barrier(len(requests))
    statuses: list[int] = [0] * len(requests)

    def send(i: int, path: str, body: dict[str, Any]) -> None:
        with httpx.Client(
            base_url=live_server.url, headers={"Authorization": f"Bearer {raw}"}, timeout=60
        ) as http:
            barrier.wait()
            statuses[i] = http.post(path, json=body).status_code

    threads = [
        threading.Thread(target=send, args=(i, path, body))
        for i, (path, body) in enumerate(requests)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    return statuses


@pytest.mark.django_db(transaction=True)
def test_two_rebuilds_at_once_run_one(live_server: Any, alice: User, project: Project) -> None:
    _, raw = token_create(user=alice, name="race", actor=Actor.for_system("test"))
    rebuild = (f"/api/v1/projects/{project.slug}/bank/rebuild/", {"confirm": project.slug})
    statuses = _at_once(live_server, raw, [rebuild, rebuild])
    assert sorted(statuses) == [202, 409]
    assert Job.objects.filter(project=project, kind=Job.Kind.REBUILD).count() == 1

    # While that rebuild is queued, neither a clear nor another rebuild may start.
    clear = (f"/api/v1/projects/{project.slug}/bank/clear/", {"confirm": project.slug})
    assert _at_once(live_server, raw, [clear, rebuild]) == [409, 409]
