from __future__ import annotations

import re
from typing import Any

from rest_framework.test import APIClient

from memoryhub.core.models import AuditEvent
from memoryhub.sessions.models import SessionRecord, ToolResultDecision

S = "/api/v1/projects/alpha/sessions/"


def start(client: APIClient, records: list[dict[str, Any]], ref: str = "s1") -> None:
    client.post(S, {"external_id": ref}, format="json")
    response = client.post(f"{S}{ref}/records/", records, format="json")
    assert response.status_code == 201, response.content


def turn(i: int, result_chars: int = 100, text: str = "") -> list[dict[str, Any]]:
    return [
        {"type": "user", "content": text or f"Step {i}: edit module_{i}.py"},
        {
            "type": "assistant",
            "content": [
                {"type": "text", "text": f"Reading module_{i}.py"},
                {
                    "type": "tool_use",
                    "id": f"call_{i}",
                    "name": "Read",
                    "input": {"file_path": f"src/module_{i}.py"},
                },
            ],
        },
        {"type": "tool_result", "tool_use_id": f"call_{i}", "content": "r" * result_chars},
        {"type": "assistant", "content": f"Module {i} is updated."},
    ]


def test_resume_replays_records_as_messages(alice_client: APIClient) -> None:
    start(alice_client, [{"type": "system_prompt", "content": "sys"}, *turn(1)])
    body = alice_client.get(f"{S}s1/resume/").json()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "r" * 100, "is_error": False}
    ]
    assert body["boundary_index"] is None and body["dropped_records"] == 0


def test_resume_cuts_a_dangling_tool_use(alice_client: APIClient) -> None:
    start(
        alice_client,
        [
            *turn(1),
            {"type": "user", "content": "next"},
            {
                "type": "assistant",
                "content": [{"type": "tool_use", "id": "lost", "name": "Bash", "input": {}}],
            },
        ],
    )
    body = alice_client.get(f"{S}s1/resume/").json()
    assert len(body["messages"]) == 5 and body["dropped_records"] == 1
    assert SessionRecord.objects.count() == 6  # nothing is deleted


def test_resume_is_byte_identical_and_large_results_can_be_fetched(
    alice_client: APIClient, settings: Any
) -> None:
    settings.SITE_URL = "http://10.1.2.3:9123"  # `make run HOST=10.1.2.3 PORT=9123`
    big = "line of output\n" * 5000  # 75,000 chars: over the 50,000 single-result limit
    start(alice_client, [*turn(1), *turn(2, text="again")])
    alice_client.post(
        f"{S}s1/records/",
        [
            {
                "type": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "big",
                        "name": "Bash",
                        "input": {"command": "cat log"},
                    }
                ],
            },
            {"type": "tool_result", "tool_use_id": "big", "content": big},
        ],
        format="json",
    )
    first = alice_client.get(f"{S}s1/resume/")
    second = alice_client.get(f"{S}s1/resume/")
    assert first.content == second.content
    preview = first.json()["messages"][-1]["content"][0]["content"]
    assert preview.startswith("<persisted-output>") and len(preview) < 3000
    link = next(line for line in preview.splitlines() if "/tool-results/big/" in line)
    assert "http://10.1.2.3:9123/api/v1/projects/alpha/sessions/" in link
    fetched = alice_client.get(link.split("http://10.1.2.3:9123", 1)[1].strip())
    assert fetched.status_code == 200 and fetched.content.decode() == big
    assert ToolResultDecision.objects.exclude(artifact="").count() == 1


def test_compaction_advice_uses_the_source_thresholds(alice_client: APIClient) -> None:
    start(alice_client, turn(1))
    advice = alice_client.get(f"{S}s1/compaction/", {"context_window": 200_000}).json()
    assert advice["auto_threshold"] == 200_000 - 20_000 - 13_000
    assert advice["manual_threshold"] == 200_000 - 20_000 - 3_000
    assert advice["should_compact"] is False and advice["estimated"] is True
    told = alice_client.get(
        f"{S}s1/compaction/", {"context_window": 200_000, "current_tokens": 170_000}
    ).json()
    assert told["should_compact"] is True and told["current_tokens"] == 170_000
    bad = alice_client.get(f"{S}s1/compaction/", {"context_window": "lots"})
    assert bad.status_code == 400


def test_auto_compaction_waits_for_the_threshold(alice_client: APIClient) -> None:
    start(alice_client, turn(1))
    response = alice_client.post(f"{S}s1/compact/", {"context_window": 200_000}, format="json")
    assert response.status_code == 200
    assert response.json()["compacted"] is False
    assert response.json()["reason"] == "below_threshold"


def test_manual_compaction_offline_keeps_the_tail_and_summarises_the_rest(
    alice_client: APIClient,
) -> None:
    records = [r for i in range(1, 9) for r in turn(i, result_chars=3000)]
    start(alice_client, records)
    small = alice_client.post(
        f"{S}s1/compact/", {"context_window": 8_000, "mode": "manual"}, format="json"
    )
    assert small.status_code == 201, small.content
    body = small.json()
    assert body["compacted"] is True and body["kept_messages"] >= 1
    assert "1. Primary request and intent\nStep 1: edit module_1.py" in body["summary"]
    assert "src/module_3.py" in body["summary"]
    boundary = SessionRecord.objects.get(type="compact_boundary")
    assert boundary.index == body["boundary_index"] == len(records)
    resumed = alice_client.get(f"{S}s1/resume/").json()
    assert resumed["messages"][0]["content"].startswith("This session continues")
    assert len(resumed["messages"]) == 1 + body["kept_messages"]
    assert resumed["messages"][-1] == {"role": "assistant", "content": "Module 8 is updated."}
    assert resumed["replayed_from_index"] == boundary.index + 1
    assert body["tokens_after"] < body["current_tokens"]
    assert AuditEvent.objects.filter(verb="session.compacted").count() == 1
    # Records appended after the boundary are replayed after the kept tail.
    alice_client.post(f"{S}s1/records/", [{"type": "user", "content": "and now?"}], format="json")
    again = alice_client.get(f"{S}s1/resume/").json()["messages"]
    assert again[-1] == {"role": "user", "content": "and now?"}


