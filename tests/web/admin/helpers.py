"""Data for the admin pages' tests, written through the API as agents write it."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

S = "/api/v1/projects/alpha/sessions/"

HOSTILE = (
    '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>'
)

TRANSCRIPT: list[dict[str, Any]] = [
    {"type": "system_prompt", "content": "You are a coding agent."},
    {
        "type": "user",
        "content": "<memoryhub-context>\n- Deploy with docker compose\n</memoryhub-context>\n"
        "Please fix the flaky test " + HOSTILE,
    },
    {
        "type": "assistant",
        "content": [
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x"}},
        ],
    },
    {"type": "tool_result", "tool_use_id": "t1", "content": "42 passed in 3.1s"},
    {"type": "compact_boundary", "content": {"summary": "We fixed the flaky test.", "keep": []}},
    {"type": "user", "content": "Never force-push to main."},
    {"type": "assistant", "content": "Understood."},
]


def push_session(client: APIClient, external_id: str = "s-1", *, end: bool = False) -> str:
    body = {"external_id": external_id, "title": "Fix " + HOSTILE}
    response = client.post(S, body, format="json")
    assert response.status_code == 201, response.content
    session_id = str(response.json()["id"])
    response = client.post(f"{S}{external_id}/records/", TRANSCRIPT, format="json")
    assert response.status_code == 201, response.content
    if end:
        assert client.post(f"{S}{external_id}/end/").status_code == 200
    return session_id


def assert_escaped(html: str) -> None:
    """No hostile markup from HOSTILE made it into the page unescaped."""
    assert "<script>alert(1)" not in html
    assert 'onerror="alert(2)"' not in html
    assert 'href="javascript:' not in html
    assert "&lt;script&gt;alert(1)" in html
