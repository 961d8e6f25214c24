"""The admin pages end to end in Chromium against a live server: unfold an injected block,
read an injection preview's score components, watch a rebuild reach 100 % on a real Celery
worker, create and revoke a token (and see the API accept, then refuse it)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect
from rest_framework.test import APIClient

from accounts.models import ApiToken, User
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.recall.memories import add_memory
from tests.web.admin.helpers import push_session
from tests.web.conftest import BrowserPage
from tests.worker import Worker

pytestmark = pytest.mark.browser


def test_open_a_transcript_and_unfold_an_injected_block(
    alice: User, alice_client: APIClient, browser_page: BrowserPage
) -> None:
    sid = push_session(alice_client)
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:session", kwargs={"slug": "alpha", "ref": sid}))
    injected = page.locator("details.injected").first
    body = injected.locator("pre")
    expect(body).to_be_hidden()  # folded: what the agent was given is not in the way
    expect(page.locator(".said").first).to_contain_text("Please fix the flaky test")
    injected.locator("summary").click()
    expect(body).to_be_visible()
    expect(body).to_contain_text("Deploy with docker compose")
    tool = page.locator("details.tool-call").first
    expect(tool.locator("pre").first).to_be_hidden()
    tool.locator("summary").click()
    expect(tool).to_contain_text("42 passed in 3.1s")
    expect(page.locator(".boundary-summary")).to_contain_text("We fixed the flaky test.")
    assert browser_page.dialogs == []  # the hostile title and text ran nothing


def test_preview_an_injection_and_read_its_score_components(
    alice: User, alice_client: APIClient, browser_page: BrowserPage
) -> None:
    add_memory(alice_client, "Deploy with docker compose, never by hand", importance=2)
    add_memory(alice_client, "docker images are built in CI", importance=3)
    add_memory(alice_client, "Python 3.13 is the target runtime")
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:preview", kwargs={"slug": "alpha"}))
    page.get_by_label("Agent").select_option("mewcode")
    page.get_by_label("Prompt").fill("how do we deploy docker")
    page.get_by_role("button", name="Preview").click()
    rows = page.locator("#search-scores tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#payload-text")).to_contain_text("<memoryhub-context>")
    search = alice_client.get(
        "/api/v1/projects/alpha/memories/search/", {"q": "how do we deploy docker"}
    ).json()["results"]
    for i, result in enumerate(search):
        row = rows.nth(i)
        assert row.get_attribute("data-memory") == result["id"]
        total = float(row.locator("td.score").inner_text())
        assert total == pytest.approx(result["score"], abs=1e-6)
        parts = [float(t) for t in row.locator(".term-score").all_inner_texts()]
        decay = float(row.locator("td.decay").inner_text().split()[1])
        near, session, subject = row.locator("td.signals").inner_text().split()
        # The components on the page add and multiply back to the ranking's score.
        base = sum(parts) * decay
        rebuilt = (base + float(near[1:]) + float(session[1:])) * float(subject[1:])
        assert rebuilt == pytest.approx(result["score"], abs=2e-3)
        terms = row.locator(".term code").all_inner_texts()
        assert set(terms) <= {"deploy", "docker"} and "docker" in terms
    assert browser_page.console_errors == []


@pytest.mark.worker
def test_run_a_rebuild_and_watch_the_progress_bar_reach_100(
    celery_worker: Worker,
    alice: User,
    alice_client: APIClient,
    project: Project,
    browser_page: BrowserPage,
) -> None:
    for i in range(3):
        push_session(alice_client, f"s-{i}", end=True)
    celery_worker.start()
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:bank", kwargs={"slug": "alpha"}))
    rebuild = page.locator("#rebuild-progress form")
    rebuild.get_by_label("Type the project's slug to confirm").fill("alpha")
    rebuild.get_by_role("button", name="Rebuild from transcripts").click()
    bar = page.locator("#rebuild-bar")
    expect(bar).to_be_visible()
    # htmx polls the fragment every second until the job is done.
    expect(bar).to_have_attribute("value", "100", timeout=120_000)
    expect(page.locator("#rebuild-progress")).to_contain_text("3 sessions replayed")
    expect(page.locator("#rebuild-progress")).not_to_have_attribute("hx-trigger", "every 1s")
    assert Memory.objects.filter(project=project, created_via="pipeline").exists()


def _me(base_url: str, token: str) -> int:
    request = urllib.request.Request(
        base_url + "/api/v1/me/", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body: dict[str, Any] = json.loads(response.read())
            assert body["username"] == "bob"
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_create_and_revoke_a_token(bob: User, project: Project, new_browser_page: Any) -> None:
    browser_page: BrowserPage = new_browser_page(permissions=["clipboard-read", "clipboard-write"])
    page = browser_page.page
    browser_page.sign_in("bob")
    browser_page.goto(reverse("web:members", kwargs={"slug": "alpha"}))
    page.get_by_label("Name", exact=True).fill("laptop")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token")
    expect(secret).to_be_visible()
    raw = secret.inner_text().strip()
    assert raw.startswith("mh_rw_")
    page.locator("[data-copy=new-token]").click()
    expect(page.locator("[data-copy=new-token]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == raw
    assert _me(browser_page.base_url, raw) == 200  # the agent can use it at once
    token = ApiToken.objects.get(name="laptop")
    browser_page.goto(reverse("web:members", kwargs={"slug": "alpha"}))
    expect(page.locator("body")).not_to_contain_text(raw)  # shown once only
    row = page.locator(f"#token-{token.public_id}")
    row.get_by_role("button", name="Revoke").click()
    expect(row).to_contain_text("revoked")
    assert _me(browser_page.base_url, raw) == 401


def test_a_link_to_a_record_on_a_later_page_finds_it(
    alice: User, alice_client: APIClient, browser_page: BrowserPage
) -> None:
    sid = push_session(alice_client, "long")
    records = [{"type": "user", "content": f"line {i}"} for i in range(7, 260)]
    response = alice_client.post(
        "/api/v1/projects/alpha/sessions/long/records/", records, format="json"
    )
    assert response.status_code == 201, response.content
    browser_page.sign_in("alice")
    url = reverse("web:session", kwargs={"slug": "alpha", "ref": sid})
    browser_page.goto(url + "#record-230")
    page = browser_page.page
    page.wait_for_url("**after=229#record-230")
    expect(page.locator("#record-230")).to_contain_text("line 230")
    browser_page.goto(url + "#record-5")  # on the first page: no detour
    expect(page.locator("#record-5")).to_be_visible()
    assert "after=" not in page.url
