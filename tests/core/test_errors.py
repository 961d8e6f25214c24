"""The error envelope: every 4xx/5xx under /api/ is {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.log_filters import ClientErrorsWithoutTraceback
from projects.models import Project

URL = "/api/v1/projects/alpha/memories/"


def assert_envelope(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["details"], dict)
    return body["error"]


def test_validation_error(alice_client: APIClient) -> None:
    error = assert_envelope(alice_client.post(URL, {}, format="json"), 400, "validation_error")
    assert set(error["details"]) == {"content", "kind"}


def test_malformed_json(alice_client: APIClient) -> None:
    response = alice_client.post(URL, "{not json", content_type="application/json")
    assert_envelope(response, 400, "malformed_request")


def test_unsupported_media_type(alice_client: APIClient) -> None:
    response = alice_client.post(URL, "content=x", content_type="text/plain")
    assert_envelope(response, 415, "unsupported_media_type")


def test_method_not_allowed(alice_client: APIClient) -> None:
    assert_envelope(alice_client.delete(URL), 405, "method_not_allowed")


def test_unknown_api_path(alice_client: APIClient) -> None:
    assert_envelope(alice_client.get("/api/v1/nothing-here/"), 404, "not_found")
    assert_envelope(alice_client.get(URL + "not-a-uuid/"), 404, "not_found")


def test_not_authenticated_and_bad_token(db: None) -> None:
    assert_envelope(APIClient().get(URL), 401, "not_authenticated")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer mh_rw_definitely-not-a-token")
    assert_envelope(client.get(URL), 401, "authentication_failed")


@pytest.mark.urls("tests.core.boom_urls")
def test_unexpected_errors_become_a_500_envelope(alice_client: APIClient) -> None:
    error = assert_envelope(alice_client.get("/api/v1/boom/"), 500, "server_error")
    assert "unexpected failure" not in error["message"]  # no internals leak to clients


def test_oversized_body_is_413(alice_client: APIClient, settings: Any) -> None:
    settings.API_MAX_BODY_BYTES = 2048
    response = alice_client.post(URL, {"content": "x" * 4096, "kind": "fact"}, format="json")
    error = assert_envelope(response, 413, "payload_too_large")
    assert error["details"]["limit_bytes"] == 2048


@pytest.mark.django_db(transaction=True)
def test_oversized_body_over_real_http(live_server: Any, settings: Any) -> None:
    """Through a real socket: the server answers 413 without reading the body."""
    from accounts.actors import Actor
    from accounts.services import token_create
    from projects.services import project_create
    from tests.factories import UserFactory

    settings.API_MAX_BODY_BYTES = 64 * 1024
    alice = UserFactory.create(username="alice")
    project = project_create(slug="alpha", owner=alice, actor=Actor(user=alice))
    _, raw = token_create(user=alice, name="t", project=project, actor=Actor(user=alice))
    headers = {"Authorization": f"Bearer {raw}"}
    with httpx.Client(base_url=live_server.url, headers=headers, timeout=10) as http:
        big = http.post(URL, json={"content": "x" * 100_000, "kind": "fact"})
        assert big.status_code == 413
        assert big.json()["error"]["code"] == "payload_too_large"
        small = http.post(URL, json={"content": "fits", "kind": "fact"})
        assert small.status_code == 201
        assert http.get(URL).json()["count"] == 1


def test_nul_characters_are_a_clear_400(alice_client: APIClient) -> None:
    assert_envelope(alice_client.get(URL + "x\x00y/"), 400, "malformed_request")
    response = alice_client.post(URL, {"content": "a\x00b", "kind": "fact"}, format="json")
    assert response.status_code in (201, 400)  # SQLite stores NUL; PostgreSQL refuses it
    if response.status_code == 400:
        assert response.json()["error"]["code"] == "validation_error"


@pytest.fixture
def console_log() -> Iterator[io.StringIO]:
    """What the console handler (settings.LOGGING) writes, meanwhile."""
    (handler,) = [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler)
        and any(isinstance(f, ClientErrorsWithoutTraceback) for f in h.filters)
    ]
    stream = io.StringIO()
    old = handler.setStream(stream)
    try:
        yield stream
    finally:
        handler.setStream(old)


@pytest.mark.urls("tests.core.boom_urls")
def test_the_log_keeps_tracebacks_for_server_errors_only(
    alice: User, bob: User, project: Project, console_log: io.StringIO
) -> None:
    client = Client()
    client.force_login(bob)  # a member: the settings page is for maintainers
    assert client.get("/p/alpha/settings/").status_code == 403
    refused = console_log.getvalue()
    assert "Forbidden" in refused and "/p/alpha/settings/" in refused
    assert "Traceback" not in refused
    client.force_login(alice)
    assert client.get("/api/v1/boom/").status_code == 500
    assert "Traceback" in console_log.getvalue()
