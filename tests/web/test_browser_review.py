"""End to end in Chromium against a live server: the review job and the memory actions.

The first test has a real Celery worker extract proposed memories from a transcript, then a
maintainer reviews them with the keyboard."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.pipeline import dispatch
from memoryhub.pipeline.models import Job
from memoryhub.sessions import services as session_services
from projects.models import Project
from tests.web.conftest import BrowserPage, remember, transcript
from tests.worker import Worker, wait_for

pytestmark = pytest.mark.browser

TRANSCRIPT = [
    ("user", "We use PostgreSQL 15 for the main database."),
    ("assistant", "Noted."),
    ("user", "Never force-push to main."),
    ("assistant", "Understood."),
    ("user", "Always run ruff before committing."),
    ("assistant", "Will do."),
]


@pytest.mark.worker
def test_a_maintainer_reviews_pipeline_output_with_the_keyboard(
    celery_worker: Worker, alice: User, project: Project, browser_page: BrowserPage
) -> None:
    project.settings = {"review_required": True}
    project.save(update_fields=["settings"])
    session = transcript(project, alice, "mew-review", TRANSCRIPT)
    session_services.session_end(session=session, actor=Actor(user=alice))
    celery_worker.start()
    assert dispatch.scan_project(project)["stage1"] == 1
    assert wait_for(
        lambda: Memory.objects.filter(project=project, status="proposed").count() >= 3, timeout=90
    ), list(Job.objects.values("kind", "status", "last_error"))
    # Project memories and alice's own user-scope ones: everything in her queue.
    proposed = list(Memory.objects.filter(project=project, status="proposed"))
    assert len(proposed) >= 3

    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:review", kwargs={"slug": "alpha"}))
    items = page.locator("[data-review-item]")
    expect(items.first).to_be_focused()
    first_id, second_id, third_id = (str(items.nth(i).get_attribute("id")) for i in range(3))

    # a: approve the focused (first) item; the focus moves on to the next open one.
    page.keyboard.press("a")
    expect(page.locator(f"#{first_id}")).to_have_class(re.compile("resolved"))
    # The approval's swap must be over before the next key: a textarea filled mid-swap is
    # replaced by the server's copy, and the original text would be saved.
    expect(page.locator(f"#{first_id}")).not_to_have_class(re.compile("htmx-"))
    expect(page.locator(f"#{second_id}")).to_be_focused()

    # e: edit, then approve.
    page.keyboard.press("e")
    content = page.locator(f"#{second_id} textarea[name=content]")
    expect(content).to_be_visible()
    expect(page.locator(f"#{second_id}")).not_to_have_class(re.compile("htmx-"))
    content.fill("Edited in review: never force-push to main.")
    expect(content).to_have_value("Edited in review: never force-push to main.")
    page.locator(f"#{second_id}").get_by_role("button", name="Save and approve").click()
    expect(page.locator(f"#{second_id}")).to_contain_text("Edited and approved.")
    # Let htmx finish swapping it in: focusing it mid-swap would focus the element being replaced.
    expect(page.locator(f"#{second_id}")).not_to_have_class(re.compile("htmx-"))

    # j/k move; r focuses the reason, Enter rejects.
    page.locator(f"#{third_id}").focus()
    page.keyboard.press("k")
    expect(page.locator(f"#{second_id}")).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator(f"#{third_id}")).to_be_focused()
    page.keyboard.press("r")
    reason = page.locator(f"#{third_id} input[name=reason]")
    expect(reason).to_be_focused()
    page.keyboard.type("Too obvious to keep.")
    page.keyboard.press("Enter")
    expect(page.locator(f"#{third_id}")).to_contain_text("Rejected.")

    by_id = {f"review-{m.public_id}": m for m in proposed}
    statuses = {
        key: Memory.objects.get(pk=by_id[key].pk) for key in (first_id, second_id, third_id)
    }
    assert statuses[first_id].status == "active"
    assert statuses[second_id].status == "active"
    assert statuses[second_id].content == "Edited in review: never force-push to main."
    assert (statuses[third_id].status, statuses[third_id].status_reason) == (
        "archived",
        "Too obvious to keep.",
    )
    assert browser_page.dialogs == []
    assert not [e for e in browser_page.console_errors if "Content Security Policy" in e]


def test_memory_actions_search_and_chinese(
    alice: User, bob: User, project: Project, browser_page: BrowserPage
) -> None:
    target = remember(project, alice, "Node 18 is required for the frontend build.")
    duplicate = remember(project, alice, "The frontend build needs Node 18.")
    mine = remember(project, alice, "I prefer concise commit messages.", kind="user")
    page = browser_page.page
    browser_page.sign_in("alice")

    def detail(memory: Memory) -> None:
        browser_page.goto(
            reverse("web:memory", kwargs={"slug": "alpha", "memory_id": memory.public_id})
        )

    # Mark stale with a reason, in place.
    detail(target)
    page.get_by_placeholder("Why is it stale?").fill("We moved to Node 20.")
    page.get_by_role("button", name="Mark stale").click()
    expect(page.locator("#memory-main")).to_contain_text("Marked stale.")
    expect(page.locator(".status-reason")).to_contain_text("We moved to Node 20.")
    # Archive, then restore.
    page.get_by_role("button", name="Archive").click()
    expect(page.locator("#memory-main")).to_contain_text("Archived.")
    page.get_by_role("button", name="Restore").click()
    expect(page.locator("#memory-main")).to_contain_text("Restored.")
    target.refresh_from_db()
    assert target.status == "active"
    assert list(target.events.order_by("id").values_list("verb", flat=True)) == [
        "created",
        "marked_stale",
        "archived",
        "restored",
    ]

    # Promote a private memory (hx-confirm asks first; the fixture accepts).
    detail(mine)
    page.get_by_role("button", name="Share with the project").click()
    expect(page.locator("#memory-main")).to_contain_text("Shared with the project.")
    assert browser_page.dialogs and browser_page.dialogs[-1].startswith("confirm:")
    mine.refresh_from_db()
    assert mine.scope == "project"

    # Merge: find similar, then merge the duplicate into the target.
    detail(target)
    page.get_by_role("link", name="Find similar").click()
    expect(page.locator("#similar")).to_contain_text("The frontend build needs Node 18.")
    page.locator("#similar").get_by_role("link", name="Merge into this one…").first.click()
    page.get_by_label("Merged text").fill("The frontend build needs Node 18 (now 20).")
    page.get_by_role("button", name="Merge").click()
    expect(page.locator(".messages")).to_contain_text("Merged.")
    duplicate.refresh_from_db()
    assert (duplicate.status, duplicate.superseded_by_id) == ("archived", target.pk)

    # Search through the ranking, htmx swapping the results in place.
    browser_page.goto(reverse("web:memories", kwargs={"slug": "alpha"}))
    page.get_by_placeholder(re.compile("Search memories")).fill("commit messages")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#memory-results")).to_contain_text("I prefer concise commit messages.")
    expect(page.locator("#memory-results")).not_to_contain_text("frontend build")
    assert "q=commit%20messages" in page.url  # pushed to the history by htmx

    # Switch to Chinese in the header; the choice sticks.
    page.get_by_role("button", name="中文").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-Hans")
    expect(page.locator("h1")).to_have_text("记忆")
    browser_page.goto(reverse("web:home"))
    expect(page.locator("h1")).to_have_text("你的项目")
    assert browser_page.console_errors == []
