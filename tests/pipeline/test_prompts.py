"""Stage-1 prompts: budget and truncation arithmetic, the input items, the validators, and
MewCode's memories.md rules."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.pipeline.extractor import SourceRecord, source_records
from memoryhub.pipeline.prompts import (
    TRUNCATION_MARKER,
    sanitize_slug,
    session_items,
    stage1_max_tokens,
    stage1_output_messages,
    stage1_token_limit,
    truncate_by_approx_tokens,
    typed_memories_messages,
    validate_stage1_output,
    validate_typed,
)

TOKEN = "gh" + "p_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8"


def session(*rows: dict[str, Any]) -> list[SourceRecord]:
    return source_records(list(rows))


SESSION = session(
    {"type": "system_prompt", "content": "You are a coding assistant."},
    {"type": "user", "content": "Run the tests. We use pytest."},
    {
        "type": "assistant",
        "content": [
            {"type": "text", "text": "Running them."},
            {"type": "thinking", "thinking": "hmm"},
            {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "pytest -q"}},
        ],
    },
    {"type": "tool_result", "content": "5 passed", "tool_use_id": "c1", "is_error": False},
    {"type": "assistant", "content": "All 5 tests pass."},
)


# --- budget and truncation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        (200_000, 4_000),  # the input limit wins
        (5_714, 3_999),  # floor(0.7 × 5714) = floor(3999.8)
        (5_000, 3_500),
        (1_000, 700),
        (None, 4_000),  # unknown window: the 16,000 fallback, then the 4,000 limit
        (0, 4_000),
    ],
)
def test_stage1_token_limit(window: int | None, expected: int) -> None:
    assert stage1_token_limit(window) == expected


def test_stage1_token_limit_overrides() -> None:
    assert stage1_token_limit(None, fallback_token_limit=2_000) == 1_400
    assert stage1_token_limit(100_000, input_token_limit=50_000, payload_percent=0.5) == 50_000
    assert stage1_max_tokens(None) == 3_200
    assert stage1_max_tokens(1_000) == 1_024
    assert stage1_max_tokens(200_000) == 4_096


def test_truncation_keeps_short_text_whole() -> None:
    assert truncate_by_approx_tokens("x" * 400, 100) == "x" * 400
    assert truncate_by_approx_tokens("", 100) == ""
    assert truncate_by_approx_tokens("abc", 0) == ""


@pytest.mark.parametrize(("limit", "length"), [(100, 401), (100, 10_000), (1, 5), (7, 1_000)])
def test_truncation_head_60_tail_40(limit: int, length: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(length))
    out = truncate_by_approx_tokens(text, limit)
    max_chars = limit * 4
    head = math.floor(max_chars * 0.6)
    tail = max_chars - head
    assert out == text[:head] + TRUNCATION_MARKER + text[-tail:]
    assert TRUNCATION_MARKER == "\n\n...[truncated]...\n\n"
    assert len(out) == max_chars + len(TRUNCATION_MARKER)


# --- stage-1 input --------------------------------------------------------------------------------


def test_session_items() -> None:
    assert session_items(SESSION) == [
        {"role": "system", "content": "You are a coding assistant."},
        {"role": "user", "content": "Run the tests. We use pytest."},
        {
            "role": "assistant",
            "content": "Running them.",
            "tool_calls": [{"name": "Bash", "input": {"command": "pytest -q"}}],
        },
        {"role": "tool_result", "tool": "Bash", "is_error": False, "content": "5 passed"},
        {"role": "assistant", "content": "All 5 tests pass."},
    ]
    assert [item["index"] for item in session_items(SESSION, with_index=True)] == [0, 1, 2, 3, 4]


def test_session_items_leave_out_big_empty_injected_and_secret_content() -> None:
    records = session(
        {"type": "user", "content": "Check the logs."},
        {
            "type": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "a",
                    "name": "Bash",
                    "input": {"command": "cat big.log"},
                },
                {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "true"}},
                {"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": "cat ok.log"}},
            ],
        },
        {"type": "tool_result", "content": "x" * 32_001, "tool_use_id": "a"},
        {"type": "tool_result", "content": "", "tool_use_id": "b"},
        {"type": "tool_result", "content": "y" * 32_000, "tool_use_id": "c"},
        {"type": "user", "content": f"{INJECTION_OPEN}\nWe use MySQL.\n{INJECTION_CLOSE}\nThanks!"},
        {"type": "user", "content": f"push with {TOKEN}; the DB 密码是 Pa55word!x"},
        {"type": "compression", "content": "legacy summary"},
    )
    items = session_items(records)
    results = [i for i in items if i["role"] == "tool_result"]
    assert [len(r["content"]) for r in results] == [32_000]
    dumped = json.dumps(items, ensure_ascii=False)
    assert "MySQL" not in dumped and "Thanks!" in dumped
    assert TOKEN not in dumped and "Pa55word" not in dumped
    assert "legacy summary" not in dumped


def test_stage1_messages() -> None:
    messages = stage1_output_messages("session_42", SESSION, context_window=128_000)
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    for needle in (
        '"rollout_summary"',
        '"rollout_slug"',
        '"raw_memory"',
        "strict JSON",
        "<memoryhub-context>",
        "## Task:",
        "Outcome: success | partial | fail",
    ):
        assert needle in system
    assert user.startswith("thread_id: session_42\n\nPersistable response items (JSON):\n")
    items_json = user.split("(JSON):\n", 1)[1].rsplit("\n\nExtract", 1)[0]
    assert json.loads(items_json) == session_items(SESSION)


def test_stage1_messages_truncate_to_the_budget() -> None:
    long_session = session(
        *[{"type": "user", "content": f"message {i} " + "z" * 500} for i in range(200)]
    )
    user = stage1_output_messages("t", long_session, context_window=10_000)[1]["content"]
    items_json = user.split("(JSON):\n", 1)[1].rsplit("\n\nExtract", 1)[0]
    assert TRUNCATION_MARKER in items_json
    assert len(items_json) == 4_000 * 4 + len(TRUNCATION_MARKER)
    assert items_json.startswith('[{"role": "user", "content": "message 0 ')
    assert items_json.endswith('"}]')
    small = stage1_output_messages("t", long_session, context_window=1_000)[1]["content"]
    assert len(small.split("(JSON):\n", 1)[1].rsplit("\n\nExtract", 1)[0]) == (
        700 * 4 + len(TRUNCATION_MARKER)
    )


# --- validate_stage1_output -----------------------------------------------------------------------


def test_validate_stage1_output_good() -> None:
    out = validate_stage1_output(
        {
            "rollout_summary": "  Fixed the flaky report tests.  ",
            "rollout_slug": "Fix Flaky-Reports!!",
            "raw_memory": f"# Fixed flaky tests\nToken was {TOKEN}\n",
        }
    )
    assert out["rollout_summary"] == "Fixed the flaky report tests."
    assert out["rollout_slug"] == "fix_flaky_reports"
    assert TOKEN not in out["raw_memory"] and "[REDACTED]" in out["raw_memory"]
    assert out["raw_memory"].endswith("[REDACTED]")  # trimmed


@pytest.mark.parametrize(
    "obj",
    [
        {"rollout_summary": "", "rollout_slug": None, "raw_memory": ""},
        {"rollout_summary": "   ", "rollout_slug": "x", "raw_memory": "something"},
        {"rollout_summary": "something", "rollout_slug": None, "raw_memory": "\n"},
    ],
)
def test_validate_stage1_output_nothing_durable(obj: dict[str, Any]) -> None:
    assert validate_stage1_output(obj) == {
        "rollout_summary": "",
        "rollout_slug": None,
        "raw_memory": "",
    }


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "expected a JSON object"),
        ("text", "expected a JSON object"),
        ({"rollout_summary": "a", "raw_memory": "b"}, "missing key(s) rollout_slug"),
        (
            {"rollout_summary": "a", "rollout_slug": None, "raw_memory": "b", "notes": ""},
            "unexpected key(s) notes",
        ),
        (
            {"rollout_summary": 1, "rollout_slug": None, "raw_memory": "b"},
            "rollout_summary must be a string, got int",
        ),
        (
            {"rollout_summary": "a", "rollout_slug": None, "raw_memory": ["b"]},
            "raw_memory must be a string, got list",
        ),
        (
            {"rollout_summary": "a", "rollout_slug": 3, "raw_memory": "b"},
            "rollout_slug must be a string or null, got int",
        ),
    ],
)
def test_validate_stage1_output_bad(obj: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_stage1_output(obj)


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("parse_day_iso_week", "parse_day_iso_week"),
        ("Parse Day: ISO week", "parse_day_iso_week"),
        ("__x__", "x"),
        ("!!!", None),
        ("", None),
        ("解析日期", None),
        ("a" * 80, "a" * 64),
    ],
)
def test_sanitize_slug(raw: str, slug: str | None) -> None:
    assert sanitize_slug(raw) == slug
    if slug:
        assert (
            validate_stage1_output(
                {"rollout_summary": "s", "rollout_slug": raw, "raw_memory": "r"}
            )["rollout_slug"]
            == slug
        )


# --- typed memories -------------------------------------------------------------------------------


def memory(**overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": "project",
        "content": "Run tests with `pytest -q`.",
        "title": "Run tests",
        "keywords": ["pytest", "tests", "run", "suite", "python", "ci", "quiet", "command"],
        "importance": 2,
        "subcategory": "ops",
        "record_start": 2,
        "record_end": 3,
    }
    item.update(overrides)
    return {k: v for k, v in item.items() if v is not ...}


def test_typed_messages() -> None:
    messages = typed_memories_messages(SESSION, ["We use pytest.", "  ", "Deploy with make."])
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    for kind in Kind.values:
        assert f"- {kind} (" in system
    for sub in Subcategory.values:
        assert f"  - {sub}:" in system
    for needle in (
        "8 to 13",
        "1 to 4",
        '{"memories": []}',
        "用户偏好 → user",
        "纠正反馈 → feedback",
        "参考资料 → reference",
        "record_start",
        "Do not repeat",
        # what the measured prompt (README, "Extraction quality") rests on
        "could not read off the code quickly",
        "Never: the task itself or what was just implemented",
        "options considered and left out, deferred or rejected",
        'Write "content" in the language the user said it in',
        "distinct also when case is ignored",
    ):
        assert needle in system
    assert "- We use pytest.\n- Deploy with make." in user
    items_json = user.split("record index):\n", 1)[1].split("\n\nReturn", 1)[0]
    assert json.loads(items_json)[1] == {
        "index": 1,
        "role": "user",
        "content": "Run the tests. We use pytest.",
    }
    assert "(none)" in typed_memories_messages(SESSION, [])[1]["content"]


def test_validate_typed_good() -> None:
    out = validate_typed(
        {
            "memories": [
                memory(content="  Run tests with `pytest -q`.  ", title=" Run tests "),
                memory(
                    kind="用户偏好",
                    subcategory=...,
                    content="Prefers f-strings.",
                    keywords=["f-strings"],
                    importance=3,
                    record_start=0,
                    record_end=0,
                ),
                memory(kind="topic", subcategory="", goal="Ship CSV export", record_end=4),
                memory(kind="lesson", subcategory=..., content=f"The token {TOKEN} lacked scope."),
            ]
        },
        record_range=(0, 4),
    )
    first, pref, topic, lesson = out
    assert (first.content, first.title, first.subcategory, first.rule) == (
        "Run tests with `pytest -q`.",
        "Run tests",
        "ops",
        "llm",
    )
    assert first.keywords[0] == "pytest" and isinstance(first.keywords, tuple)
    assert (pref.kind, pref.importance, pref.subcategory) == ("user", 3, "")
    assert (topic.kind, topic.goal) == ("topic", "Ship CSV export")
    assert TOKEN not in lesson.content and "[REDACTED]" in lesson.content
    assert validate_typed({"memories": []}, record_range=(0, 4)) == []


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "expected a JSON object"),
        ({"memories": [], "notes": 1}, r"unexpected key\(s\) notes"),
        ({"items": []}, r"missing key\(s\) memories"),
        ({"memories": {}}, "memories must be a list, got dict"),
        ({"memories": ["x"]}, r"memories\[0\] must be an object"),
        ({"memories": [memory(title=...)]}, r"memories\[0\]: missing key\(s\) title"),
        ({"memories": [memory(scope="user")]}, r"unexpected key\(s\) scope"),
        ({"memories": [memory(kind="idea")]}, "'idea' is not a kind"),
        ({"memories": [memory(content="   ")]}, r"memories\[0\]\.content must not be empty"),
        ({"memories": [memory(content=3)]}, r"content must be a string, got int"),
        ({"memories": [memory(keywords="pytest")]}, "keywords must be a list"),
        ({"memories": [memory(keywords=[])]}, "keywords has 0 entries"),
        ({"memories": [memory(keywords=[f"k{i}" for i in range(14)])]}, "keywords has 14"),
        ({"memories": [memory(keywords=["a", " "])]}, r"keywords\[1\] must be a non-empty"),
        ({"memories": [memory(keywords=["a", 2])]}, r"keywords\[1\] must be a non-empty"),
        ({"memories": [memory(keywords=["Pytest", "pytest"])]}, "is a duplicate"),
        ({"memories": [memory(importance=0)]}, "importance must be 1 to 4, got 0"),
        ({"memories": [memory(importance=5)]}, "importance must be 1 to 4, got 5"),
        ({"memories": [memory(importance=True)]}, "importance must be an integer, got bool"),
        ({"memories": [memory(importance="3")]}, "importance must be an integer, got str"),
        ({"memories": [memory(importance=2.0)]}, "importance must be an integer, got float"),
        ({"memories": [memory(subcategory=...)]}, "required for kind project"),
        ({"memories": [memory(subcategory="misc")]}, "'misc' is required for kind project"),
        ({"memories": [memory(kind="user")]}, "subcategory is only for kind project"),
        ({"memories": [memory(goal="x")]}, "goal is only for kind topic"),
        ({"memories": [memory(record_start=3, record_end=2)]}, "record_start 3 is after"),
        ({"memories": [memory(record_end=9)]}, "outside the session items 0-4"),
        ({"memories": [memory(record_start=-1)]}, "outside the session items 0-4"),
        ({"memories": [memory(record_start="2")]}, "record_start must be an integer"),
    ],
)
def test_validate_typed_bad(obj: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_typed(obj, record_range=(0, 4))


def test_validate_typed_range_edges_are_inclusive() -> None:
    out = validate_typed(
        {"memories": [memory(record_start=10, record_end=12)]}, record_range=(10, 12)
    )
    assert (out[0].record_start, out[0].record_end) == (10, 12)
