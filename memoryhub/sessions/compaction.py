"""Compaction (seed 000 §2, layer 2): when to compact, which tail to keep verbatim, and the
9-section summary of the rest — by the LLM, or deterministically by the offline provider."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memoryhub.sessions.conf import SessionConfig
from memoryhub.sessions.conversation import (
    CHARS_PER_TOKEN,
    Message,
    estimate_tokens,
    has_tool_uses,
    is_tool_result_message,
    text_of,
)

CONTINUATION_HEADER = (
    "This session continues an earlier conversation that was compacted because the context "
    "ran out of space. Summary of the earlier conversation:\n\n"
)
TAIL_NOTE = "\n\nThe most recent messages follow verbatim."

SUMMARY_SYSTEM_PROMPT = """You summarise a coding-agent conversation so the work can continue \
in a fresh context. Do not call any tools.

First think inside <analysis> tags (this part is discarded). Then write the summary inside \
<summary> tags with exactly these nine sections:
1. Primary request and intent
2. Key technical concepts
3. Files and code sections (paths, and why each matters)
4. Errors and fixes
5. Problem solving
6. All user messages (every user message, verbatim, in order)
7. Pending tasks
8. Current work (the most detailed section: what was being done right before this summary)
9. Possible next step

Do not call any tools."""

SUMMARY_REQUEST = "Write the structured summary of the conversation above. Do not call any tools."

# The longest summary, from the LLM (its max_tokens) or offline (cut to fit): a summary that
# could outgrow the window would leave a session that no compaction brings under it.
SUMMARY_MAX_TOKENS = 8192
LIST_MAX_ITEMS = 50  # files, tools, errors, pending items carried in a summary (the latest)
REQUEST_MAX_CHARS = 2000  # the first and the latest request, each

SECTION_TITLES = (
    "Primary request and intent",
    "Key technical concepts",
    "Files and code sections",
    "Errors and fixes",
    "Problem solving",
    "All user messages",
    "Pending tasks",
    "Current work",
    "Possible next step",
)


@dataclass(frozen=True)
class Thresholds:
    context_window: int
    auto: int
    manual: int

    @classmethod
    def for_window(cls, context_window: int, config: SessionConfig) -> Thresholds:
        base = context_window - config.summary_output_reserve
        return cls(
            context_window=context_window,
            auto=base - config.auto_compact_safety_margin,
            manual=base - config.manual_compact_safety_margin,
        )


def keep_start_index(messages: Sequence[Message], config: SessionConfig) -> int:
    """Index of the first message of the verbatim tail (MewCode's OR rule, seed-algorithms §6.1).

    Walk back from the newest message: stop before a message that would push the tail over
    keep_max_tokens (the newest is always kept), and stop once the tail has keep_recent_tokens
    OR min_keep_messages. Then never start on a tool result whose tool_use is outside.
    """
    kept_tokens = 0
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        tokens = estimate_tokens([messages[i]])
        if start < len(messages) and kept_tokens + tokens > config.keep_max_tokens:
            break
        kept_tokens += tokens
        start = i
        if kept_tokens >= config.keep_recent_tokens or len(messages) - start >= (
            config.min_keep_messages
        ):
            break
    while (
        0 < start < len(messages)
        and is_tool_result_message(messages[start])
        and has_tool_uses(messages[start - 1])
    ):
        start -= 1
    return start


def extract_summary(text: str) -> str:
    match = re.search(r"<summary>(.*?)</summary>", text, re.DOTALL)
    return (match.group(1) if match else text).strip()


def render_transcript(messages: Sequence[Message]) -> str:
    """The prefix as plain text for the summariser (one block per message)."""
    lines = []
    for message in messages:
        content: Any = message.get("content")
        if is_tool_result_message(message):
            for block in content:
                tag = "tool error" if block.get("is_error") else "tool result"
                lines.append(f"[{tag} {block.get('tool_use_id')}]\n{text_of(block.get('content'))}")
            continue
        text = text_of(content)
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    text += f"\n[tool call {block.get('name')} {block.get('input')}]"
        lines.append(f"[{message.get('role')}]\n{text}")
    return "\n\n".join(lines)


def turn_groups(messages: Sequence[Message]) -> list[list[Message]]:
    """Messages grouped into turns: a turn ends at an assistant message without tool uses."""
    groups: list[list[Message]] = [[]]
    for message in messages:
        groups[-1].append(message)
        if message.get("role") == "assistant" and not has_tool_uses(message):
            groups.append([])
    return [g for g in groups if g]


# --- The offline summary -------------------------------------------------------------------

_PATH = re.compile(
    r"(?<![\w/])(?:[\w.-]+/)*[\w.-]+\.(?:py|pyi|js|jsx|ts|tsx|md|json|toml|ya?ml|go|rs|java|kt|"
    r"c|h|cc|cpp|hpp|rb|php|sh|sql|html|css|scss|txt|cfg|ini|lock|env)\b"
)
_PATH_KEYS = ("path", "file_path", "filename", "file", "notebook_path")
_COMMAND_KEYS = ("command", "cmd", "script")
_TODO = re.compile(r"^\s*(?:[-*]\s*\[ \]|TODO\b|todo:|next,?\s|then\s)", re.IGNORECASE)


def _bullets(items: Sequence[str], empty: str = "(none)") -> str:
    return "\n".join(f"- {item}" for item in items) if items else empty


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def previous_sections(continuation: str) -> dict[int, str]:
    """The sections of the summary inside a continuation message (our own nine-section
    format), so a second compaction carries them forward instead of nesting them."""
    body = extract_summary(continuation[len(CONTINUATION_HEADER) :].removesuffix(TAIL_NOTE))
    sections: dict[int, str] = {}
    for i, title in enumerate(SECTION_TITLES, 1):
        head = f"{i}. {title}\n"
        start = body.find(head)
        if start < 0:
            continue
        start += len(head)
        end = body.find(f"\n\n{i + 1}. {SECTION_TITLES[i]}\n", start) if i < 9 else -1
        sections[i] = body[start : end if end >= 0 else len(body)].strip()
    return sections


def _bullet_items(section: str) -> list[str]:
    return [line[2:] for line in section.splitlines() if line.startswith("- ")]


def offline_summary(
    messages: Sequence[Message], max_chars: int = int(SUMMARY_MAX_TOKENS * CHARS_PER_TOKEN)
) -> str:
    """The nine sections filled from the transcript alone, deterministically (no LLM).

    After an earlier compaction the prefix starts with its summary: its request, user
    messages, files, tools and errors are carried forward once, so summaries grow with the
    conversation, not with the number of compactions; its conclusions, current work and next
    step stand until the conversation since says something new. The summary stays within
    `max_chars`: lists keep their latest items, the requests are cut, and the user messages
    (section 6) keep the latest that fit, with a note of how many earlier ones the transcript
    holds.
    """
    previous: dict[int, str] = {}
    user_texts: list[str] = []
    assistant_texts: list[str] = []
    files: list[str] = []
    commands: list[str] = []
    tools: list[str] = []
    errors: list[str] = []
    for message in messages:
        content: Any = message.get("content")
        if is_tool_result_message(message):
            for block in content:
                if block.get("is_error"):
                    first = text_of(block.get("content")).strip().splitlines() or [""]
                    errors.append(first[0][:300])
            continue
        text = text_of(content)
        if message.get("role") == "user" and text.startswith(CONTINUATION_HEADER):
            previous = previous_sections(text)
            continue
        files.extend(_PATH.findall(text))
        if message.get("role") == "user":
            if text.strip():
                user_texts.append(text.strip())
        else:
            if text.strip():
                assistant_texts.append(text.strip())
            for block in content if isinstance(content, list) else []:
                if not (isinstance(block, dict) and block.get("type") == "tool_use"):
                    continue
                tools.append(str(block.get("name", "")))
                args: dict[str, Any] = (
                    block["input"] if isinstance(block.get("input"), dict) else {}
                )
                files.extend(str(args[k]) for k in _PATH_KEYS if args.get(k))
                commands.extend(str(args[k])[:300] for k in _COMMAND_KEYS if args.get(k))
    pending = [
        line.strip() for text in user_texts for line in text.splitlines() if _TODO.match(line)
    ]
    earlier_users = previous.get(6, "")
    if earlier_users == "(none)":
        earlier_users = ""
    numbered = sum(1 for line in earlier_users.splitlines() if re.match(r"^\d+\. ", line))
    new_users = "\n".join(f"{i}. {t}" for i, t in enumerate(user_texts, numbered + 1))

    def latest(items: list[str]) -> list[str]:
        return _unique(items)[-LIST_MAX_ITEMS:]

    current_work = (
        assistant_texts[-1][:1500] + ("\nCommands run:\n" + _bullets(_unique(commands)[-10:]))
        if commands and assistant_texts
        else (assistant_texts[-1][:1500] if assistant_texts else "")
    )
    sections = [
        (previous.get(1) or (user_texts[0] if user_texts else "(no user request recorded)"))[
            :REQUEST_MAX_CHARS
        ],
        _bullets(
            latest(_bullet_items(previous.get(2, "")) + [t for t in tools if t]), "(no tools used)"
        ),
        _bullets(latest(_bullet_items(previous.get(3, "")) + files)),
        _bullets(latest(_bullet_items(previous.get(4, "")) + errors), "(no errors seen)"),
        _bullets([t[:500] for t in assistant_texts[-3:]], "")
        or previous.get(5, "(no assistant conclusions)"),
        "",  # the user messages: what is left of the budget (below)
        _bullets(latest(pending), "(none recorded)"),
        current_work or previous.get(8, "(none)"),
        (user_texts[-1][:REQUEST_MAX_CHARS] if user_texts else previous.get(9, "(none)")),
    ]
    users = [line for line in (earlier_users + "\n" + new_users).splitlines() if line.strip()]
    sections[5] = _fit_latest(users, max_chars - len(_render(sections)))
    return _render(sections)


def _render(sections: Sequence[str]) -> str:
    body = "\n\n".join(
        f"{i}. {title}\n{section}"
        for i, (title, section) in enumerate(zip(SECTION_TITLES, sections, strict=True), 1)
    )
    return f"<summary>\n{body}\n</summary>"


def _fit_latest(lines: list[str], budget: int) -> str:
    """The latest of `lines` that fit in `budget` characters, with a note of how many earlier
    ones were left out (the transcript keeps them); "(none)" without any."""
    if not lines:
        return "(none)"
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = len(line) + 1
        if used + cost > budget - 120:  # room for the note
            break
        kept.append(line)
        used += cost
    if not kept:  # not even the latest fits whole: its end
        kept = [lines[-1][-max(budget - 120, 200) :]]
    left_out = len(lines) - len(kept)
    note = (
        [f"({left_out} earlier lines of user messages are in the transcript.)"] if left_out else []
    )
    return "\n".join(note + kept[::-1])


def summary_messages(prefix: Sequence[Message]) -> list[dict[str, Any]]:
    """The LLM request for the prefix: system prompt, transcript, request."""
    return [
        {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
        {"role": "user", "content": render_transcript(prefix) + "\n\n" + SUMMARY_REQUEST},
    ]
