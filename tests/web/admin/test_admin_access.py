"""Every admin page and action: an outsider gets the 404 of a missing project, a visitor who
is not signed in goes to the sign-in page, each page carries the CSP header, and each action
answers 403 to a role below the API's."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from projects.models import Project, Role
from tests.web.admin.helpers import push_session
from tests.web.conftest import without_csrf

PAGES = [
    "sessions/",
    "sessions/{sid}/",
    "recall-files/",
    "recall-files/new/",
    "instructions/",
    "instructions/new/",
    "preview/",
    "bank/",
    "bank/progress/",
    "members/",
    "import-export/",
    "settings/",
]
ACTIONS = [
    # (path, the lowest role the API allows)
    ("sessions/{sid}/extract/", Role.MAINTAINER),  # not the author: maintainers only
    ("bank/enqueue/", Role.MAINTAINER),
    ("bank/dream/", Role.MAINTAINER),
    ("bank/clear/", Role.OWNER),
    ("bank/rebuild/", Role.OWNER),
    ("members/add/", Role.MAINTAINER),
    ("members/bob/role/", Role.MAINTAINER),
    ("settings/recall/", Role.MAINTAINER),
    ("import-export/import/", Role.MEMBER),
]


def _neutral(content: bytes) -> bytes:
    return re.sub(rb'name="next" value="[^"]*"', b"", without_csrf(content))


@pytest.fixture
def sid(alice_client: APIClient) -> str:
    return push_session(alice_client)


def test_outsiders_get_404_on_every_page_and_action(
    sid: str, charlie: User, charlies_project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(charlie)
    missing = client.get("/p/no-such-project/sessions/")
    assert missing.status_code == 404
    for path in PAGES:
        response = client.get("/p/alpha/" + path.format(sid=sid))
        assert response.status_code == 404, path
        # The same page as a missing project's (but for CSRF tokens and the language switch's
        # return address).
        assert _neutral(response.content) == _neutral(missing.content), path
    for path, _ in ACTIONS:
        assert client.post("/p/alpha/" + path.format(sid=sid)).status_code == 404, path


def test_anonymous_visitors_sign_in_first(sid: str) -> None:
    for path in PAGES:
        response = Client().get("/p/alpha/" + path.format(sid=sid))
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], path


def test_pages_carry_the_csp(
    sid: str, alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    for path in PAGES:
        response = client.get("/p/alpha/" + path.format(sid=sid))
        assert response.status_code == 200, path
        assert "script-src 'self'" in response.headers["Content-Security-Policy"], path
        assert "<script>" not in response.content.decode(), path  # no inline scripts


@pytest.mark.parametrize(("path", "needed"), ACTIONS)
def test_actions_refuse_a_lower_role(
    path: str,
    needed: Role,
    sid: str,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    below = {Role.MEMBER: Role.VIEWER, Role.MAINTAINER: Role.MEMBER, Role.OWNER: Role.MAINTAINER}[
        needed
    ]
    client = web_client(role_user(below))
    assert client.post("/p/alpha/" + path.format(sid=sid)).status_code == 403
