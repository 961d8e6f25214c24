"""The pure parts of seed 000 §1–2: chain validation, round trips, tail selection, trimming."""

from __future__ import annotations

from typing import Any

from memoryhub.sessions import compaction
from memoryhub.sessions.conf import SessionConfig
from memoryhub.sessions.conversation import (
    estimate_tokens,
    messages_to_records,
    records_to_messages,
    valid_prefix_length,
)
from memoryhub.sessions.records import RecordInput
from memoryhub.sessions.trimming import TrimState, apply_tool_result_budget

CONFIG = SessionConfig()


def tool_call(call_id: str, name: str = "Bash", **args: Any) -> RecordInput:
    return RecordInput(
        type="assistant",
        content=[
            {"type": "text", "text": f"Running {name}."},
            {"type": "tool_use", "id": call_id, "name": name, "input": args},
        ],
    )


def result(call_id: str, text: Any = "ok", error: bool = False) -> RecordInput:
    return RecordInput(type="tool_result", content=text, tool_use_id=call_id, is_error=error)


def fields(records: list[RecordInput]) -> list[tuple[Any, ...]]:
    return [(r.type, r.content, r.tool_use_id, r.is_error) for r in records]


def test_records_round_trip_through_messages_losslessly() -> None:
    records = [
        RecordInput(type="user", content="Fix the failing test"),
        tool_call("t1", command="pytest -x"),
        result("t1", "1 failed", error=True),
        tool_call("t2", "Read", file_path="app/models.py"),
        RecordInput(
            type="assistant",
            content=[
                {"type": "tool_use", "id": "t3", "name": "Edit", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "t4", "name": "Bash", "input": {"command": "ls"}},
            ],
        ),
        result("t3", [{"type": "text", "text": "edited"}]),
        result("t4", "a.py b.py"),
        RecordInput(type="assistant", content="Fixed."),
    ]
    messages = records_to_messages(records)
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "assistant",
        "user",
        "assistant",
    ]
    assert len(messages[5]["content"]) == 2  # consecutive results → one user message
    assert fields(messages_to_records(messages)) == fields(records)


def test_a_dangling_tool_use_and_everything_after_it_are_not_replayed() -> None:
    records = [
        RecordInput(type="user", content="go"),
        tool_call("t1"),
        result("t1"),
        tool_call("t2"),  # the agent crashed before the result came back
        RecordInput(type="user", content="hello?"),
    ]
    assert valid_prefix_length(records) == 3
    assert valid_prefix_length(records[:3]) == 3
    assert valid_prefix_length([]) == 0


def msg(role: str, chars: int) -> dict[str, Any]:
    return {"role": role, "content": "x" * chars}


def test_tail_keeps_five_messages_or_ten_thousand_tokens_whichever_first() -> None:
    small = [msg("user" if i % 2 == 0 else "assistant", 350) for i in range(20)]  # 100 tok each
    assert compaction.keep_start_index(small, CONFIG) == 15  # five messages
    big = [msg("user", 36_000) for _ in range(6)]  # ~10,285 tokens each
    assert compaction.keep_start_index(big, CONFIG) == 5  # the first one already has 10k
    huge = [msg("user", 350), msg("assistant", 200_000)]  # newest alone > 40k: still kept
    assert compaction.keep_start_index(huge, CONFIG) == 1


def test_tail_never_starts_with_an_orphan_tool_result() -> None:
    records = [RecordInput(type="user", content="u" * 35_000)] * 3 + [
        tool_call("t1", command="make"),
        result("t1", "r" * 36_000),
    ]
    messages = records_to_messages(records)
    start = compaction.keep_start_index(messages, CONFIG)
    assert messages[start]["role"] == "assistant"  # moved back onto the tool_use


def test_offline_summary_has_the_nine_sections() -> None:
    records = [
        RecordInput(type="user", content="Add retries to src/client.py\nTODO: update docs"),
        tool_call("t1", "Bash", command="pytest tests/test_client.py"),
        result("t1", "ConnectionError: refused\nmore", error=True),
        RecordInput(type="assistant", content="I added a retry loop in src/client.py."),
        RecordInput(type="user", content="Now run the whole suite"),
    ]
    summary = compaction.extract_summary(compaction.offline_summary(records_to_messages(records)))
    for i, title in enumerate(compaction.SECTION_TITLES, 1):
        assert f"{i}. {title}" in summary
    assert "1. Add retries to src/client.py\nTODO: update docs" in summary  # verbatim
    assert "2. Now run the whole suite" in summary
    assert "src/client.py" in summary and "pytest tests/test_client.py" in summary
    assert "ConnectionError: refused" in summary
    assert "- TODO: update docs" in summary
    assert summary.rstrip().endswith("Now run the whole suite")


def url(tool_id: str) -> str:
    return f"https://hub/artifacts/{tool_id}/"


