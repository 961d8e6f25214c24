"""Injection preview page: byte-for-byte payload, explained scores equal to the ranking's,
always as oneself (another member's payload holds their private memories), htmx."""

from __future__ import annotations

import html as htmllib
import re
from collections.abc import Callable

from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
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
    params = {"profile": "meow", "prompt": "how to deploy docker"}
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


def test_the_preview_is_always_ones_own_so_private_memories_stay_private(
    alice: User,
    bob: User,
    alice_client: APIClient,
    bob_client: APIClient,
    project: Project,
    web_client: Callable[[User], Client],
) -> None:
    _bank(alice_client)
    add_memory(bob_client, "bob keeps his zebrafinch shell aliases", kind="user")
    owner = web_client(alice)
    page = owner.get(URL).content.decode()
    assert 'name="user"' not in page  # nobody picks another member
    # A maintainer (here the owner) asking for bob's view still gets her own.
    as_bob = owner.get(URL, {"profile": "meow", "user": "bob", "prompt": "zebrafinch"})
    assert as_bob.status_code == 200
    assert "shell aliases" not in as_bob.content.decode()
    assert "alice prefers tabs" in as_bob.content.decode()
    mine = web_client(bob).get(URL, {"profile": "meow", "prompt": "zebrafinch"})
    assert "bob keeps his zebrafinch shell aliases" in mine.content.decode()
    assert "alice prefers tabs" not in mine.content.decode()


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
        {"profile": "omp", "prompt": ""},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="preview-result"') and "<html" not in body
    assert web_client(charlie).get(URL).status_code == 404
    bad = web_client(alice).get(URL, {"profile": "nope"})
    assert bad.status_code == 400
