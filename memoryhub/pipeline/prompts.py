"""Stage 1 with an LLM: the prompts and the validators of their answers.

The wording is ours; the contracts are the seeds':

* `stage1_output_messages` / `validate_stage1_output`: oh-my-pi's stage one (seed-algorithms §3.3).
  Input = the session's messages (system, user, assistant) plus tool results of 1 to 32,000
  characters, JSON-serialised and cut to `min(4,000, floor(0.7 × context window))` tokens at
  4 characters per token (the head 60 % + "\\n\\n...[truncated]...\\n\\n" + the tail 40 %).
  Output = strict JSON with exactly {rollout_summary, rollout_slug, raw_memory}.
* `typed_memories_messages` / `validate_typed`: typed atomic memories in MemoryHub's kind
  taxonomy (meow-memory's layers, MewCode's four categories mapped onto kinds), strict JSON
  {"memories": [...]}.

Validators raise ValueError with a message precise enough to send back to the model, which
is what `memoryhub.llm.client.complete_json` does once. Apart from trimming whitespace they
repair nothing: no clamping, no truncation, no guessing. Secret redaction is applied to every
string they return. That is policy, not repair.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memoryhub.core.redaction import redact, redact_json
from memoryhub.memories import markup
from memoryhub.memories.kinds import DEFAULT_SCOPE, Kind, Subcategory, resolve_kind
from memoryhub.pipeline.extractor import (
    MAX_KEYWORDS,
    MIN_KEYWORDS,
    ExtractedMemory,
    SourceRecord,
    expand_records,
    readable_text,
)
from memoryhub.sessions.records import ASSISTANT, SYSTEM_PROMPT, TOOL_RESULT, USER

Message = dict[str, str]

# oh-my-pi's defaults (seed-algorithms §3.1); the pipeline passes per-project overrides.
INPUT_TOKEN_LIMIT = 4_000
PAYLOAD_PERCENT = 0.7
FALLBACK_TOKEN_LIMIT = 16_000
CHARS_PER_TOKEN = 4
TOOL_RESULT_MAX_CHARS = 32_000
TRUNCATION_MARKER = markup.TRUNCATION_MARKER
SLUG_MAX_CHARS = 64
EXISTING_MAX = 100
EXISTING_ENTRY_CHARS = 300
STAGE1_OUTPUT_KEYS = ("rollout_summary", "rollout_slug", "raw_memory")


# --- budgets ------------------------------------------------------------------------------------


def stage1_token_limit(
    context_window: int | None,
    *,
    input_token_limit: int = INPUT_TOKEN_LIMIT,
    payload_percent: float = PAYLOAD_PERCENT,
    fallback_token_limit: int = FALLBACK_TOKEN_LIMIT,
) -> int:
    """Tokens of session JSON a stage-1 prompt may carry: min(input limit, floor(percent ×
    context window)). A model without a known window (None or ≤ 0) counts as one of
    `fallback_token_limit` tokens. oh-my-pi also raises the window to at least 2,048; we
    don't, so the budget never exceeds the stated share of a small window."""
    window = context_window if context_window and context_window > 0 else fallback_token_limit
    return min(input_token_limit, math.floor(window * payload_percent))


def truncate_by_approx_tokens(text: str, token_limit: int) -> str:
    """`text` cut to `token_limit` tokens at 4 characters per token: when longer, the first
    60 % and the last 40 % of the allowed characters around the truncation marker."""
    if token_limit <= 0:
        return ""
    return markup.truncate_middle(text, token_limit * CHARS_PER_TOKEN)


# --- the session as JSON items --------------------------------------------------------------------


