"""Dashboard fixtures. Personas extend tests/conftest.py: alice owns `alpha`, bob is a member;
`role_user(role)` adds someone with any role; `web_client(user)` is a signed-in Django client.

Browser fixtures (Playwright driving Debian's Chromium against a live server) live in
tests/web/browser.py and are loaded as a plugin below, so tests/web/admin/ can use them too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Browser, BrowserContext, Dialog, Page, sync_playwright

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services as memory_services
from memoryhub.memories.models import Memory
from memoryhub.sessions import services as session_services
from memoryhub.sessions.records import RecordInput
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory

PASSWORD = "correct horse battery staple"  # tests.factories.UserFactory's password


def without_csrf(content: bytes) -> bytes:
    """A page with its per-response CSRF tokens blanked, to compare two pages byte for byte."""
    content = re.sub(rb'"X-CSRFToken": "[^"]+"', b'"X-CSRFToken": ""', content)
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", content)


@pytest.fixture
def web_client(db: None) -> Callable[[User], Client]:
    def make(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def role_user(project: Project, alice: User) -> Callable[[Role], User]:
    """role_user(Role.VIEWER) → a new user with that role in `alpha`."""

    def make(role: Role) -> User:
        user = UserFactory.create(username=f"{role}-user")
        access = project_access(slug=project.slug, actor=Actor(user=alice))
        membership_add(access=access, user=user, role=role)
        return user

    return make


def remember(
    project: Project, user: User, content: str = "We deploy with make release.", **fields: Any
) -> Memory:
    """A memory written by `user` through the service (postings, audit event and all)."""
    fields.setdefault("kind", "project")
    return memory_services.memory_create(
        project=project,
        actor=Actor(user=user),
        data=memory_services.MemoryInput(content=content, **fields),
    )


def transcript(project: Project, user: User, external_id: str, texts: list[tuple[str, str]]) -> Any:
    """A session with records [(type, text), …] appended through the services."""
    actor = Actor(user=user)
    session, _ = session_services.session_get_or_create(
        project=project, actor=actor, external_id=external_id
    )
    session_services.records_append(
        session=session,
        actor=actor,
        records=[RecordInput(type=kind, content=text) for kind, text in texts],
    )
    return session


# --- browser: Playwright driving Debian's Chromium against pytest-django's live server -------

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class BrowserPage:
    """A Playwright page plus what it saw: dialogs (an XSS would open one), CSP violations and
    other console errors, and failed requests."""

    page: Page
    base_url: str
    dialogs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def goto(self, path: str) -> Any:
        response = self.page.goto(self.base_url + path)
        self.page.wait_for_load_state("domcontentloaded")
        return response

    def sign_in(self, username: str, password: str = PASSWORD) -> None:
        """Through the real sign-in form."""
        self.goto(reverse("web:login"))
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_url(self.base_url + reverse("web:home"))


@pytest.fixture(scope="package")
def chromium() -> Iterator[Browser]:
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the
    # test around it are still synchronous. Package scope: the loop stops after tests/web, so
    # asyncio clients of later tests (MCP, Hindsight) can run theirs in any test order.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def browser_page(
    chromium: Browser, live_server: Any, request: pytest.FixtureRequest
) -> Iterator[BrowserPage]:
    """A fresh browser context (English, light scheme) on the live server.

    Options through indirect parametrisation are not needed: tests make more contexts with
    `new_browser_page`."""
    context = chromium.new_context(locale="en-US", color_scheme="light")
    wrapped = _wrap(context.new_page(), live_server.url)
    yield wrapped
    context.close()


@pytest.fixture
def new_browser_page(chromium: Browser, live_server: Any) -> Iterator[Callable[..., BrowserPage]]:
    """new_browser_page(locale="zh-CN", color_scheme="dark", bypass_csp=False) → BrowserPage."""
    contexts: list[BrowserContext] = []

    def make(**options: Any) -> BrowserPage:
        options.setdefault("locale", "en-US")
        context = chromium.new_context(**options)
        contexts.append(context)
        return _wrap(context.new_page(), live_server.url)

    yield make
    for context in contexts:
        context.close()


def _wrap(page: Page, base_url: str) -> BrowserPage:
    wrapped = BrowserPage(page=page, base_url=base_url)

    def on_dialog(dialog: Dialog) -> None:
        wrapped.dialogs.append(f"{dialog.type}: {dialog.message}")
        # A confirm() we ask for ourselves (hx-confirm) is accepted; the test decides whether
        # a dialog was expected.
        dialog.accept()

    page.on("dialog", on_dialog)
    page.on(
        "console",
        lambda message: (
            wrapped.console_errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.set_default_timeout(15_000)
    return wrapped
