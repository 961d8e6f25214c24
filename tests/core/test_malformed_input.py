"""Hostile or malformed bodies answer 400 in the envelope, with nothing written (never 500)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import RequestFactory
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.api_views import csrf_failure
from memoryhub.memories.models import Memory
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.conftest import bearer_client
from tests.core.test_errors import assert_envelope

P = "/api/v1/projects/alpha/"
S = P + "sessions/"


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def nothing_written() -> None:
    assert Memory.objects.count() == 0
    assert SessionRecord.objects.count() == 0


def test_metadata_nested_2000_levels_deep(alice_client: APIClient) -> None:
    deep = json.dumps({"kind": "fact", "content": "x", "metadata": nested(2000)})
    response = alice_client.post(P + "memories/", deep, content_type="application/json")
    assert_envelope(response, 400, "malformed_request")
    # Just below the parser's own recursion limit: still refused, before anything recurses.
    deep = json.dumps({"external_id": "deep", "metadata": nested(500)})
    assert_envelope(
        alice_client.post(S, deep, content_type="application/json"), 400, "malformed_request"
    )
    nothing_written()
    assert not AgentSession.objects.exists()


def test_a_body_of_100000_brackets(alice_client: APIClient) -> None:
    for url in (P + "memories/", S):
        response = alice_client.post(url, "[" * 100_000, content_type="application/json")
        assert_envelope(response, 400, "malformed_request")
    nothing_written()


@pytest.fixture
def session(alice_client: APIClient) -> None:
    assert alice_client.post(S, {"external_id": "s1"}, format="json").status_code == 201


@pytest.mark.parametrize("seq", ["9223372036854775808", "1e30", str(10**30), "-1", "true"])
def test_a_record_seq_out_of_range(alice_client: APIClient, session: None, seq: str) -> None:
    body = f'[{{"type": "user", "content": "hi", "seq": {seq}}}]'
    response = alice_client.post(S + "s1/records/", body, content_type="application/json")
    error = assert_envelope(response, 400, "validation_error")
    assert "seq" in json.dumps(error["details"])
    nothing_written()


def test_the_largest_seq_is_accepted(alice_client: APIClient, session: None) -> None:
    body = [{"type": "user", "content": "hi", "seq": 2**63 - 1}]
    assert alice_client.post(S + "s1/records/", body, format="json").status_code == 201


def test_an_ndjson_append_with_an_invalid_utf8_byte(alice_client: APIClient, session: None) -> None:
    body = b'{"type": "user", "content": "ok"}\n{"type": "user", "content": "\xff"}\n'
    response = alice_client.post(S + "s1/records/", body, content_type="application/x-ndjson")
    error = assert_envelope(response, 400, "malformed_request")
    assert "Line 2" in error["message"]
    nothing_written()


def test_an_ndjson_line_nested_too_deep(alice_client: APIClient, session: None) -> None:
    line = json.dumps({"type": "user", "content": "x", "metadata": nested(300)})
    response = alice_client.post(
        S + "s1/records/", line.encode(), content_type="application/x-ndjson"
    )
    assert_envelope(response, 400, "malformed_request")
    nothing_written()


@pytest.mark.parametrize(
    "content", [[["a", ["b"]]], [[[[]]]], ["plain string block"]], ids=["nested", "empty", "str"]
)
def test_record_content_of_nested_lists(
    alice_client: APIClient, session: None, content: Any
) -> None:
    for record_type in ("user", "tool_result"):
        body = [{"type": record_type, "content": content, "tool_use_id": "t1"}]
        response = alice_client.post(S + "s1/records/", body, format="json")
        error = assert_envelope(response, 400, "validation_error")
        assert "must be an object, got" in json.dumps(error["details"])
    nothing_written()


@pytest.mark.parametrize("value", ["false", "true", 0, 1, "no"])
def test_is_error_must_be_a_boolean(alice_client: APIClient, session: None, value: Any) -> None:
    body = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": value}]
    response = alice_client.post(S + "s1/records/", body, format="json")
    error = assert_envelope(response, 400, "validation_error")
    assert "is_error" in json.dumps(error["details"])
    nothing_written()


def test_is_error_false_is_stored_false(alice_client: APIClient, session: None) -> None:
    body = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": False}]
    assert alice_client.post(S + "s1/records/", body, format="json").status_code == 201
    assert SessionRecord.objects.get().is_error is False


# --- a missing trailing slash, and CSRF, under /api/ -----------------------------------------


def token_client_enforcing_csrf(raw: str) -> APIClient:
    client = APIClient(enforce_csrf_checks=True)  # as a real server does
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def raw_token(alice: User, project: Project) -> str:
    from accounts.actors import Actor
    from accounts.services import token_create

    return token_create(user=alice, name="agent", actor=Actor(user=alice))[1]


def test_a_post_without_its_trailing_slash_reaches_the_endpoint(raw_token: str) -> None:
    client = token_client_enforcing_csrf(raw_token)
    body = {"kind": "fact", "content": "We deploy on Fridays."}
    response = client.post(P + "memories", body, format="json")
    assert response.status_code == 201, response.content
    assert response["Content-Type"].startswith("application/json")
    assert Memory.objects.get().content == "We deploy on Fridays."
    assert client.get(P + "memories").json()["count"] == 1
    # …/sessions/s1 is a session (GET, DELETE): a POST there is a 405 in the envelope.
    assert_envelope(client.post(S + "s1", {}, format="json"), 405, "method_not_allowed")


def test_an_unknown_path_without_a_slash_is_a_json_404(raw_token: str) -> None:
    client = token_client_enforcing_csrf(raw_token)
    assert_envelope(client.post("/api/v1/nothing-here", {}, format="json"), 404, "not_found")
    assert_envelope(bearer_client(raw_token).delete(P + "memories"), 405, "method_not_allowed")


def test_a_csrf_failure_under_api_answers_in_the_envelope() -> None:
    request = RequestFactory().post("/api/v1/projects/alpha/memories/")
    response = csrf_failure(request, reason="CSRF cookie not set.")
    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    error = json.loads(response.content)["error"]
    assert error["code"] == "csrf_failed" and "CSRF cookie not set." in error["message"]
    page = csrf_failure(RequestFactory().post("/admin/login/"), reason="x")
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


def test_a_browser_post_without_csrf_gets_the_envelope(alice: User, project: Project) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(P + "memories", {"kind": "fact", "content": "x"}, format="json")
    error = assert_envelope(response, 403, "permission_denied")
    assert "CSRF" in error["message"]
    nothing_written()