def session_items(
    records: Sequence[SourceRecord], *, with_index: bool = False
) -> list[dict[str, Any]]:
    """The persistable items of a session, in order: system, user and assistant messages, and
    tool results of 1–32,000 characters (with the tool's name when the call is known).

    Injected blocks are removed from text. A record flagged as injected whose marker cannot be
    found in its text is left out. Compact boundaries contribute their unseen `keep` records
    (see extractor.expand_records). Empty messages are left out, and everything is
    secret-redacted. With `with_index`, each item carries its record index."""
    items: list[dict[str, Any]] = []
    tool_names: dict[str, str] = {}
    for record in expand_records(records):
        item: dict[str, Any]
        if record.type in (SYSTEM_PROMPT, USER):
            text = readable_text(record)
            if not text or not text.strip():
                continue
            item = {"role": "system" if record.type == SYSTEM_PROMPT else "user", "content": text}
        elif record.type == ASSISTANT:
            text = readable_text(record)
            if text is None:
                continue
            calls = []
            if isinstance(record.content, list):
                for block in record.content:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        name = str(block.get("name", ""))
                        tool_names[str(block.get("id", ""))] = name
                        calls.append({"name": name, "input": block.get("input", {})})
            if not text.strip() and not calls:
                continue
            item = {"role": "assistant", "content": text}
            if calls:
                item["tool_calls"] = calls
        elif record.type == TOOL_RESULT:
            text = readable_text(record)
            if text is None or not 1 <= len(text) <= TOOL_RESULT_MAX_CHARS:
                continue
            item = {
                "role": "tool_result",
                "tool": tool_names.get(record.tool_use_id, ""),
                "is_error": record.is_error,
                "content": text,
            }
        else:
            continue
        if with_index:
            item = {"index": record.index, **item}
        items.append(item)
    redacted, _ = redact_json(items)
    return list(redacted)


def _items_json(records: Sequence[SourceRecord], token_limit: int, *, with_index: bool) -> str:
    serialised = json.dumps(session_items(records, with_index=with_index), ensure_ascii=False)
    return truncate_by_approx_tokens(serialised, token_limit)


# --- stage 1: the stage-1 output (oh-my-pi's raw memory and rollout summary) ---------------

STAGE1_SYSTEM = """\
You are the first stage of a team memory pipeline. You read one finished coding-agent session \
and write down what a future session in the same project should know.

Answer with strict JSON only: one object, no Markdown fences, no commentary before or after.

Keep durable knowledge: technical decisions and the reasons given for them, constraints and \
conventions, commands and workflows that worked, failures and how they were resolved, pitfalls, \
where documentation lives, and the user's lasting preferences and corrections.
Leave out: small talk, details that only mattered for this one task, transient state, \
measurements and timings, the assistant's guesses and unverified claims, anything inside \
<memoryhub-context> blocks (it came from memory already), and secrets of any kind (write \
[REDACTED] instead).

The object has exactly these three keys:
{"rollout_summary": string, "rollout_slug": string or null, "raw_memory": string}

- rollout_summary: a compact synopsis, roughly 80 to 160 words, of what future sessions should \
remember from this one.
- rollout_slug: a short lowercase name for the session's task using only a-z, 0-9 and _, or \
null.
- raw_memory: the detailed durable memory, in this Markdown layout:
  # <one-sentence summary of the session>
  Memory context: <project, area, what was being done>
  User preferences: <"- " bullets, or exactly: none observed>
  ## Task: <task name>
  Outcome: success | partial | fail | uncertain
  Key steps:
  Things that did not work / things that can be improved:
  Reusable knowledge:
  Pointers and references (annotate why each item matters):
  (one "## Task:" section per task; "- " bullets under each heading)

If the session holds nothing durable, answer exactly:
{"rollout_summary": "", "rollout_slug": null, "raw_memory": ""}
"""

STAGE1_INPUT = """\
thread_id: {thread_id}

Persistable response items (JSON):
{items}

Extract the durable memory of this session now, as the JSON object described above."""


def stage1_output_messages(
    thread_id: str,
    records: Sequence[SourceRecord],
    *,
    context_window: int | None,
    input_token_limit: int = INPUT_TOKEN_LIMIT,
    payload_percent: float = PAYLOAD_PERCENT,
    fallback_token_limit: int = FALLBACK_TOKEN_LIMIT,
) -> list[Message]:
    """[system, user] messages of oh-my-pi's stage one for one session."""
    limit = stage1_token_limit(
        context_window,
        input_token_limit=input_token_limit,
        payload_percent=payload_percent,
        fallback_token_limit=fallback_token_limit,
    )
    items = _items_json(records, limit, with_index=False)
    return [
        {"role": "system", "content": STAGE1_SYSTEM},
        {"role": "user", "content": STAGE1_INPUT.format(thread_id=thread_id, items=items)},
    ]


def stage1_max_tokens(
    context_window: int | None, *, fallback_token_limit: int = FALLBACK_TOKEN_LIMIT
) -> int:
    """oh-my-pi's answer budget: clamp(floor(0.2 × context window), 1,024, 4,096)."""
    window = context_window if context_window and context_window > 0 else fallback_token_limit
    return max(1024, min(4096, math.floor(window * 0.2)))


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _exact_keys(obj: Mapping[str, Any], expected: Sequence[str], where: str) -> None:
    missing = [k for k in expected if k not in obj]
    extra = sorted(str(k) for k in obj if k not in expected)
    problems = []
    if missing:
        problems.append(f"missing key(s) {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected key(s) {', '.join(extra)}")
    if problems:
        raise ValueError(f"{where}: {'; '.join(problems)} (expected exactly {', '.join(expected)})")


