"""Records ↔ messages, message-chain validation and token estimates (seed 000 §1–2).

Messages use the Anthropic content-block shape that most agents speak:
{"role": "user" | "assistant", "content": str | [blocks]}, where a user message that carries
tool results has content [{"type": "tool_result", "tool_use_id", "content", "is_error"}, …].
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memoryhub.sessions.records import ASSISTANT, TOOL_RESULT, USER, RecordInput

Message = dict[str, Any]

CHARS_PER_TOKEN = 3.5  # MewCode's estimate_tokens divisor


def _tool_uses(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def is_tool_result_message(message: Message) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def has_tool_uses(message: Message) -> bool:
    return message.get("role") == "assistant" and bool(_tool_uses(message.get("content")))


def records_to_messages(records: Iterable[RecordInput]) -> list[Message]:
    """Replayable records → messages. Consecutive tool results become one user message;
    system_prompt, compression and compact_boundary records are not messages."""
    messages: list[Message] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            messages.append({"role": "user", "content": list(pending)})
            pending.clear()

    for record in records:
        if record.type == TOOL_RESULT:
            pending.append(
                {
                    "type": "tool_result",
                    "tool_use_id": record.tool_use_id,
                    "content": record.content,
                    "is_error": record.is_error,
                }
            )
            continue
        flush()
        if record.type in (USER, ASSISTANT):
            messages.append({"role": record.type, "content": record.content})
    flush()
    return messages


def messages_to_records(messages: Iterable[Message]) -> list[RecordInput]:
    """Messages → records: the inverse of records_to_messages (one record per tool result)."""
    records: list[RecordInput] = []
    for message in messages:
        role = message.get("role")
        content: Any = message.get("content")
        if role == "user" and is_tool_result_message(message):
            for block in content:
                records.append(
                    RecordInput(
                        type=TOOL_RESULT,
                        content=block.get("content", ""),
                        tool_use_id=str(block.get("tool_use_id", "")),
                        is_error=bool(block.get("is_error", False)),
                    )
                )
        elif role in (USER, ASSISTANT):
            records.append(RecordInput(type=role, content=content))
        else:
            raise ValueError(f"unsupported message role {role!r}")
    return records


def valid_prefix_length(records: Sequence[RecordInput]) -> int:
    """Length of the longest prefix that ends with no tool_use awaiting its result.

    MewCode's validate_message_chain: a dangling tool_use and everything after it are not
    replayed (they stay stored).
    """
    pending: set[str] = set()
    last_valid = 0
    for i, record in enumerate(records):
        if record.type == ASSISTANT:
            pending.update(str(b.get("id")) for b in _tool_uses(record.content))
        elif record.type == TOOL_RESULT:
            pending.discard(record.tool_use_id)
        if not pending:
            last_valid = i + 1
    return last_valid


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for block in content:
            if not isinstance(block, dict):
                total += len(json.dumps(block, ensure_ascii=False))
                continue
            kind = block.get("type")
            if kind == "text":
                total += len(str(block.get("text", "")))
            elif kind == "thinking":
                total += len(str(block.get("thinking", "")))
            elif kind == "tool_use":
                total += len(str(block.get("name", "")))
                total += len(json.dumps(block.get("input", {}), ensure_ascii=False))
            elif kind == "tool_result":
                total += _content_chars(block.get("content", ""))
            else:
                total += len(json.dumps(block, ensure_ascii=False))
        return total
    return len(json.dumps(content, ensure_ascii=False))


def estimate_tokens(messages: Iterable[Message]) -> int:
    """int(total characters / 3.5), counting text, thinking, tool names + inputs and results."""
    return int(sum(_content_chars(m.get("content", "")) for m in messages) / CHARS_PER_TOKEN)


def record_tokens(record: RecordInput) -> int:
    return int(_content_chars(record.content) / CHARS_PER_TOKEN)


def text_of(content: Any) -> str:
    """The readable text of a message or record content (text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append(text_of(block.get("content", "")))
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        return json.dumps(content, ensure_ascii=False)
    return str(content)
