"""Layout in Chromium: no page is wider than a phone (375 px, English, light) or a tablet
(768 px, Chinese, dark); fenced code in a memory is monospace; one-click destructive actions
ask first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Browser, expect

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.pipeline.models import Job
from projects.models import Project, ProjectMembership
from tests.web.conftest import BrowserPage, remember, transcript

pytestmark = pytest.mark.browser

CODE = """Deploy with the release script:

```python
def release(version_with_a_rather_long_name: str, *, dry_run: bool = False) -> None:
    subprocess.run(["make", "release", f"VERSION={version_with_a_rather_long_name}"], check=True)
```

Never on Fridays."""


def _pages(project: Project, alice: User) -> list[str]:
    transcript(project, alice, "session-" + "x" * 60, [("user", "Deploy with make release.")])
    for i in range(3):
        remember(
            project,
            alice,
            f"Memory {i}: the frontend build needs Node 18 and pnpm 9 installed globally.",
            title=f"A rather long memory title number {i} about the frontend build",
            keywords=["frontend", "node", "pnpm", "build"],
            status="proposed" if i == 0 else "active",
        )
    code = remember(project, alice, CODE, title="Release script", kind="reference")
    token_create(user=alice, name="laptop agent", actor=Actor(user=alice), project=project)
    Job.objects.create(
        kind=Job.Kind.STAGE2, key="project:x", project=project, status=Job.Status.FAILED
    )
    slug = {"slug": "alpha"}
    return [
        reverse("web:home"),
        reverse("web:project", kwargs=slug),
        reverse("web:memories", kwargs=slug),
        reverse("web:memory", kwargs={"slug": "alpha", "memory_id": code.public_id}),
        reverse("web:review", kwargs=slug),
        reverse("web:sessions", kwargs=slug),
        reverse("web:members", kwargs=slug),
        reverse("web:interchange", kwargs=slug),
        reverse("web:instruction_new", kwargs=slug),
        reverse("web:recall_file_new", kwargs=slug),
        reverse("web:bank", kwargs=slug),
        reverse("web:settings", kwargs=slug),
    ]


@pytest.mark.parametrize(
    ("width", "locale", "scheme"), [(375, "en-US", "light"), (768, "zh-CN", "dark")]
)
def test_no_page_is_wider_than_the_screen(
    alice: User,
    project: Project,
    new_browser_page: Callable[..., BrowserPage],
    width: int,
    locale: str,
    scheme: str,
) -> None:
    urls = _pages(project, alice)
    browser = new_browser_page(
        locale=locale, color_scheme=scheme, viewport={"width": width, "height": 800}
    )
    browser.sign_in("alice") if locale == "en-US" else _sign_in_any_language(browser)
    wide = {}
    for url in urls:
        browser.goto(url)
        sizes = browser.page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth,"
            " document.querySelector('.topbar').getBoundingClientRect().width]"
        )
        if sizes[0] > sizes[1] or sizes[2] < sizes[1]:
            wide[url] = sizes
    assert wide == {}, wide
    assert browser.console_errors == []


def _sign_in_any_language(browser: BrowserPage) -> None:
    browser.goto(reverse("web:login"))
    browser.page.fill("#id_username", "alice")
    browser.page.fill("#id_password", "correct horse battery staple")
    browser.page.locator("form button[type=submit]").last.click()
    browser.page.wait_for_url(browser.base_url + reverse("web:home"))


def test_fenced_code_in_a_memory_is_monospace_and_prose_is_not(
    alice: User, project: Project, browser_page: BrowserPage
) -> None:
    hostile = remember(project, alice, "Prose.\n```\n<img src=x onerror=alert(1)>\n```\n")
    code = remember(project, alice, CODE, title="Release script", kind="reference")
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(reverse("web:memory", kwargs={"slug": "alpha", "memory_id": code.public_id}))
    content = page.locator("pre.memory-content")
    block = content.locator("code.code-block")
    expect(block).to_have_count(1)
    expect(block).to_contain_text("def release(")
    font = block.evaluate("el => getComputedStyle(el).fontFamily")
    prose = content.evaluate("el => getComputedStyle(el).fontFamily")
    assert "monospace" in font and "monospace" not in prose, (font, prose)
    assert content.text_content() == CODE  # the text itself is unchanged
    # The code block scrolls on its own; the page does not.
    page.set_viewport_size({"width": 375, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # Text in a fence stays text.
    browser_page.goto(
        reverse("web:memory", kwargs={"slug": "alpha", "memory_id": hostile.public_id})
    )
    expect(page.locator("pre.memory-content code.code-block")).to_contain_text("<img src=x")
    assert page.locator("pre.memory-content img").count() == 0
    assert browser_page.dialogs == []


def test_leave_remove_and_revoke_ask_first(
    alice: User, bob: User, project: Project, chromium: Browser, live_server: Any
) -> None:
    token, _raw = token_create(user=alice, name="laptop", actor=Actor(user=alice), project=project)
    context = chromium.new_context(locale="en-US")
    try:
        browser = BrowserPage(page=context.new_page(), base_url=live_server.url)
        asked: list[str] = []
        answer = {"accept": False}

        def on_dialog(dialog: Any) -> None:
            asked.append(dialog.message)
            dialog.accept() if answer["accept"] else dialog.dismiss()

        browser.page.on("dialog", on_dialog)
        browser.sign_in("alice")
        browser.goto(reverse("web:members", kwargs={"slug": "alpha"}))
        page = browser.page
        bob_row = page.locator("tr", has_text="bob")
        # Dismissed: nothing happens.
        bob_row.get_by_role("button", name="Remove").click()
        page.get_by_role("button", name="Revoke").click()
        page.wait_for_timeout(300)
        assert asked == [
            "Remove bob from the project?",
            "Revoke the token “laptop”? Agents using it stop working at once.",
        ]
        assert ProjectMembership.objects.filter(project=project, user=bob).exists()
        token.refresh_from_db()
        assert token.status == "active"
        # Accepted: done.
        answer["accept"] = True
        page.get_by_role("button", name="Revoke").click()
        expect(page.locator(f"#token-{token.public_id}")).to_contain_text("revoked")
        bob_row.get_by_role("button", name="Remove").click()
        expect(page.locator(".messages")).to_contain_text("bob left the project.")
        assert not ProjectMembership.objects.filter(project=project, user=bob).exists()
        # Leaving asks too.
        browser.goto(reverse("web:members", kwargs={"slug": "alpha"}))
        answer["accept"] = False
        page.locator("tr", has_text="alice").get_by_role("button", name="Leave").click()
        page.wait_for_timeout(300)
        assert asked[-1].startswith("Leave this project?")
        assert ProjectMembership.objects.filter(project=project, user=alice).exists()
    finally:
        context.close()
