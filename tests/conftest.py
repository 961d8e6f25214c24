"""Personas (as in the style guide): alice owns project `alpha`, bob is a member of it,
charlie is an outsider with a project of his own. Each has an API client with a token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache, caches
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.recall import engine
from memoryhub.recall import services as recall_services
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add, project_create
from tests.factories import UserFactory

pytest_plugins = ["tests.fake_llm", "tests.worker"]

# Property tests judge behaviour, never speed: on a busy 2-core machine input generation and
# examples can be slow, which must not fail a test (hypothesis' deadline and too_slow check).
hypothesis_settings.register_profile(
    "memoryhub", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("memoryhub")


@pytest.fixture(autouse=True)
def _test_settings(settings: Any) -> None:
    cache.clear()  # cached bank statistics must not leak between tests
    # Each test's transaction is rolled back, and SQLite then hands out the same project ids
    # and bank versions again: a bank copy kept from an earlier test would look current.
    engine.registry.clear()
    recall_services.forget_injected_marks()  # the same: session ids are handed out again
    # Rate-limit counters per test, in memory (clearing Redis would flush the Celery broker's
    # queues); limits are off unless a test turns them on (tests/accounts/test_throttling.py).
    settings.CACHES = settings.CACHES | {
        "throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    }
    caches["throttle"].clear()
    settings.API_TOKEN_RATE_LIMIT = None
    settings.API_USER_RATE_LIMIT = None
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The manifest storage needs `collectstatic`; tests render pages without it.
    settings.STORAGES = settings.STORAGES | {
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    }


def bearer_client(raw_token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_token}")
    return client


@pytest.fixture
def make_client(db: None) -> Callable[..., APIClient]:
    """make_client(user, project=None, read_only=False) → an APIClient with a fresh token."""

    def make(user: User, *, project: Project | None = None, read_only: bool = False) -> APIClient:
        _, raw = token_create(
            user=user,
            name="test",
            project=project,
            read_only=read_only,
            actor=Actor.for_system("test"),
        )
        return bearer_client(raw)

    return make


@pytest.fixture
def alice(db: None) -> User:
    return UserFactory.create(username="alice")


@pytest.fixture
def bob(db: None) -> User:
    return UserFactory.create(username="bob")


@pytest.fixture
def charlie(db: None) -> User:
    return UserFactory.create(username="charlie")


@pytest.fixture
def project(alice: User, bob: User) -> Project:
    """alice's project `alpha`, with bob as a member."""
    created = project_create(
        slug="alpha", name="Alpha", owner=alice, actor=Actor.for_system("test")
    )
    access = project_access(slug="alpha", actor=Actor(user=alice))
    membership_add(access=access, user=bob, role=Role.MEMBER)
    return created


@pytest.fixture
def charlies_project(charlie: User) -> Project:
    return project_create(slug="charlie-lab", owner=charlie, actor=Actor.for_system("test"))


@pytest.fixture
def alice_client(alice: User, project: Project, make_client: Callable[..., APIClient]) -> APIClient:
    return make_client(alice)


@pytest.fixture
def alice_ro_client(
    alice: User, project: Project, make_client: Callable[..., APIClient]
) -> APIClient:
    return make_client(alice, read_only=True)


@pytest.fixture
def bob_client(bob: User, project: Project, make_client: Callable[..., APIClient]) -> APIClient:
    return make_client(bob)


@pytest.fixture
def charlie_client(
    charlie: User, charlies_project: Project, make_client: Callable[..., APIClient]
) -> APIClient:
    return make_client(charlie)
