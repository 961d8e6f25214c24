"""axe-core on the admin pages, light and dark: no serious or critical violations."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from projects.models import Project
from tests.recall.memories import add_memory
from tests.web.admin.helpers import push_session
from tests.web.conftest import BrowserPage
from tests.web.test_browser_a11y import _axe

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_admin_pages_have_no_serious_accessibility_violations(
    alice: User,
    alice_client: APIClient,
    project: Project,
    new_browser_page: Callable[..., BrowserPage],
    scheme: str,
) -> None:
    sid = push_session(alice_client)
    add_memory(alice_client, "Deploy with docker compose", source={"session": "s-1"})
    alice_client.put(
        "/api/v1/projects/alpha/recall-files/project/testing.md",
        {"content": "---\nname: Testing\ntype: project\n---\nRun pytest.\n"},
        format="json",
    )
    alice_client.put(
        "/api/v1/projects/alpha/instructions/files/MEWCODE.md",
        {"content": "Rules\n@include missing.md"},
        format="json",
    )
    alice_client.post("/api/v1/tokens/", {"name": "laptop", "project": "alpha"}, format="json")
    pages = [
        "sessions/",
        f"sessions/{sid}/",
        "recall-files/",
        "recall-files/project/testing.md",
        "instructions/",
        "preview/?profile=meow&prompt=deploy+docker",
        "bank/",
        "members/",
        "settings/",
    ]
    browser = new_browser_page(color_scheme=scheme, bypass_csp=True)
    browser.sign_in("alice")
    found: dict[str, list[str]] = {}
    for path in pages:
        browser.goto("/p/alpha/" + path)
        found.update(_axe(browser, path))
    assert found == {}
