"""Accessibility (axe-core in Chromium) and the Content-Security-Policy as the browser sees it,
on the main pages, in the light and the dark scheme."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import User
from projects.models import Project
from tests.web.conftest import BrowserPage, remember, transcript

pytestmark = pytest.mark.browser
AXE = Path(__file__).parent / "vendor" / "axe.min.js"


def main_pages(project: Project, alice: User) -> list[str]:
    transcript(
        project, alice, "sess-a11y", [("user", "Never deploy on Fridays."), ("assistant", "OK")]
    )
    proposed = remember(
        project,
        alice,
        "Never deploy on Fridays.",
        kind="rule",
        status="proposed",
        source_session="sess-a11y",
        source_record_start=0,
        keywords=["deploy", "friday"],
    )
    remember(project, alice, "Deploys run make release.", title="Deploying")
    slug = {"slug": "alpha"}
    return [
        reverse("web:home"),
        reverse("web:project", kwargs=slug),
        reverse("web:memories", kwargs=slug),
        reverse("web:memories", kwargs=slug) + "?q=deploy",
        reverse("web:memory", kwargs={"slug": "alpha", "memory_id": proposed.public_id}),
        reverse("web:review", kwargs=slug),
        reverse("web:password_change"),
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_main_pages_have_no_serious_accessibility_violations(
    alice: User, project: Project, new_browser_page: Callable[..., BrowserPage], scheme: str
) -> None:
    urls = main_pages(project, alice)
    # axe is injected as a script tag, which the CSP would (rightly) refuse.
    browser = new_browser_page(color_scheme=scheme, bypass_csp=True)
    browser.goto(reverse("web:login"))
    found: dict[str, list[str]] = {}
    found.update(_axe(browser, "login"))
    browser.sign_in("alice")
    for url in urls:
        browser.goto(url)
        found.update(_axe(browser, url))
    assert found == {}


def _axe(browser: BrowserPage, name: str) -> dict[str, list[str]]:
    page = browser.page
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    assert result["testEngine"]["name"] == "axe-core" and result["url"].startswith("http")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    return {name: bad} if bad else {}


def test_pages_run_under_the_csp_without_violations(
    alice: User, project: Project, browser_page: BrowserPage
) -> None:
    urls = main_pages(project, alice)
    browser_page.sign_in("alice")
    for url in urls:
        response = browser_page.goto(url)
        assert response is not None
        assert "script-src 'self'" in (response.headers.get("content-security-policy") or "")
        browser_page.page.wait_for_load_state("load")
        assert browser_page.page.evaluate("() => typeof window.htmx") == "object", url
    violations = [e for e in browser_page.console_errors if "Content Security Policy" in e]
    assert violations == []