def test_compaction_skips_a_small_prefix(alice_client: APIClient) -> None:
    start(alice_client, turn(1) + turn(2))
    response = alice_client.post(
        f"{S}s1/compact/", {"context_window": 8_000, "mode": "manual"}, format="json"
    )
    assert response.json() | {"compacted": False} == response.json()
    assert response.json()["reason"] == "prefix_too_small"
    assert not SessionRecord.objects.filter(type="compact_boundary").exists()


def long_session(client: APIClient) -> None:
    start(client, [r for i in range(1, 9) for r in turn(i, result_chars=3000)])


def test_compaction_through_an_llm_keeps_only_the_summary(
    alice_client: APIClient, fake_llm: Any, settings: Any
) -> None:
    fake_llm.configure(settings)
    long_session(alice_client)
    fake_llm.reply(
        "<analysis>scratch work</analysis>\n<summary>\n1. Primary request: edit "
        "modules\n</summary>",
        tokens_in=5000,
        tokens_out=40,
    )
    response = alice_client.post(
        f"{S}s1/compact/", {"context_window": 8_000, "mode": "manual"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["summary"] == "1. Primary request: edit modules"
    request = fake_llm.requests[-1]
    assert request.messages[0]["role"] == "system"
    assert "nine sections" in request.messages[0]["content"]
    assert "Step 1: edit module_1.py" in request.messages[1]["content"]
    usage = alice_client.get("/api/v1/projects/alpha/llm/usage/").json()
    assert usage["recent_calls"][0]["purpose"] == "compaction"
    assert usage["recent_calls"][0]["tokens_in"] == 5000


def test_a_too_long_prompt_drops_the_oldest_turns_and_retries(
    alice_client: APIClient, fake_llm: Any, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)
    long_session(alice_client)
    fake_llm.fail(400, message="prompt is too long: 250000 tokens > 200000 maximum")
    fake_llm.reply("<summary>shorter</summary>")
    response = alice_client.post(
        f"{S}s1/compact/", {"context_window": 8_000, "mode": "manual"}, format="json"
    )
    assert response.status_code == 201, response.content
    first, second = fake_llm.requests[-2:]
    assert "Step 1: edit module_1.py" in first.messages[1]["content"]
    assert "Step 1: edit module_1.py" not in second.messages[1]["content"]


def test_failed_summaries_are_errors_and_open_the_circuit_for_auto_compaction(
    alice_client: APIClient, fake_llm: Any, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)
    long_session(alice_client)
    for _ in range(3):
        fake_llm.fail(500)
        response = alice_client.post(
            f"{S}s1/compact/", {"context_window": 8_000, "mode": "manual"}, format="json"
        )
        assert response.status_code == 502, response.content
        assert response.json()["error"]["code"] == "compaction_failed"
    auto = alice_client.post(f"{S}s1/compact/", {"context_window": 8_000}, format="json")
    assert auto.status_code == 200 and auto.json()["reason"] == "circuit_open"
    fake_llm.reply("<summary>ok now</summary>")  # a manual compaction still runs, and closes it
    manual = alice_client.post(
        f"{S}s1/compact/", {"context_window": 8_000, "mode": "manual"}, format="json"
    )
    assert manual.status_code == 201
    assert SessionRecord.objects.filter(type="compact_boundary").count() == 1


def test_one_offline_compaction_brings_a_long_session_under_the_threshold(
    alice_client: APIClient,
) -> None:
    # 120 turns of long user messages: all of them verbatim were a summary larger than the
    # window, so the advice never cleared and every compaction stored another 300 KB boundary.
    records = [
        r
        for i in range(1, 121)
        for r in turn(i, result_chars=3000, text=f"Step {i}: edit module_{i}.py. " + "x" * 2400)
    ]
    for chunk in range(0, len(records), 200):
        if chunk == 0:
            start(alice_client, records[:200])
        else:
            more = alice_client.post(f"{S}s1/records/", records[chunk : chunk + 200], format="json")
            assert more.status_code == 201, more.content
    window = {"context_window": 100_000}
    assert alice_client.get(f"{S}s1/compaction/", window).json()["should_compact"] is True
    done = alice_client.post(f"{S}s1/compact/", window, format="json").json()
    assert done["compacted"] is True
    advice = alice_client.get(f"{S}s1/compaction/", window).json()
    assert advice["should_compact"] is False, advice
    summary = done["summary"]
    assert len(summary) <= 8192 * 3.5 + 200
    steps = [int(n) for n in re.findall(r"Step (\d+): edit", summary)]
    assert max(steps) >= 110 and 1 in steps  # the first request, and the latest summarised
    assert "earlier lines of user messages are in the transcript." in summary
    # Compacting again (nothing new) keeps the conclusions, current work and next step.
    again = alice_client.post(f"{S}s1/compact/", {**window, "mode": "manual"}, format="json").json()
    assert again["compacted"] is True
    assert "(no assistant conclusions)" not in again["summary"]
    assert again["summary"].split("8. Current work\n")[1].split("\n\n9.")[0] != "(none)"