def test_pass_one_persists_single_large_results_and_freezes_the_decision() -> None:
    big = "B" * 60_000
    messages = records_to_messages(
        [tool_call("t1"), result("t1", big), tool_call("t2"), result("t2", "small")]
    )
    state = TrimState()
    out, new = apply_tool_result_budget(messages, state, CONFIG, url)
    replaced = out[1]["content"][0]["content"]
    assert replaced.startswith("<persisted-output>") and "https://hub/artifacts/t1/" in replaced
    assert "B" * 2000 in replaced and "B" * 2001 not in replaced
    assert new.persisted["t1"][1] == big and new.verbatim == ["t2"]
    assert messages[1]["content"][0]["content"] == big  # input untouched
    again, newer = apply_tool_result_budget(messages, state, CONFIG, url)
    assert again == out and not newer.persisted and not newer.verbatim


def test_pass_two_trims_the_largest_results_of_a_message_first() -> None:
    sizes = {"a": 45_000, "b": 49_000, "c": 48_000, "d": 47_000, "e": 30_000}
    calls = RecordInput(
        type="assistant",
        content=[{"type": "tool_use", "id": k, "name": "Read", "input": {}} for k in sizes],
    )
    messages = records_to_messages([calls] + [result(k, k * n) for k, n in sizes.items()])
    out, new = apply_tool_result_budget(messages, TrimState(), CONFIG, url)
    assert set(new.persisted) == {"b"}  # 219k → 172k after the largest goes
    total = sum(len(b["content"]) for b in out[1]["content"])
    assert total <= CONFIG.aggregate_char_limit


def test_seen_results_stay_verbatim_even_when_a_message_grows() -> None:
    state = TrimState(verbatim={"a"})
    messages = records_to_messages([tool_call("a"), result("a", "x" * 49_000)])
    out, new = apply_tool_result_budget(messages, state, CONFIG, url)
    assert out[1]["content"][0]["content"] == "x" * 49_000 and not new.persisted


def test_pass_three_snips_results_older_than_the_recent_turns() -> None:
    records: list[RecordInput] = []
    for turn in range(12):
        records += [
            RecordInput(type="user", content=f"task {turn}"),
            tool_call(f"t{turn}"),
            result(f"t{turn}", f"{turn}" * 3000),
            RecordInput(type="assistant", content=f"done {turn}"),
        ]
    out, _ = apply_tool_result_budget(records_to_messages(records), TrimState(), CONFIG, url)
    results = [
        m["content"][0]["content"]
        for m in out
        if m["role"] == "user" and isinstance(m["content"], list)
    ]
    snipped = [r.startswith("<snipped>") for r in results]
    # 12 completed turns: the results of the first three are outside the last 9 turns' window.
    assert snipped == [True] * 3 + [False] * 9
    assert "(old result trimmed, original length 3000 chars)" in results[0]


def test_token_estimate_counts_text_tool_inputs_and_results() -> None:
    messages = records_to_messages([tool_call("t1", command="x" * 100), result("t1", "y" * 250)])
    expected = len("Running Bash.") + len("Bash") + len('{"command": "' + "x" * 100 + '"}') + 250
    assert estimate_tokens(messages) == int(expected / 3.5)


def test_a_second_offline_compaction_carries_the_first_summary_forward_once() -> None:
    first = compaction.extract_summary(
        compaction.offline_summary(
            records_to_messages(
                [
                    RecordInput(type="user", content="Build the importer for app/importers.py"),
                    tool_call("t1", "Bash", command="pytest -q"),
                    result("t1", "ImportError: no module named x", error=True),
                    RecordInput(type="assistant", content="Fixed the import."),
                ]
            )
        )
    )
    continuation = {"role": "user", "content": compaction.CONTINUATION_HEADER + first}
    second = compaction.extract_summary(
        compaction.offline_summary(
            [
                continuation,
                {"role": "user", "content": "Now add tests for app/importers.py"},
                {"role": "assistant", "content": "Added tests."},
            ]
        )
    )
    assert second.count("Build the importer for app/importers.py") == 2  # sections 1 and 6
    assert "1. Build the importer for app/importers.py\n2. Now add tests" in second
    assert "ImportError: no module named x" in second and "- pytest -q" not in second
    assert compaction.CONTINUATION_HEADER not in second
    assert len(second) < 2 * len(first)
    # Compacted again with nothing new: the conclusions, current work and next step stand.
    third = compaction.extract_summary(
        compaction.offline_summary(
            [{"role": "user", "content": compaction.CONTINUATION_HEADER + second}]
        )
    )
    sections = compaction.previous_sections(compaction.CONTINUATION_HEADER + third)
    before = compaction.previous_sections(compaction.CONTINUATION_HEADER + second)
    assert [sections[i] for i in (5, 8, 9)] == [before[i] for i in (5, 8, 9)]
    assert sections[5] == "- Added tests." and sections[9] == "Now add tests for app/importers.py"
