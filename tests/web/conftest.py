"""Dashboard fixtures. Personas extend tests/conftest.py: alice owns `alpha`, bob is a member;
`role_user(role)` adds someone with any role; `web_client(user)` is a signed-in Django client.

Browser fixtures (Playwright driving Debian's Chromium against a live server) live in
tests/web/browser.py and are loaded as a plugin below, so tests/web/admin/ can use them too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services as memory_services
from memoryhub.memories.models import Memory
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
