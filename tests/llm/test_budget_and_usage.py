"""The per-project daily token budget and GET /api/v1/projects/{slug}/llm/usage/."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.llm import client as llm
from memoryhub.llm.models import LlmCall
from projects.models import Project
from tests.fake_llm import FakeLlm
from tests.llm.common import ask, calls

pytestmark = [pytest.mark.django_db]

USAGE = "/api/v1/projects/alpha/llm/usage/"


def test_it_stops_a_project_at_its_daily_budget(
    fake_llm: FakeLlm, settings: Any, project: Project, alice_client: APIClient
) -> None:
    fake_llm.configure(settings, daily_token_budget=100, smol_model="fake-smol")
    fake_llm.reply("first", tokens_in=90, tokens_out=15)

    llm.complete(ask(project=project, purpose="extraction"))
    with pytest.raises(llm.LlmBudgetExhausted) as raised:
        llm.complete(ask(project=project, purpose="extraction"))

    assert str(raised.value) == (
        'Project "alpha": daily token budget of 100 exhausted (105 used today); '
        "resets at 00:00 UTC."
    )
    assert len(fake_llm.requests) == 1  # the second call never left the server
    assert [c.outcome for c in calls(project)] == ["ok", "budget_exhausted"]
    assert calls(project)[1].pk == raised.value.call_id

    body = alice_client.get(USAGE).json()
    assert body["state"] == "budget_exhausted"
    assert body["daily_token_budget"] == 100
    assert body["budget_used"] == 105
    assert body["provider"] == "openai"
    assert body["models"] == {"default": "fake-default", "smol": "fake-smol"}
    assert body["today"] == {"tokens_in": 90, "tokens_out": 15, "calls": 2, "errors": 1}
    newest, oldest = body["recent_calls"]
    assert newest["outcome"] == "budget_exhausted"
    assert "resets at 00:00 UTC" in newest["error"]
    assert oldest == {
        "purpose": "extraction",
        "role": "default",
        "provider": "openai",
        "model": "fake-default",
        "tokens_in": 90,
        "tokens_out": 15,
        "latency_ms": oldest["latency_ms"],
        "outcome": "ok",
        "error": "",
        "created_at": oldest["created_at"],
    }


def test_it_counts_only_todays_paid_tokens(
    fake_llm: FakeLlm, settings: Any, project: Project
) -> None:
    fake_llm.configure(settings, daily_token_budget=100)
    settings.LLM_PROVIDER = "offline"
    llm.complete(ask("x" * 1000, project=project))  # ~250 estimated tokens, but free
    settings.LLM_PROVIDER = "openai"
    fake_llm.reply("yesterday", tokens_in=500)
    yesterday = llm.complete(ask(project=project))
    LlmCall.objects.filter(pk=yesterday.call_id).update(
        created_at=timezone.now() - timedelta(days=1)
    )
    fake_llm.reply("today")

    assert llm.complete(ask(project=project)).text == "today"


def test_it_never_blocks_offline_calls(settings: Any, project: Project) -> None:
    settings.LLM_PROVIDER = "offline"
    settings.LLM_DAILY_TOKEN_BUDGET = 1

    for _ in range(3):
        llm.complete(ask("x" * 100, project=project))
    assert [c.outcome for c in calls(project)] == ["ok", "ok", "ok"]


def test_it_lets_a_project_lower_but_not_lift_the_budget(
    settings: Any, project: Project, alice_client: APIClient
) -> None:
    settings.LLM_DAILY_TOKEN_BUDGET = 1000
    for project_budget, effective in [(10, 10), (5000, 1000), (0, 1000)]:
        alice_client.patch(
            "/api/v1/projects/alpha/",
            {"settings": {"llm": {"daily_token_budget": project_budget}}},
            format="json",
        )
        assert alice_client.get(USAGE).json()["daily_token_budget"] == effective


def test_it_shows_usage_to_members_and_read_only_tokens(
    project: Project,
    bob_client: APIClient,
    alice: User,
    make_client: Callable[..., APIClient],
) -> None:
    llm.complete(ask(project=project))
    for client in [bob_client, make_client(alice, project=project, read_only=True)]:
        response = client.get(USAGE)
        assert response.status_code == 200
        body = response.json()
        assert body["provider"] == "offline"
        assert body["models"] == {"default": "offline", "smol": "offline"}
        assert body["state"] == "ok"
        assert body["daily_token_budget"] is None
        assert body["today"]["calls"] == 1
        assert len(body["recent_calls"]) == 1


def test_it_shows_only_the_last_20_calls(project: Project, alice_client: APIClient) -> None:
    for i in range(22):
        llm.complete(ask(project=project, purpose=f"p{i}"))
    recent = alice_client.get(USAGE).json()["recent_calls"]
    assert [c["purpose"] for c in recent] == [f"p{i}" for i in range(21, 1, -1)]


def test_it_shows_a_misconfigured_project(project: Project, alice_client: APIClient) -> None:
    # Stored before settings were checked on save: the usage page still explains them.
    project.settings = {"llm": {"timeout_seconds": -1}}
    project.save(update_fields=["settings"])
    body = alice_client.get(USAGE).json()
    assert body["state"] == "misconfigured"
    assert "timeout_seconds must be a number of seconds > 0" in body["config_error"]


def test_it_rejects_outsider(project: Project, charlie_client: APIClient) -> None:
    response = charlie_client.get(USAGE)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_requires_credentials(project: Project) -> None:
    assert APIClient().get(USAGE).status_code == 401