def sanitize_slug(value: str) -> str | None:
    """A slug of `[a-z0-9_]`: lower-cased, other runs → "_", trimmed of "_", ≤ 64 characters;
    None when nothing is left."""
    slug = re.sub(r"[^a-z0-9_]+", "_", value.lower()).strip("_")
    slug = slug[:SLUG_MAX_CHARS].rstrip("_")
    return slug or None


def validate_stage1_output(obj: Any) -> dict[str, Any]:
    """A stage-1 answer → {rollout_summary, rollout_slug, raw_memory}, trimmed and redacted.

    Raises ValueError unless `obj` is an object with exactly those keys, the two texts strings
    and the slug a string or null. The slug is sanitised to `[a-z0-9_]` (None when empty).
    When either text is empty after trimming, the answer means "nothing durable" and comes
    back as {"", None, ""} (oh-my-pi's no_output)."""
    if not isinstance(obj, dict):
        keys = ", ".join(STAGE1_OUTPUT_KEYS)
        raise ValueError(f"expected a JSON object with the keys {keys}, got {_type_name(obj)}")
    _exact_keys(obj, STAGE1_OUTPUT_KEYS, "the stage-1 object")
    for key in ("rollout_summary", "raw_memory"):
        if not isinstance(obj[key], str):
            raise ValueError(f"{key} must be a string, got {_type_name(obj[key])}")
    slug = obj["rollout_slug"]
    if slug is not None and not isinstance(slug, str):
        raise ValueError(f"rollout_slug must be a string or null, got {_type_name(slug)}")
    summary = redact(obj["rollout_summary"].strip())[0]
    raw = redact(obj["raw_memory"].strip())[0]
    if not summary or not raw:
        return {"rollout_summary": "", "rollout_slug": None, "raw_memory": ""}
    clean_slug = sanitize_slug(redact(slug)[0]) if slug is not None else None
    if clean_slug and "redacted" in clean_slug:
        clean_slug = None
    return {"rollout_summary": summary, "rollout_slug": clean_slug, "raw_memory": raw}


# --- typed memories (meow-memory layers in MemoryHub kinds) -------------------------------------

_KIND_GUIDE = {
    Kind.SOUL: "how the assistant itself should be and behave in general (its manner, voice)",
    Kind.USER: "who the user is (background, role, experience, what they are new to) and their "
    'own taste in code and tools, also when it says what follows for the assistant ("8 years '
    'of DBA work, skip the basics") (MewCode 用户偏好)',
    Kind.FEEDBACK: "an instruction about the assistant's work that stands on its own: "
    "corrections, how to answer (language, length, format), what to ask before doing "
    "(MewCode 纠正反馈)",
    Kind.PROJECT: "how this project is laid out, built, tested, run and deployed, its stack and "
    'the versions it is pinned to (also when said as a constraint: "Zig 0.13, no 0.14 '
    'syntax"), the decisions taken with their reason, with a subcategory (MewCode 项目知识)',
    Kind.REFERENCE: "where something lives outside the code: documentation, wiki pages, "
    "dashboards, trackers, channels, runbooks (MewCode 参考资料)",
    Kind.FACT: "rare: a lasting fact about the environment that fits no other kind",
    Kind.LESSON: "a pitfall the team was bitten by: what went wrong, why, and the fix or how to "
    "avoid it",
    Kind.TOPIC: "rare: a thread of work the user says goes on across sessions, with its goal "
    "(give `goal`)",
    Kind.RULE: "a norm the team follows or a constraint the code must respect: what must or must "
    "not be done here",
}
_SUBCATEGORY_GUIDE = {
    Subcategory.OVERVIEW: "what the project is",
    Subcategory.STRUCTURE: "stack, layout, modules, where things live",
    Subcategory.DECISIONS: "decisions taken and why",
    Subcategory.QUOTES: "the user's own words worth keeping verbatim",
    Subcategory.OPS: "how to build, test, run, deploy; environments",
    Subcategory.TODO: "work the user said is still to do",
}


