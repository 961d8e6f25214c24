"""Transcript parsers (pure Python, no database): format detection, the records each fixture
produces, malformed input, MewCode round trips, .meta parsing and the streaming memory bound."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from memoryhub.sessions.importers import (
    CLAUDE_CODE,
    MEWCODE,
    TranscriptFormatError,
    TranscriptInfo,
    detect_format,
    parse_mewcode_meta,
    parse_transcript,
)
from memoryhub.sessions.records import RecordInput

FIXTURES = Path(__file__).parent / "fixtures"
CC_FILE = "claude_code_session.jsonl"
MEW_FILE = "session_20260314_101502_k3p9.jsonl"
MODEL = "claude-sonnet-4-5-20250929"


def parse_file(name: str, info: TranscriptInfo | None = None, **kwargs: Any) -> list[RecordInput]:
    with (FIXTURES / name).open("rb") as f:
        return list(parse_transcript(f, info=info, **kwargs))


def parse_lines(*lines: str | bytes, **kwargs: Any) -> list[RecordInput]:
    raw = [line if isinstance(line, bytes) else line.encode() for line in lines]
    return list(parse_transcript([line + b"\n" for line in raw], **kwargs))


@cache
def fixture_line(name: str, n: int) -> dict[str, Any]:
    """Line n (1-based) of a fixture, parsed."""
    result: dict[str, Any] = json.loads(
        (FIXTURES / name).read_text(encoding="utf-8").splitlines()[n - 1]
    )
    return result


def cc(n: int) -> dict[str, Any]:
    return fixture_line(CC_FILE, n)


def mew(n: int) -> dict[str, Any]:
    return fixture_line(MEW_FILE, n)


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def failure(lines: list[bytes], **kwargs: Any) -> TranscriptFormatError:
    with pytest.raises(TranscriptFormatError) as caught:
        list(parse_transcript(lines, **kwargs))
    return caught.value


def j(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


# Minimal Claude Code lines for the behaviour tests below.
SID = "0b7e4c1a-5d2f-4a86-9e13-7c6b5a4d3e2f"


def cc_user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": None,
        "sessionId": SID,
        "timestamp": "2026-01-05T08:00:00.000Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def cc_assistant(uuid: str, message_id: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "model": MODEL}
    if message_id is not None:
        message["id"] = message_id
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": None,
        "sessionId": SID,
        "timestamp": "2026-01-05T08:00:01.000Z",
        "message": message,
        **extra,
    }


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


# --- format detection --------------------------------------------------------------------


def head(name: str, n: int = 5) -> list[bytes]:
    with (FIXTURES / name).open("rb") as f:
        return [next(f) for _ in range(n)]


def test_it_detects_mewcode() -> None:
    assert detect_format(head(MEW_FILE)) == MEWCODE


def test_it_detects_claude_code() -> None:
    assert detect_format(head(CC_FILE)) == CLAUDE_CODE
    # A file that starts with bookkeeping lines is still recognised from its first line.
    assert detect_format([head(CC_FILE, 3)[2]]) == CLAUDE_CODE


def test_it_skips_blank_and_undecided_lines_when_detecting() -> None:
    lines = [b"\n", j({"type": "tool_call", "content": "x"}), head(MEW_FILE)[1]]
    assert detect_format(lines) == MEWCODE


@pytest.mark.parametrize(
    ("lines", "line", "reason"),
    [
        ([b"hello, this is not a transcript\n"], 1, "not valid JSON"),
        ([b"\n", b"<html><body>404</body></html>\n"], 2, "not valid JSON"),
        ([b'["user", "hi"]\n'], 1, "expected a JSON object, got an array"),
        ([j({"name": "alice", "age": 3})], 0, "not a MewCode or Claude Code transcript"),
        ([], 0, "empty"),
        ([b"\n", b"   \n"], 0, "empty"),
        ([b"\xff\xfe{}\n"], 1, "not valid UTF-8"),
    ],
)
def test_it_rejects_what_is_neither_format(lines: list[bytes], line: int, reason: str) -> None:
    with pytest.raises(TranscriptFormatError) as caught:
        detect_format(lines)
    assert caught.value.line == line
    assert reason in caught.value.reason


def test_parse_transcript_detects_the_format_itself() -> None:
    info = TranscriptInfo()
    assert parse_file(CC_FILE, info) == parse_file(CC_FILE, format=CLAUDE_CODE)
    assert info.format == CLAUDE_CODE
    assert parse_file(MEW_FILE) == parse_file(MEW_FILE, format=MEWCODE)


def test_parse_transcript_rejects_an_unknown_format_name() -> None:
    with pytest.raises(ValueError, match="unknown transcript format"):
        parse_file(MEW_FILE, format="codex")


# --- Claude Code fixture -----------------------------------------------------------------


def test_it_maps_a_claude_code_session() -> None:
    info = TranscriptInfo()
    records = parse_file(CC_FILE, info)

    def meta(n: int, **extra: Any) -> dict[str, Any]:
        return {"line": n, "uuid": cc(n)["uuid"], "parentUuid": cc(n)["parentUuid"], **extra}

    def asst_meta(first: int, last: int, message_id: str) -> dict[str, Any]:
        uuids = [cc(n)["uuid"] for n in range(first, last + 1)]
        # usage: each streamed line repeats the running total; the last line's is kept.
        return meta(
            first,
            uuids=uuids,
            message_id=message_id,
            model=MODEL,
            usage=cc(last)["message"]["usage"],
        )

    def blocks(n: int) -> list[Any]:
        content: list[Any] = cc(n)["message"]["content"]
        return content

    assert records == [
        # line 4: the prompt (string content)
        RecordInput(
            "user",
            "Add a --dry-run flag to `manage.py prune_stock` that lists what would be deleted"
            " without deleting anything.",
            at("2026-02-18T09:12:03.120+00:00"),
            metadata=meta(4),
        ),
        # lines 5-7: one assistant message written as thinking, text, tool_use lines
        RecordInput(
            "assistant",
            [*blocks(5), *blocks(6), *blocks(7)],
            at("2026-02-18T09:12:07.402+00:00"),
            metadata=asst_meta(5, 7, "msg_01FqA"),
        ),
        # line 8: its result
        RecordInput(
            "tool_result",
            blocks(8)[0]["content"],
            at("2026-02-18T09:12:08.471+00:00"),
            tool_use_id="toolu_01Rd7Xq2",
            metadata=meta(8),
        ),
        # line 9-10: a Bash call that fails
        RecordInput(
            "assistant",
            blocks(9),
            at("2026-02-18T09:12:15.032+00:00"),
            metadata=asst_meta(9, 9, "msg_01FqB"),
        ),
        RecordInput(
            "tool_result",
            "Exit code 2\nusage: manage.py prune_stock [-h] [--verbosity {0,1,2,3}]\n"
            "manage.py prune_stock: error: unrecognized arguments: --dry-run",
            at("2026-02-18T09:12:17.660+00:00"),
            tool_use_id="toolu_01Bs4Kp9",
            is_error=True,
            metadata=meta(10),
        ),
        # lines 11 (turn_duration) and 12 (sidechain) are skipped; 13 + 14 are the compaction
        RecordInput(
            "compact_boundary",
            {"summary": cc(14)["message"]["content"], "keep": []},
            at("2026-02-18T09:20:41.250+00:00"),
            metadata=meta(
                13,
                logicalParentUuid=cc(10)["uuid"],
                compactMetadata={"trigger": "manual", "preTokens": 48210},
                summary_line=14,
                summary_uuid=cc(14)["uuid"],
            ),
        ),
        # line 15: isMeta is imported, flagged
        RecordInput(
            "user",
            cc(15)["message"]["content"],
            at("2026-02-18T09:20:41.260+00:00"),
            metadata=meta(15, is_meta=True),
        ),
        # line 16: text + image stays a block list; 17 (queue-operation) is skipped
        RecordInput("user", blocks(16), at("2026-02-18T09:21:05.777+00:00"), metadata=meta(16)),
        # lines 18-19: text + tool_use of one message, after the boundary
        RecordInput(
            "assistant",
            [*blocks(18), *blocks(19)],
            at("2026-02-18T09:21:12.118+00:00"),
            metadata=asst_meta(18, 19, "msg_01FqC"),
        ),
        # line 20: a tool_result whose content is a block list, kept as-is
        RecordInput(
            "tool_result",
            [{"type": "text", "text": "The file prune_stock.py has been updated."}],
            at("2026-02-18T09:21:13.902+00:00"),
            tool_use_id="toolu_01Ed3Vn6",
            metadata=meta(20),
        ),
        RecordInput(
            "assistant",
            blocks(21),
            at("2026-02-18T09:21:18.330+00:00"),
            metadata=asst_meta(21, 21, "msg_01FqD"),
        ),
    ]
    assert [b["type"] for b in records[1].content] == ["thinking", "text", "tool_use"]
    assert records[1].content[2] == {
        "type": "tool_use",
        "id": "toolu_01Rd7Xq2",
        "name": "Read",
        "input": {
            "file_path": "/home/dev/src/inventory-api/stock/management/commands/prune_stock.py"
        },
    }
    assert records[1].metadata["usage"]["output_tokens"] == 87
    assert [b["type"] for b in records[7].content] == ["text", "image"]
    assert all(r.timestamp is not None and r.timestamp.tzinfo is UTC for r in records)

    assert info == TranscriptInfo(
        format=CLAUDE_CODE,
        external_id="3f9c2a1e-7b4d-4e8a-9c61-0d2e5f8a7b13",
        title="Add a dry-run flag to prune_stock",  # the second of two summary lines
        title_leaf_uuid=cc(21)["uuid"],
        cwd="/home/dev/src/inventory-api",
        git_branch="feature/dry-run",
        version="2.1.37",
        line_count=21,
        record_count=11,
        skipped=4,
        skipped_kinds={
            "file-history-snapshot": 1,
            "system:turn_duration": 1,
            "sidechain": 1,
            "queue-operation": 1,
        },
        first_timestamp=at("2026-02-18T09:12:03.120+00:00"),
        last_timestamp=at("2026-02-18T09:21:18.330+00:00"),
    )


def test_claude_code_records_are_valid_mewcode_records() -> None:
    """The import output is in the wire shape the append API and MewCode parser accept."""
    records = parse_file(CC_FILE)
    wire = [j(r.to_dict()) for r in records]
    again = list(parse_transcript(wire, format=MEWCODE))
    assert [(r.type, r.content, r.timestamp, r.tool_use_id, r.is_error) for r in again] == [
        (r.type, r.content, r.timestamp, r.tool_use_id, r.is_error) for r in records
    ]


# --- Claude Code behaviours --------------------------------------------------------------


def test_the_last_summary_line_sets_the_title_and_custom_titles_are_kept_apart() -> None:
    info = TranscriptInfo()
    parse_lines(
        json.dumps({"type": "summary", "summary": "First", "leafUuid": "u1"}),
        json.dumps(cc_user("u1", "hi")),
        json.dumps({"type": "custom-title", "customTitle": "my name", "sessionId": SID}),
        json.dumps({"type": "summary", "summary": "Second", "leafUuid": "u1"}),
        info=info,
    )
    assert (info.title, info.title_leaf_uuid, info.custom_title) == ("Second", "u1", "my name")
    assert info.skipped == 0


def test_unknown_line_types_are_skipped_and_counted() -> None:
    info = TranscriptInfo()
    records = parse_lines(
        json.dumps(cc_user("u1", "hi")),
        json.dumps({"type": "progress", "uuid": "p1", "data": {"type": "hook_progress"}}),
        json.dumps({"type": "some-future-type", "sessionId": SID, "payload": [1, 2]}),
        json.dumps({"type": "system", "subtype": "microcompact_boundary", "uuid": "s1"}),
        json.dumps({"type": "system", "uuid": "s2", "content": "no subtype"}),
        info=info,
    )
    assert [r.content for r in records] == ["hi"]
    assert info.skipped_kinds == {
        "progress": 1,
        "some-future-type": 1,
        "system:microcompact_boundary": 1,
        "system:none": 1,
    }


def test_tool_results_come_before_the_text_of_the_same_user_line() -> None:
    # A user interrupting a tool writes text *after* the result; a text-first line must still
    # keep the result next to its tool_use.
    records = parse_lines(
        json.dumps(
            cc_user(
                "u1",
                [
                    text("[Request interrupted by user for tool use]"),
                    {"type": "tool_result", "tool_use_id": "t1", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
                ],
            )
        ),
        format=CLAUDE_CODE,
    )
    assert [(r.type, r.tool_use_id, r.content, r.is_error) for r in records] == [
        ("tool_result", "t1", "", True),  # missing content → ""
        ("tool_result", "t2", "ok", False),
        ("user", "", "[Request interrupted by user for tool use]", False),
    ]


def test_a_user_line_of_several_text_blocks_keeps_the_list() -> None:
    blocks = [text("<ide_opened_file>app.py</ide_opened_file>"), text("why does this fail?")]
    records = parse_lines(json.dumps(cc_user("u1", blocks)), format=CLAUDE_CODE)
    assert [r.content for r in records] == [blocks]


def test_assistant_lines_merge_by_message_id_across_skipped_lines_only() -> None:
    records = parse_lines(
        json.dumps(cc_assistant("a1", "msg_1", [text("one")])),
        json.dumps({"type": "progress", "uuid": "p1"}),  # skipped: does not end the message
        json.dumps(cc_assistant("a2", "msg_1", [text("two")])),
        json.dumps(cc_assistant("a3", "msg_2", "three")),  # another message; string content
        json.dumps(cc_assistant("a4", None, [text("four")])),  # no id: never merged
        json.dumps(cc_assistant("a5", None, [text("five")])),
        format=CLAUDE_CODE,
    )
    assert [(r.content, r.metadata["uuids"]) for r in records] == [
        ([text("one"), text("two")], ["a1", "a2"]),
        ([text("three")], ["a3"]),
        ([text("four")], ["a4"]),
        ([text("five")], ["a5"]),
    ]
    assert "message_id" not in records[2].metadata


def test_a_record_between_same_id_lines_splits_the_message() -> None:
    # Streaming tool execution can write a result before the message's next block.
    records = parse_lines(
        json.dumps(cc_assistant("a1", "msg_1", [{"type": "tool_use", "id": "t1", "name": "X"}])),
        json.dumps(cc_user("u1", [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}])),
        json.dumps(cc_assistant("a2", "msg_1", [{"type": "tool_use", "id": "t2", "name": "Y"}])),
        format=CLAUDE_CODE,
    )
    assert [(r.type, r.metadata["line"]) for r in records] == [
        ("assistant", 1),
        ("tool_result", 2),
        ("assistant", 3),
    ]


def test_boundaries_without_their_other_half() -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "c1",
        "timestamp": "2026-01-05T09:00:00Z",
    }
    records = parse_lines(
        json.dumps(boundary),
        json.dumps(cc_user("u1", "next prompt")),  # no summary line came: summary ""
        json.dumps(cc_user("s1", [text("older summary")], isCompactSummary=True)),
        json.dumps(boundary),  # at the end of the file
        format=CLAUDE_CODE,
    )
    assert [(r.type, r.content, r.metadata["line"]) for r in records] == [
        ("compact_boundary", {"summary": "", "keep": []}, 1),
        ("user", "next prompt", 2),
        ("compact_boundary", {"summary": "older summary", "keep": []}, 3),
        ("compact_boundary", {"summary": "", "keep": []}, 4),
    ]
    assert records[0].metadata["summary_missing"] is True
    assert records[0].timestamp == at("2026-01-05T09:00:00+00:00")
    assert "summary_missing" not in records[2].metadata


def test_a_sidechain_compaction_is_skipped() -> None:
    info = TranscriptInfo()
    records = parse_lines(
        json.dumps({"type": "system", "subtype": "compact_boundary", "isSidechain": True}),
        json.dumps(cc_user("s1", "sub summary", isSidechain=True, isCompactSummary=True)),
        info=info,
        format=CLAUDE_CODE,
    )
    assert records == []
    assert info.skipped_kinds == {"sidechain": 2}


def test_blank_lines_crlf_and_a_bom_are_tolerated_and_line_numbers_are_physical() -> None:
    lines = [
        b"\xef\xbb\xbf" + json.dumps(cc_user("u1", "hi")).encode() + b"\r\n",
        b"\r\n",
        b"   \n",
        json.dumps(cc_user("u2", "again")).encode() + b"\r\n",
    ]
    records = list(parse_transcript(lines))
    assert [(r.content, r.metadata["line"]) for r in records] == [("hi", 1), ("again", 4)]


def test_records_stream_out_before_a_later_bad_line_is_read() -> None:
    def lines() -> Iterator[bytes]:
        yield j({"type": "user", "content": "one"})
        yield j({"type": "user", "content": "two"})
        raise AssertionError("read past what was needed")

    records = parse_transcript(lines(), format=MEWCODE)
    assert next(records).content == "one"
    assert next(records).content == "two"


# --- MewCode fixture ---------------------------------------------------------------------


def test_it_maps_a_mewcode_session() -> None:
    info = TranscriptInfo()
    records = parse_file(MEW_FILE, info)

    def rec(n: int, **extra: Any) -> RecordInput:
        line = mew(n)
        # MewCode writes naive local times; they are read as UTC.
        stamp = datetime.fromisoformat(line["timestamp"]).replace(tzinfo=UTC)
        return RecordInput(line["type"], line["content"], stamp, metadata={"line": n}, **extra)

    assert records == [
        rec(1),
        rec(2),
        rec(3),
        rec(4, tool_use_id="call_r1"),
        rec(5),
        rec(6, tool_use_id="call_g1"),
        rec(7, tool_use_id="call_b1", is_error=True),
        rec(8),
        rec(9),
        rec(10),
        rec(11),
        rec(12, tool_use_id="call_e1"),
        rec(13),
    ]
    assert [r.type for r in records] == [
        "system_prompt",
        "user",
        "assistant",
        "tool_result",
        "assistant",
        "tool_result",
        "tool_result",
        "assistant",
        "compact_boundary",
        "user",
        "assistant",
        "tool_result",
        "assistant",
    ]
    assert records[0].timestamp == datetime(2026, 3, 14, 10, 15, 2, 120331, tzinfo=UTC)
    assert records[8].content["keep"][2] == {
        "type": "tool_result",
        "content": "4 passed in 0.21s",
        "tool_use_id": "call_t1",
        "is_error": False,
    }
    assert (info.format, info.external_id, info.title, info.skipped) == (MEWCODE, "", "", 0)
    assert (info.line_count, info.record_count) == (13, 13)


def test_mewcode_round_trip() -> None:
    records = parse_file(MEW_FILE)
    wire = [json.dumps(r.to_dict(), ensure_ascii=False).encode() + b"\n" for r in records]
    assert list(parse_transcript(wire)) == records


def test_mewcode_timestamps_may_be_absent_null_or_carry_an_offset() -> None:
    records = parse_lines(
        json.dumps({"type": "user", "content": "a"}),
        json.dumps({"type": "user", "content": "b", "timestamp": None}),
        json.dumps({"type": "user", "content": "c", "timestamp": "2026-03-14T10:15:02+08:00"}),
    )
    assert [r.timestamp for r in records] == [
        None,
        None,
        datetime(2026, 3, 14, 10, 15, 2, tzinfo=timezone(timedelta(hours=8))),
    ]


# --- malformed input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "line", "reason"),
    [
        ("mewcode_bad_json_line7.jsonl", 7, "not valid JSON (Expecting value at column 132)"),
        ("claude_code_bad_json_line7.jsonl", 7, "not valid JSON (Unterminated string starting"),
        ("mewcode_tool_result_without_id.jsonl", 4, "tool_result needs tool_use_id"),
        ("mewcode_wrong_type.jsonl", 3, "unknown record type 'tool_call'; expected one of"),
    ],
)
def test_malformed_fixtures_fail_at_their_line(name: str, line: int, reason: str) -> None:
    with pytest.raises(TranscriptFormatError) as caught:
        parse_file(name)
    assert caught.value.line == line
    assert caught.value.reason.startswith(reason)
    assert str(caught.value) == f"line {line}: {caught.value.reason}"


GOOD_MEW = j({"type": "user", "content": "hello"})


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"[1, 2, 3]\n", "expected a JSON object, got an array"),
        (b'"just a string"\n', "expected a JSON object, got a string"),
        (b'{"type": "user", "content": "caf\xe9"}\n', "not valid UTF-8 (byte 0xe9 at offset 32)"),
        (b'{"type": "user", "content": NaN}\n', "not valid JSON (NaN is not a JSON value)"),
        (b'{"type": "user", "content": "\\ud83d alone"}\n', "unpaired UTF-16 surrogate"),
        (j({"content": "no type"}), "record has no 'type'"),
        (j({"type": 3, "content": "x"}), "'type' must be a string, got a number"),
        (j({"type": "user"}), "user record has no 'content'"),
        (j({"type": "user", "content": 42}), "user content must be a string or a list"),
        (j({"type": "user", "content": "x", "timestamp": "yesterday"}), "'timestamp' 'yesterday'"),
        (j({"type": "user", "content": "x", "timestamp": 1700000000}), "must be an ISO 8601"),
        (
            j({"type": "tool_result", "content": "x", "tool_use_id": 7}),
            "'tool_use_id' must be a string",
        ),
        (
            j({"type": "tool_result", "content": "x", "tool_use_id": "t", "is_error": "yes"}),
            "'is_error' must be true or false, got a string",
        ),
        (
            j({"type": "assistant", "content": [{"text": "no type"}]}),
            "assistant content blocks must be objects with a string 'type'",
        ),
        (
            j({"type": "assistant", "content": [{"type": "tool_use", "id": "t1", "input": {}}]}),
            "content[0]: a tool_use block needs a string 'name'",
        ),
        (
            j({"type": "user", "content": [{"type": "text"}, "bare string"]}),
            "content[1] must be an object, got a string",
        ),
        (
            j({"type": "compact_boundary", "content": "summary only"}),
            'compact_boundary content must be {"summary": str, "keep": [records]}',
        ),
        (
            j({"type": "compact_boundary", "content": {"summary": "s", "keep": ["x"]}}),
            "content.keep[0]: must be a record object, got a string",
        ),
        (
            j(
                {
                    "type": "compact_boundary",
                    "content": {"summary": "s", "keep": [{"type": "tool_result", "content": "r"}]},
                }
            ),
            "content.keep[0]: tool_result needs tool_use_id",
        ),
        (
            j(
                {
                    "type": "compact_boundary",
                    "content": {
                        "summary": "s",
                        "keep": [{"type": "compact_boundary", "content": {"summary": ""}}],
                    },
                }
            ),
            "content.keep[0]: a boundary cannot keep another compact_boundary",
        ),
    ],
)
def test_malformed_mewcode_lines(bad: bytes, reason: str) -> None:
    error = failure([GOOD_MEW, bad, GOOD_MEW], format=MEWCODE)
    assert error.line == 2
    assert reason in error.reason


GOOD_CC = j(cc_user("u0", "hello"))


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (j({"sessionId": SID}), "line has no 'type'"),
        (j({"type": ["user"]}), "'type' must be a string, got an array"),
        (j({**cc_user("u1", "x"), "message": "hi"}), "'message' must be an object, got a string"),
        (j({**cc_user("u1", "x"), "message": {"role": "user"}}), "'message' has no 'content'"),
        (j(cc_user("u1", {"text": "x"})), "'message.content' must be a string or an array"),
        (j({**cc_user("u1", "x"), "isSidechain": "no"}), "'isSidechain' must be true or false"),
        (j({**cc_user("u1", "x"), "isMeta": 1}), "'isMeta' must be true or false, got a number"),
        (j({**cc_user("u1", "x"), "sessionId": 12}), "'sessionId' must be a string or null"),
        (j({**cc_user("u1", "x"), "parentUuid": 12}), "'parentUuid' must be a string or null"),
        (j({**cc_user("u1", "x"), "timestamp": "soon"}), "'timestamp' 'soon' is not an ISO 8601"),
        (
            j(cc_user("u1", [{"type": "tool_result", "content": "r"}])),
            "message.content[0]: 'tool_use_id' must be a string, got null",
        ),
        (
            j(cc_user("u1", [{"type": "tool_result", "tool_use_id": "t", "is_error": "true"}])),
            "message.content[0]: 'is_error' must be true or false",
        ),
        (
            j(cc_user("u1", [{"type": "tool_result", "tool_use_id": "t", "content": 5}])),
            "message.content[0]: 'content' must be a string or an array, got a number",
        ),
        (j(cc_user("u1", [{"type": "text", "text": None}])), "'text' must be a string, got null"),
        (j(cc_user("u1", [{"no": "type"}])), "message.content[0] needs a string 'type'"),
        (
            j(cc_assistant("a1", "m1", [{"type": "tool_use", "name": "Read", "input": {}}])),
            "message.content[0]: a tool_use block needs a non-empty string 'id'",
        ),
        (
            j(cc_assistant("a1", "m1", [{"type": "tool_use", "id": "t", "name": "R", "input": 3}])),
            "a tool_use block's 'input' must be an object",
        ),
        (
            j({**cc_assistant("a1", "m1", []), "message": {"id": 42, "content": []}}),
            "'message.id' must be a string or null, got a number",
        ),
        (
            j({**cc_assistant("a1", "m1", [text("x")]), "message": {"content": [], "usage": 3}}),
            "'message.usage' must be an object, got a number",
        ),
        (
            j({"type": "system", "subtype": "compact_boundary", "compactMetadata": "auto"}),
            "'compactMetadata' must be an object, got a string",
        ),
        (j({"type": "summary", "leafUuid": "u1"}), "'summary' must be a string, got null"),
    ],
)
def test_malformed_claude_code_lines(bad: bytes, reason: str) -> None:
    error = failure([GOOD_CC, bad, GOOD_CC], format=CLAUDE_CODE)
    assert error.line == 2
    assert reason in error.reason


# --- .meta -------------------------------------------------------------------------------


def test_it_parses_a_mewcode_meta_file() -> None:
    meta = parse_mewcode_meta((FIXTURES / "session_20260314_101502_k3p9.meta").read_bytes())
    assert meta.id == "session_20260314_101502_k3p9"
    assert meta.title == "把 utils/dates.py 里的 parse_day 改成也支持 ISO 周格式（比如 202"
    assert meta.summary == "为 parse_day 增加 ISO 周格式支持并补了测试"
    assert (meta.message_count, meta.total_tokens) == (12, 6240)
    # Naive local times in the file are taken as UTC.
    assert meta.created_at == datetime(2026, 3, 14, 10, 15, 2, 118842, tzinfo=UTC)
    assert meta.last_active == datetime(2026, 3, 14, 10, 41, 37, 502113, tzinfo=UTC)


def test_meta_defaults_and_offsets() -> None:
    meta = parse_mewcode_meta(
        json.dumps(
            {
                "schema_version": 1,  # SouthernStars/MewCode adds this; it is ignored
                "id": "session_20260101_000000_abcd",
                "created_at": "2026-01-01T00:00:00+00:00",
                "last_active": "2026-01-01T09:30:00+08:00",
            }
        ).encode()
    )
    assert (meta.title, meta.summary, meta.message_count, meta.total_tokens) == ("", "", 0, 0)
    assert meta.last_active == datetime(2026, 1, 1, 1, 30, tzinfo=UTC)


VALID_META = {
    "id": "session_x",
    "created_at": "2026-01-01T00:00:00",
    "last_active": "2026-01-01T00:00:00",
}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "meta: not valid JSON"),
        (b"\xff\xfe", "meta: not valid UTF-8"),
        (b"[]", "meta: expected a JSON object, got an array"),
        (json.dumps({**VALID_META, "id": ""}).encode(), "meta: 'id' must not be empty"),
        (json.dumps({**VALID_META, "id": None}).encode(), "meta: 'id' must be a string"),
        (
            json.dumps({**VALID_META, "message_count": -1}).encode(),
            "meta: 'message_count' must be a non-negative integer",
        ),
        (
            json.dumps({**VALID_META, "total_tokens": True}).encode(),
            "meta: 'total_tokens' must be a non-negative integer",
        ),
        (
            json.dumps({k: v for k, v in VALID_META.items() if k != "last_active"}).encode(),
            "meta: 'last_active' is required",
        ),
        (
            json.dumps({**VALID_META, "created_at": "14/03/2026"}).encode(),
            "meta: 'created_at' '14/03/2026' is not an ISO 8601 timestamp",
        ),
    ],
)
def test_malformed_meta(raw: bytes, reason: str) -> None:
    with pytest.raises(TranscriptFormatError) as caught:
        parse_mewcode_meta(raw)
    assert caught.value.line == 0
    assert caught.value.reason.startswith(reason)
    assert str(caught.value) == caught.value.reason


# --- streaming memory bound --------------------------------------------------------------

TARGET_BYTES = 20 * 1024 * 1024


def write_claude_code_transcript(path: Path) -> int:
    """~20 MB of turns: prompt, assistant split over two lines, a 4 KB tool result."""
    payload = "x" * 4096
    written = turn = 0
    with path.open("w", encoding="utf-8") as f:
        while written < TARGET_BYTES:
            turn += 1
            tool_id = f"toolu_{turn:08d}"
            lines = [
                cc_user(f"u{turn}", f"step {turn}: run the linter"),
                cc_assistant(f"a{turn}", f"msg_{turn}", [text("Running it.")]),
                cc_assistant(
                    f"b{turn}",
                    f"msg_{turn}",
                    [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"cmd": "x"}}],
                ),
                cc_user(
                    f"t{turn}",
                    [{"type": "tool_result", "tool_use_id": tool_id, "content": payload}],
                ),
            ]
            for line in lines:
                written += f.write(json.dumps(line) + "\n")
    return turn


def write_mewcode_transcript(path: Path) -> int:
    payload = "y" * 4096
    written = turn = 0
    with path.open("w", encoding="utf-8") as f:
        while written < TARGET_BYTES:
            turn += 1
            tool_id = f"call_{turn}"
            lines = [
                {"type": "user", "content": f"step {turn}", "timestamp": "2026-03-14T10:00:00"},
                {
                    "type": "assistant",
                    "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}],
                    "timestamp": "2026-03-14T10:00:01",
                },
                {
                    "type": "tool_result",
                    "content": payload,
                    "tool_use_id": tool_id,
                    "is_error": False,
                    "timestamp": "2026-03-14T10:00:02",
                },
            ]
            for line in lines:
                written += f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return turn


@pytest.mark.parametrize(
    ("writer", "records_per_turn"),
    [(write_claude_code_transcript, 3), (write_mewcode_transcript, 3)],
)
def test_parsing_a_20_mb_transcript_keeps_memory_small(
    tmp_path: Path, writer: Any, records_per_turn: int
) -> None:
    path = tmp_path / "big.jsonl"
    turns = writer(path)
    assert path.stat().st_size >= TARGET_BYTES
    count = 0
    tracemalloc.start()
    try:
        with path.open("rb") as f:
            for _ in parse_transcript(f):
                count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == turns * records_per_turn
    # Holding the file (or its records) would need more than the file's size; a streaming
    # parser needs a few lines' worth. 10 MB is half the file and far above what it uses.
    assert peak < 10 * 1024 * 1024, f"peak {peak / 1024 / 1024:.1f} MB"
