"""llm.complete_json(): extraction, validation, one repair, then a recorded failure."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.llm import client as llm
from tests.fake_llm import FakeLlm
from tests.llm.common import ask, calls

pytestmark = pytest.mark.django_db


def summary_shape(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    if not isinstance(data["memory_md"], str) or not data["memory_md"]:
        raise ValueError("memory_md must be a non-empty string")
    return data


def test_it_returns_validated_json(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    fake_llm.reply('Here you go:\n```json\n{"memory_md": "# Notes"}\n```')

    assert llm.complete_json(ask(), validate=summary_shape) == {"memory_md": "# Notes"}
    assert len(fake_llm.requests) == 1
    assert calls()[0].outcome == "ok"


def test_it_repairs_a_malformed_answer_once(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    fake_llm.reply('{"memory_md": "# Notes",}')  # trailing comma
    fake_llm.reply('{"memory_md": "# Notes"}')

    data = llm.complete_json(ask("Consolidate.", purpose="stage2"), validate=summary_shape)

    assert data == {"memory_md": "# Notes"}
    assert len(fake_llm.requests) == 2
    repair = fake_llm.requests[1].messages
    assert repair[:2] == fake_llm.requests[0].messages + [
        {"role": "assistant", "content": '{"memory_md": "# Notes",}'}
    ]
    assert repair[2]["role"] == "user"
    assert "not valid JSON" in repair[2]["content"]
    assert "only the corrected JSON" in repair[2]["content"]
    first, second = calls()
    assert (first.outcome, second.outcome) == ("invalid_output", "ok")
    assert first.purpose == second.purpose == "stage2"


def test_it_repairs_a_wrong_shape_with_the_validators_message(
    fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings)
    fake_llm.reply('{"summary": "# Notes"}')
    fake_llm.reply('{"memory_md": "# Notes"}')

    assert llm.complete_json(ask(), validate=summary_shape)["memory_md"] == "# Notes"
    assert "the key 'memory_md' is missing" in fake_llm.requests[1].messages[-1]["content"]


def test_it_fails_after_a_second_invalid_answer(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    fake_llm.reply("I cannot do that.")
    fake_llm.reply('{"memory_md": ""}')

    with pytest.raises(llm.LlmInvalidOutput, match="memory_md must be a non-empty") as raised:
        llm.complete_json(ask(), validate=summary_shape)

    assert len(fake_llm.requests) == 2
    first, second = calls()
    assert first.outcome == second.outcome == "invalid_output"
    assert second.pk == raised.value.call_id
    assert second.error == "memory_md must be a non-empty string"
    assert first.tokens_in == 100  # the answered calls keep their real token counts


def test_it_validates_the_offline_answer_too(settings: Any) -> None:
    settings.LLM_PROVIDER = "offline"

    good = ask(offline=lambda: '{"memory_md": "# Offline"}')
    assert llm.complete_json(good, validate=summary_shape) == {"memory_md": "# Offline"}

    with pytest.raises(llm.LlmInvalidOutput, match="offline answer is invalid"):
        llm.complete_json(ask(offline=lambda: "[1, 2]"), validate=summary_shape)
    assert [c.outcome for c in calls()] == ["ok", "invalid_output"]  # no pointless repair


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", [1, 2]),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! {"a": {"b": 2}} Hope this helps.', {"a": {"b": 2}}),
    ],
)
def test_it_extracts_json_from_an_answer(text: str, expected: Any) -> None:
    assert llm.extract_json(text) == expected


def test_it_raises_when_an_answer_holds_no_json() -> None:
    with pytest.raises(ValueError, match="Expecting value"):
        llm.extract_json("no json here")