def _typed_system() -> str:
    kinds = "\n".join(
        f"- {kind.value} ({DEFAULT_SCOPE[kind]} scope): {_KIND_GUIDE[kind]}" for kind in Kind
    )
    subcategories = "\n".join(f"  - {sub.value}: {_SUBCATEGORY_GUIDE[sub]}" for sub in Subcategory)
    return f"""\
You turn one coding-agent session into typed, atomic team memories.

Answer with strict JSON only: {{"memories": [...]}}, no Markdown fences, no commentary.

Kinds (use these exact names):
{kinds}
  A project memory needs "subcategory", one of:
{subcategories}
MewCode's four memory categories map onto kinds: 用户偏好 → user, 纠正反馈 → feedback, \
项目知识 → project (or fact, lesson, rule, topic when one of those fits better), 参考资料 → \
reference.

What may become a memory: what a teammate starting a new session here would need and could not \
read off the code quickly.
- what the user said that stays true beyond this task: the team's norms, how the project is \
laid out and run, decisions and why, where things are documented or tracked, who the user is, \
how they want the assistant to work, to-dos they gave for later;
- what the session proved: a pitfall with its cause and fix, or the working way to build, test \
or run something after the obvious way failed (project knowledge, ops, unless the team was \
bitten by it before: then a lesson).
Never: the task itself or what was just implemented (the code, its functions, files and \
signatures are in the repository); one-off instructions for this task; today's state (an \
outage, who is away, a date this week); options considered and left out, deferred or rejected; \
values still to be confirmed; the assistant's guesses or unverified claims; questions; \
anything inside <memoryhub-context> blocks (that text came from memory already); secrets \
(passwords, tokens, keys: leave them out entirely).
One memory per thing said, self-contained: a norm and the incident that taught it are one \
lesson; two unrelated norms in one message are two memories. Write "content" in the language \
the user said it in, close to their wording, with names, paths, commands, numbers and \
identifiers exactly as written. Do not repeat any of the existing memories listed by the \
user, not even reworded. When nothing durable happened, answer {{"memories": []}}.

Each memory is an object with these keys:
- "kind": one of the kinds above;
- "content": the memory itself, one to three sentences;
- "title": a short title of at most 60 characters;
- "keywords": {MIN_KEYWORDS} to {MAX_KEYWORDS} words or short phrases, distinct also when \
case is ignored, that a future prompt needing this memory would contain (think backwards from \
such a prompt). Use the languages of the session, prefer concrete entities and proper nouns, \
leave out the project's name;
- "importance": an integer 1 to 4: 4 a red line (safety, data loss, security), 3 something the \
user stressed or that applies everywhere, 2 an abstracted decision or convention, 1 minor;
- "subcategory": only for kind project (required there);
- "goal": only for kind topic (optional there);
- "record_start", "record_end": the "index" of the first and of the last session item the \
memory comes from.
"""


TYPED_INPUT = """\
Existing memories (do not repeat them):
{existing}

Session items (JSON; "index" is the record index):
{items}

Return the memories now, as {{"memories": [...]}}."""


def typed_memories_messages(
    records: Sequence[SourceRecord],
    existing: Sequence[str],
    *,
    token_limit: int = FALLBACK_TOKEN_LIMIT,
) -> list[Message]:
    """[system, user] messages asking for typed memories of `records`. The session JSON (with
    record indexes) is cut to `token_limit` tokens as in stage one; `existing` is listed (up to
    100 entries of 300 characters) so that the model does not repeat it."""
    listed = [
        "- " + re.sub(r"\s+", " ", redact(e)[0]).strip()[:EXISTING_ENTRY_CHARS]
        for e in existing[:EXISTING_MAX]
        if e.strip()
    ]
    return [
        {"role": "system", "content": _typed_system()},
        {
            "role": "user",
            "content": TYPED_INPUT.format(
                existing="\n".join(listed) or "(none)",
                items=_items_json(records, token_limit, with_index=True),
            ),
        },
    ]


_TYPED_KEYS = {
    "kind",
    "content",
    "title",
    "keywords",
    "importance",
    "subcategory",
    "goal",
    "record_start",
    "record_end",
}
_TYPED_REQUIRED = (
    "kind",
    "content",
    "title",
    "keywords",
    "importance",
    "record_start",
    "record_end",
)


