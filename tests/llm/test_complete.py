"""llm.complete() against the fake server over real HTTP: models per role, per-project
overrides, both SDKs, the offline default, and how failures surface and are logged."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memoryhub.llm import client as llm
from memoryhub.llm.models import LlmCall
from projects.models import Project
from tests.fake_llm import API_KEY, FakeLlm
from tests.llm.common import OFFLINE_ANSWER, ask, calls

pytestmark = pytest.mark.django_db


def store_llm_settings_unchecked(project: Project, llm_settings: dict[str, Any]) -> None:
    """Settings saved before they were checked on save (or written to the database by hand):
    the call-time check must still refuse them."""
    project.settings = {"llm": llm_settings}
    project.save(update_fields=["settings"])


def set_llm_settings(client: APIClient, project: Project, llm_settings: dict[str, Any]) -> None:
    response = client.patch(
        f"/api/v1/projects/{project.slug}/", {"settings": {"llm": llm_settings}}, format="json"
    )
    assert response.status_code == 200, response.json()
    project.refresh_from_db()


def test_it_completes_with_the_default_model(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, smol_model="fake-smol")
    fake_llm.reply("The answer.", tokens_in=120, tokens_out=7)

    result = llm.complete(ask("Question?", system="Be brief.", purpose="compaction"))

    assert (result.text, result.provider, result.model) == ("The answer.", "openai", "fake-default")
    assert (result.tokens_in, result.tokens_out) == (120, 7)
    [sent] = fake_llm.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.model == "fake-default"
    assert sent.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Question?"},
    ]
    assert sent.body["max_tokens"] == 4096
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    [call] = calls()
    assert call.pk == result.call_id
    assert (call.purpose, call.role, call.provider, call.model) == (
        "compaction",
        "default",
        "openai",
        "fake-default",
    )
    assert (call.tokens_in, call.tokens_out, call.outcome, call.error) == (120, 7, "ok", "")
    assert call.latency_ms >= 0


def test_it_uses_the_smol_model_for_role_smol(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, smol_model="fake-smol")
    fake_llm.reply("ok")

    result = llm.complete(ask(role="smol", max_tokens=50))

    assert result.model == "fake-smol"
    assert fake_llm.requests[0].model == "fake-smol"
    assert fake_llm.requests[0].body["max_tokens"] == 50
    assert calls()[0].role == "smol"


def test_it_falls_back_from_smol_to_the_default_model(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, smol_model="")
    fake_llm.reply("ok")

    result = llm.complete(ask(role="smol"))

    assert result.model == "fake-default"
    assert fake_llm.requests[0].model == "fake-default"


def test_it_applies_a_projects_model_override(
    fake_llm: FakeLlm, settings: Any, project: Project, alice_client: APIClient
) -> None:
    fake_llm.configure(settings, smol_model="fake-smol")
    set_llm_settings(alice_client, project, {"model": "alpha-big", "timeout_seconds": 3})
    fake_llm.reply("one")
    fake_llm.reply("two")

    llm.complete(ask(project=project))
    llm.complete(ask(project=project, role="smol"))

    assert [r.model for r in fake_llm.requests] == ["alpha-big", "fake-smol"]
    assert [c.model for c in calls(project)] == ["alpha-big", "fake-smol"]


def test_it_applies_a_projects_provider_override_without_sending_the_server_key(
    fake_llm: FakeLlm, settings: Any, project: Project, alice_client: APIClient
) -> None:
    fake_llm.configure(settings, provider="openai")
    settings.LLM_ALLOWED_BASE_URLS = [fake_llm.root]
    set_llm_settings(
        alice_client,
        project,
        {"provider": "anthropic", "base_url": fake_llm.root, "model": "claude-alpha"},
    )
    fake_llm.reply("from anthropic")

    result = llm.complete(ask(project=project, role="smol"))

    assert (result.provider, result.model, result.text) == (
        "anthropic",
        "claude-alpha",
        "from anthropic",
    )
    [sent] = fake_llm.requests
    assert sent.path == "/v1/messages"
    assert sent.model == "claude-alpha"
    # The global key belongs to the server's own endpoint only.
    assert API_KEY not in str(sent.headers)


def test_it_refuses_a_project_base_url_the_operator_did_not_allow(
    fake_llm: FakeLlm, settings: Any, project: Project, alice_client: APIClient
) -> None:
    fake_llm.configure(settings)
    store_llm_settings_unchecked(project, {"base_url": "http://attacker.example/v1", "model": "m"})

    with pytest.raises(llm.LlmMisconfigured, match="base_url is not one of the server's"):
        llm.complete(ask(project=project))

    assert fake_llm.requests == []
    [call] = calls(project)
    assert (call.outcome, call.provider) == ("error", "")
    assert "base_url" in call.error


@pytest.mark.parametrize(
    ("llm_settings", "message"),
    [
        ({"timeout_seconds": "fast"}, "timeout_seconds must be a number"),
        ({"provider": "gpt"}, "provider must be one of"),
        ({"api_key": "sk-mine"}, "api_key cannot be set per project"),
        ({"temperature": 0}, "unknown key 'temperature'"),
        ({"daily_token_budget": True}, "daily_token_budget must be an integer"),
    ],
)
def test_it_rejects_malformed_project_settings(
    fake_llm: FakeLlm,
    settings: Any,
    project: Project,
    alice_client: APIClient,
    llm_settings: dict[str, Any],
    message: str,
) -> None:
    fake_llm.configure(settings)
    store_llm_settings_unchecked(project, llm_settings)

    with pytest.raises(llm.LlmMisconfigured, match=message):
        llm.complete(ask(project=project))
    assert fake_llm.requests == []


def test_it_talks_to_the_anthropic_messages_api(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, provider="anthropic", model="claude-fake")
    fake_llm.reply("Bonjour.", tokens_in=33, tokens_out=4)

    result = llm.complete(ask("Say hello in French.", system="You translate.", max_tokens=64))

    assert (result.text, result.provider, result.model) == ("Bonjour.", "anthropic", "claude-fake")
    assert (result.tokens_in, result.tokens_out) == (33, 4)
    [sent] = fake_llm.requests
    assert sent.path == "/v1/messages"
    assert sent.body["system"] == "You translate."
    assert sent.messages == [{"role": "user", "content": "Say hello in French."}]
    assert sent.body["max_tokens"] == 64
    assert API_KEY in str(sent.headers)
    assert calls()[0].tokens_in == 33


def test_it_answers_offline_by_default_without_any_request(
    fake_llm: FakeLlm, settings: Any, project: Project
) -> None:
    assert llm.resolve_config(None, "default").provider == "offline"  # the shipped default
    fake_llm.configure(settings, provider="offline")

    result = llm.complete(ask("x" * 40, project=project))

    assert (result.text, result.provider, result.model) == (OFFLINE_ANSWER, "offline", "offline")
    assert (result.tokens_in, result.tokens_out) == (10, 4)  # ceil(chars / 4)
    assert fake_llm.requests == []
    assert calls(project)[0].outcome == "ok"


def test_it_retries_after_a_429(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, max_retries=2)
    fake_llm.fail(429)
    fake_llm.reply("finally")

    assert llm.complete(ask()).text == "finally"
    assert len(fake_llm.requests) == 2
    assert calls()[0].outcome == "ok"


def test_it_gives_up_on_a_persistent_500_after_the_retries(
    fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=2)
    fake_llm.fail(500, times=10, message="upstream exploded")

    with pytest.raises(llm.LlmUnavailable, match="HTTP 500 .3 attempts.: upstream exploded"):
        llm.complete(ask())

    assert len(fake_llm.requests) == 3
    [call] = calls()
    assert call.outcome == "error"
    assert "upstream exploded" in call.error


def test_it_times_out(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, timeout=0.5, max_retries=0)
    fake_llm.delay(2, "too late")

    with pytest.raises(llm.LlmTimeout, match=r"did not answer within 0.5 s") as raised:
        llm.complete(ask())

    assert isinstance(raised.value, llm.LlmUnavailable)
    assert len(fake_llm.requests) == 1
    [call] = calls()
    assert call.pk == raised.value.call_id
    assert call.outcome == "timeout"
    assert 400 <= call.latency_ms < 2000


def test_it_lets_a_request_shorten_the_timeout(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings, timeout=30, max_retries=0)
    fake_llm.delay(2, "too late")

    with pytest.raises(llm.LlmTimeout, match="within 0.3 s"):
        llm.complete(ask(timeout=0.3))


def test_it_reports_a_rejected_key_as_unavailable(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    fake_llm.fail(401, message="Incorrect API key provided")

    with pytest.raises(llm.LlmUnavailable, match="HTTP 401: Incorrect API key"):
        llm.complete(ask())
    assert len(fake_llm.requests) == 1  # the SDK does not retry a 401


def test_it_reports_a_bad_request_as_a_plain_error(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    fake_llm.fail(400, message="maximum context length exceeded")

    with pytest.raises(llm.LlmError, match="context length") as raised:
        llm.complete(ask())
    assert not isinstance(raised.value, llm.LlmUnavailable)


def test_it_reports_a_base_url_that_is_not_an_llm_server(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    fake_llm.raw(200, "<html>Welcome to nginx!</html>", content_type="text/html")

    with pytest.raises(llm.LlmError, match="is the base URL right"):
        llm.complete(ask())
    assert calls()[0].outcome == "error"


def test_it_reports_an_unreachable_server(settings: Any) -> None:
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    settings.LLM_MODEL = "m"
    settings.LLM_MAX_RETRIES = 0

    with pytest.raises(llm.LlmUnavailable, match="Cannot reach openai at http://127.0.0.1:9/v1"):
        llm.complete(ask())
    assert calls()[0].outcome == "error"


def test_it_records_a_failing_offline_answer_and_lets_it_propagate(settings: Any) -> None:
    settings.LLM_PROVIDER = "offline"

    def broken() -> str:
        raise RuntimeError("bug in the caller")

    with pytest.raises(RuntimeError, match="bug in the caller"):
        llm.complete(ask(offline=broken))
    [call] = calls()
    assert call.outcome == "error"
    assert "bug in the caller" in call.error


def test_it_rejects_a_malformed_request_before_calling(settings: Any) -> None:
    with pytest.raises(ValueError, match="role"):
        llm.complete(ask(role="huge"))
    with pytest.raises(ValueError, match="messages"):
        llm.complete(llm.LlmRequest(purpose="x", messages=[], offline=lambda: ""))
    assert LlmCall.objects.count() == 0


def test_it_fails_clearly_when_the_fake_has_no_scripted_reply(
    fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings)

    with pytest.raises(llm.LlmUnavailable, match="fake_llm: no scripted reply for POST"):
        llm.complete(ask())
    assert len(fake_llm.requests) == 1  # told the SDK not to retry
