"""API rate limits per token and per person: 429 in the error envelope with Retry-After."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework.test import APIClient

from accounts.models import User
from projects.models import Project


def _get(client: APIClient, project: Project) -> Any:
    return client.get(f"/api/v1/projects/{project.slug}/memories/")


def test_a_token_over_its_limit_gets_429_with_retry_after(
    settings: Any, alice: User, project: Project, make_client: Callable[..., APIClient]
) -> None:
    settings.API_TOKEN_RATE_LIMIT = "3/min"
    client = make_client(alice)
    assert [_get(client, project).status_code for _ in range(3)] == [200, 200, 200]
    refused = _get(client, project)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "throttled"
    assert 0 < int(refused["Retry-After"]) <= 60
    # Another token of the same person has a bucket of its own.
    assert _get(make_client(alice), project).status_code == 200


def test_a_person_over_the_user_limit_is_refused_on_every_token(
    settings: Any, alice: User, bob: User, project: Project, make_client: Callable[..., APIClient]
) -> None:
    settings.API_USER_RATE_LIMIT = "4/min"
    statuses = [_get(make_client(alice), project).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 200, 429]
    # Someone else is not slowed down by alice.
    assert _get(make_client(bob), project).status_code == 200


def test_limits_off_let_every_request_through(
    settings: Any, alice: User, project: Project, make_client: Callable[..., APIClient]
) -> None:
    settings.API_TOKEN_RATE_LIMIT = None
    client = make_client(alice)
    assert {_get(client, project).status_code for _ in range(20)} == {200}


def test_a_malformed_limit_stops_the_server_at_start() -> None:
    from tests.core.test_health_and_settings import _start_django

    result = _start_django(API_TOKEN_RATE_LIMIT="lots")
    assert result.returncode != 0
    assert "API_TOKEN_RATE_LIMIT must look like 600/min" in result.stderr
    assert _start_django(API_USER_RATE_LIMIT="off").returncode == 0