def _int_field(item: Mapping[str, Any], key: str, where: str) -> int:
    value = item[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.{key} must be an integer, got {_type_name(value)}")
    return value


def _str_field(item: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} must be a string, got {_type_name(value)}")
    value = value.strip()
    if required and not value:
        raise ValueError(f"{where}.{key} must not be empty")
    return value


def _validate_memory(item: Any, where: str, first: int, last: int) -> ExtractedMemory:
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object, got {_type_name(item)}")
    missing = [k for k in _TYPED_REQUIRED if k not in item]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    extra = sorted(str(k) for k in item if k not in _TYPED_KEYS)
    if extra:
        raise ValueError(
            f"{where}: unexpected key(s) {', '.join(extra)} (allowed: "
            f"{', '.join(sorted(_TYPED_KEYS))})"
        )
    kind_name = _str_field(item, "kind", where)
    kind = resolve_kind(kind_name)
    if kind is None:
        raise ValueError(
            f"{where}.kind {kind_name!r} is not a kind; use one of {', '.join(Kind.values)}"
        )
    content = _str_field(item, "content", where)
    title = _str_field(item, "title", where)

    keywords = item["keywords"]
    if not isinstance(keywords, list):
        raise ValueError(f"{where}.keywords must be a list of strings, got {_type_name(keywords)}")
    if not 1 <= len(keywords) <= MAX_KEYWORDS:
        raise ValueError(
            f"{where}.keywords has {len(keywords)} entries; give {MIN_KEYWORDS} to "
            f"{MAX_KEYWORDS} (at least 1)"
        )
    clean_keywords: list[str] = []
    for position, keyword in enumerate(keywords):
        if not isinstance(keyword, str) or not keyword.strip():
            raise ValueError(f"{where}.keywords[{position}] must be a non-empty string")
        keyword = keyword.strip()
        if keyword.casefold() in (k.casefold() for k in clean_keywords):
            raise ValueError(f"{where}.keywords[{position}] {keyword!r} is a duplicate")
        clean_keywords.append(keyword)

    importance = _int_field(item, "importance", where)
    if not 1 <= importance <= 4:
        raise ValueError(f"{where}.importance must be 1 to 4, got {importance}")

    subcategory = _str_field(item, "subcategory", where, required=False)
    if kind == Kind.PROJECT:
        if subcategory not in Subcategory.values:
            raise ValueError(
                f"{where}.subcategory {subcategory!r} is required for kind project; use one of "
                f"{', '.join(Subcategory.values)}"
            )
    elif subcategory:
        raise ValueError(f"{where}.subcategory is only for kind project (kind is {kind})")
    goal = _str_field(item, "goal", where, required=False)
    if goal and kind != Kind.TOPIC:
        raise ValueError(f"{where}.goal is only for kind topic (kind is {kind})")

    start = _int_field(item, "record_start", where)
    end = _int_field(item, "record_end", where)
    if start > end:
        raise ValueError(f"{where}: record_start {start} is after record_end {end}")
    if start < first or end > last:
        raise ValueError(
            f"{where}: records {start}-{end} are outside the session items {first}-{last}"
        )
    return ExtractedMemory(
        kind=str(kind),
        content=redact(content)[0],
        title=redact(title)[0],
        keywords=tuple(redact(k)[0] for k in clean_keywords),
        importance=importance,
        record_start=start,
        record_end=end,
        subcategory=subcategory,
        goal=redact(goal)[0],
        rule="llm",
    )


def validate_typed(obj: Any, *, record_range: tuple[int, int]) -> list[ExtractedMemory]:
    """A typed-memories answer → ExtractedMemory items (rule "llm").

    `record_range` is (first, last) record index of the session items, both included. Raises
    ValueError on any wrong shape: not exactly {"memories": [...]}, a missing or unknown key, an
    unknown kind (the kinds' seed aliases are accepted), empty content or title, keywords that
    are not 1 to 13 distinct non-empty strings, importance outside 1–4, a subcategory missing or
    unknown on a project memory or present on another kind, a goal on a kind other than topic,
    or a record range outside `record_range`. The prompt asks for 8 to 13 keywords; fewer are
    accepted because the offline extractor, whose answers go through this same validator, cannot
    always find 8 words in a short memory. An empty subcategory or goal counts as absent."""
    if not isinstance(obj, dict):
        raise ValueError(f'expected a JSON object {{"memories": [...]}}, got {_type_name(obj)}')
    _exact_keys(obj, ("memories",), "the answer")
    memories = obj["memories"]
    if not isinstance(memories, list):
        raise ValueError(f"memories must be a list, got {_type_name(memories)}")
    first, last = record_range
    return [
        _validate_memory(item, f"memories[{i}]", first, last) for i, item in enumerate(memories)
    ]
