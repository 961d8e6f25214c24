"""The review queue's keys in Chromium: they act on the item holding the focus, never on one
remembered from earlier, and Enter in the bulk reason rejects (it used to approve)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from accounts.models import User
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.web.conftest import BrowserPage, remember

pytestmark = pytest.mark.browser


def _statuses(memories: list[Memory]) -> list[str]:
    return [Memory.objects.get(pk=m.pk).status for m in memories]


def test_the_keys_act_on_the_focused_item_only(
    alice: User, project: Project, browser_page: BrowserPage
) -> None:
    memories = [remember(project, alice, f"Proposal {i}.", status="proposed") for i in range(3)]
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:review", kwargs={"slug": "alpha"}))
    first, second = (f"#review-{m.public_id}" for m in memories[:2])
    expect(page.locator(first)).to_be_focused()

    # Focus in the sidebar: a, j and x do nothing.
    page.locator(".project-nav a").first.focus()
    for key in ("a", "j", "x"):
        page.keyboard.press(key)
    page.wait_for_timeout(300)
    expect(page.locator(".project-nav a").first).to_be_focused()
    expect(page.locator(".review-item.resolved")).to_have_count(0)
    assert page.locator("input[name=selected]:checked").count() == 0

    # Focus moves into the second item (its title link): the highlight follows, and a
    # approves that item, not the first one highlighted at load.
    page.locator(f"{second} .review-title").focus()
    expect(page.locator(second)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator(first)).not_to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("a")
    expect(page.locator(second)).to_have_class(re.compile("resolved"))
    assert _statuses(memories) == ["proposed", "active", "proposed"]
    assert browser_page.console_errors == []


def test_enter_in_the_bulk_reason_rejects(
    alice: User, project: Project, browser_page: BrowserPage
) -> None:
    memories = [remember(project, alice, f"Proposal {i}.", status="proposed") for i in range(2)]
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:review", kwargs={"slug": "alpha"}))
    page.locator(f"#review-{memories[0].public_id} input[name=selected]").check()
    page.locator("#bulk-reason").fill("Duplicate of the deploy rule.")
    page.locator("#bulk-reason").press("Enter")
    expect(page.locator(".messages")).to_contain_text("1 memory rejected.")
    assert _statuses(memories) == ["archived", "proposed"]
    assert Memory.objects.get(pk=memories[0].pk).status_reason == "Duplicate of the deploy rule."
