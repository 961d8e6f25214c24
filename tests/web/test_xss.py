"""Memories and transcripts are untrusted agent input: no page may execute what they carry."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.web.conftest import BrowserPage, remember, transcript

PAYLOADS = [
    '<script>alert("xss-script")</script>',
    '<img src=x onerror=alert("xss-img")>',
    '"><svg onload=alert("xss-svg")>',
    "javascript:alert('xss-url')",
    '<a href="javascript:alert(1)">click</a>',
    "<iframe srcdoc='<script>parent.alert(1)</script>'></iframe>",
]
JOINED = " ".join(PAYLOADS)
RAW_MARKERS = ["<script>alert", "<img src=x", "<svg onload", '<a href="javascript:', "<iframe"]


def plant(project: Project, alice: User) -> dict[str, Memory]:
    """Payloads in every field a page shows: title, content, keywords, reasons, transcripts."""
    transcript(project, alice, "sess-<script>", [("user", JOINED), ("assistant", JOINED)])
    proposed = remember(
        project,
        alice,
        f"Proposed: {JOINED}",
        title='<script>alert("title")</script>',
        keywords=PAYLOADS[:4],
        status="proposed",
        source_session="sess-<script>",
        source_record_start=0,
        source_record_end=1,
    )
    stale = remember(project, alice, f"Stale: {JOINED}", title="<b onmouseover=alert(2)>t</b>")
    services.memory_set_status(memory=stale, actor=Actor(user=alice), status="stale", reason=JOINED)
    services.memory_update(
        memory=stale, actor=Actor(user=alice), changes={"content": f"Edited: {JOINED} deploy"}
    )
    other = remember(project, alice, f"Other deploy {JOINED}", keywords=["javascript:alert(3)"])
    return {"proposed": proposed, "stale": stale, "other": other}


def pages(memories: dict[str, Memory]) -> list[str]:
    slug = {"slug": "alpha"}
    one = {"slug": "alpha", "memory_id": memories["stale"].public_id}
    return [
        reverse("web:home"),
        reverse("web:project", kwargs=slug),
        reverse("web:memories", kwargs=slug) + "?status=all",
        reverse("web:memories", kwargs=slug) + "?q=deploy+script+alert",
        reverse("web:memory", kwargs=one),
        reverse(
            "web:memory", kwargs={"slug": "alpha", "memory_id": memories["proposed"].public_id}
        ),
        reverse("web:memory_similar", kwargs=one),
        reverse("web:memory_merge", kwargs=one) + f"?other={memories['other'].public_id}",
        reverse("web:memory_edit", kwargs=one),
        reverse("web:review", kwargs=slug),
    ]


def test_every_page_escapes_agent_content(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memories = plant(project, alice)
    client = web_client(alice)
    for url in pages(memories):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        for marker in RAW_MARKERS:
            assert marker not in body, (url, marker)
        assert "&lt;script&gt;alert(" in body or "alert" not in body, url
        assert 'href="javascript:' not in body.lower(), url


@pytest.mark.browser
def test_no_page_executes_agent_content_in_a_browser(
    alice: User, project: Project, browser_page: BrowserPage
) -> None:
    memories = plant(project, alice)
    browser_page.sign_in("alice")
    page = browser_page.page
    for url in pages(memories):
        response = browser_page.goto(url)
        assert response is not None and response.status == 200, url
        page.wait_for_load_state("load")
        # Hover and click over the rendered payload text: event handlers would fire now.
        for element in page.locator(".memory-content, .kw, .review-title, .record").all()[:10]:
            element.hover()
        assert page.locator('a[href^="javascript:" i]').count() == 0, url
        assert (
            page.locator("main script, main img, main iframe, main svg:not(.chart)").count() == 0
        ), url
    assert browser_page.dialogs == []
