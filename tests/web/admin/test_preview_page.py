"""Injection preview page: byte-for-byte payload, explained scores equal to the ranking's,
previewing for a member (maintainers only, audited), htmx."""

from __future__ import annotations

import html as htmllib
import re
from collections.abc import Callable

from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from projects.models import Project, Role
from tests.recall.memories import add_memory
from tests.web.admin.helpers import HOSTILE, assert_escaped

URL = "/p/alpha/preview/"


def _bank(client: APIClient) -> None:
    add_memory(client, "Deploy with docker compose, never by hand", importance=2)
    add_memory(client, "docker images are built in CI " + HOSTILE, importance=3)
    add_memory(client, "The deploy script lives in ops/", kind="rule", importance=2)
    add_memory(client, "alice prefers tabs", kind="user")


def test_it_shows_the_payload_byte_for_byte_and_the_rankings_scores(
    alice: User, alice_client: APIClient, web_client: Callable[[User], Client]
) -> None:
    _bank(alice_client)
    params = {"profile": "meow", "user": "alice", "prompt": "how to deploy docker"}
    response = web_client(alice).get(URL, params)
    assert response.status_code == 200
    page = response.content.decode()
    assert_escaped(page)
    shown = re.search(r'<pre class="text payload" id="payload-text">(.*?)</pre>', page, re.S)
    assert shown is not None
    payload = alice_client.get("/api/v1/projects/alpha/injection/", {"profile": "meow"}).json()
    assert htmllib.unescape(shown.group(1)).startswith(payload["text"] + "\n")
    assert "alice prefers tabs" in payload["text"]
    # Every explained total is what memory search answers for the prompt.
    search = alice_client.get(
        "/api/v1/projects/alpha/memories/search/", {"q": "how to deploy docker"}
    ).json()["results"]
    rows = re.findall(
        r'<tr data-memory="([^"]+)">.*?<td class="num score"><strong>([0-9.]+)</strong>',
        page,
        re.S,
    )
    assert [memory for memory, _ in rows] == [r["id"] for r in search]
    for (_, shown_score), result in zip(rows, search, strict=True):
        assert abs(float(shown_score) - result["score"]) < 1e-6
    assert 'class="term"' in page and "<code>docker</code>" in page
    assert 'id="keyword-hits"' in page


def test_only_maintainers_preview_for_someone_else(
    alice: User,
    bob: User,
    alice_client: APIClient,
    project: Project,
    web_client: Callable[[User], Client],
) -> None:
    _bank(alice_client)
    bob_web = web_client(bob)
    page = bob_web.get(URL).content.decode()
    assert '<option value="alice"' not in page  # a member may only pick themself
    response = bob_web.get(URL, {"profile": "meow", "user": "alice", "prompt": "x"})
    assert response.status_code == 400
    assert "alice prefers tabs" not in response.content.decode()
    as_bob = web_client(alice).get(URL, {"profile": "meow", "user": "bob", "prompt": "docker"})
    assert as_bob.status_code == 200
    assert "alice prefers tabs" not in as_bob.content.decode()  # bob's view, not alice's
    assert AuditEvent.objects.filter(verb="injection.previewed_as").count() == 1


def test_htmx_gets_the_result_only_and_outsiders_404(
    alice: User,
    charlie: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    viewer = role_user(Role.VIEWER)
    response = web_client(viewer).get(
        URL,
        {"profile": "omp", "user": viewer.username, "prompt": ""},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="preview-result"') and "<html" not in body
    assert web_client(charlie).get(URL).status_code == 404
    bad = web_client(alice).get(URL, {"profile": "nope", "user": "alice"})
    assert bad.status_code == 400
