"""Project settings are checked when saved (issue 9): a bad value answers 400 naming it and
nothing is stored, instead of every later job failing."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from projects.models import Project

P = "/api/v1/projects/alpha/"


def patch(client: APIClient, settings: dict[str, Any]) -> Any:
    return client.patch(P, {"settings": settings}, format="json")


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"review_required": "yes"}, "review_required"),
        ({"review_required": 1}, "review_required"),
        ({"llm": {"provider": "bogus"}}, "llm.provider"),
        (
            {"llm": {"provider": "openai", "base_url": "http://169.254.169.254/latest"}},
            "llm.base_url",
        ),
        ({"llm": {"base_url": "http://[fe80::1]/v1", "model": "m"}}, "llm.base_url"),
        ({"llm": {"base_url": "http://metadata.google.internal/v1", "model": "m"}}, "llm.base_url"),
        ({"llm": {"base_url": "ftp://llm.example/v1", "model": "m"}}, "llm.base_url"),
        ({"llm": {"base_url": "https://attacker.example/v1", "model": "m"}}, "llm.base_url"),
        ({"llm": {"timeout_seconds": "fast"}}, "llm.timeout_seconds"),
        ({"llm": {"api_key": "sk-mine"}}, "llm.api_key"),
        ({"llm": {"temperature": 0}}, "temperature"),
        ({"llm": "openai"}, "llm must be a JSON object"),
        ({"llm": {"provider": "anthropic"}}, "llm:"),  # hosted API without an allowed base_url
        ({"reviews_required": True}, "Unknown project setting 'reviews_required'"),
        ({"pipeline": {"summary_injection_token_limit": 10}}, "recall.summary_injection"),
        ({"recall": {"summary_injection_token_limit": 1.5}}, "recall.summary_injection"),
    ],
)
def test_it_refuses_bad_settings_when_saved_naming_them(
    alice_client: APIClient, project: Project, bad: dict[str, Any], named: str, settings: Any
) -> None:
    settings.LLM_ALLOWED_BASE_URLS = ["http://169.254.169.254/latest", "http://[fe80::1]/v1"]
    response = patch(alice_client, bad)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert named in error["message"], error
    assert error["details"]["settings"]
    project.refresh_from_db()
    assert project.settings == {}


def test_it_accepts_good_settings(alice_client: APIClient, project: Project, settings: Any) -> None:
    settings.LLM_ALLOWED_BASE_URLS = ["http://127.0.0.1:11434/v1"]
    good = {
        "review_required": True,
        "llm": {"provider": "openai", "base_url": "http://127.0.0.1:11434/v1", "model": "qwen"},
        "recall": {"summary_injection_token_limit": 100},
        "pipeline": {"stage1_concurrency": 2},
    }
    response = patch(alice_client, good)
    assert response.status_code == 200, response.content
    project.refresh_from_db()
    assert project.settings == good
