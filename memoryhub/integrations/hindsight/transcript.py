"""oh-my-pi's retain content → transcript records.

oh-my-pi sends a whole session as one item, each message framed as

    [role: user]
    [timestamp: 2026-11-30T04:30:51.065Z]
    the message text
    [user:end]

and messages joined by blank lines. Each framed message becomes a user or assistant record
(another role becomes a user record that keeps the role in its metadata); text outside any
frame, and content with no framing at all, becomes one user record.
"""

from __future__ import annotations

import re
from datetime import datetime

from memoryhub.sessions.records import ASSISTANT, USER, RecordInput, parse_timestamp

_ROLE = re.compile(r"^\[role:\s*([A-Za-z_-]+)\s*\]\s*$")
_TIMESTAMP = re.compile(r"^\[timestamp:\s*([^\]]+?)\s*\]\s*$")
_END = re.compile(r"^\[([A-Za-z_-]+):end\]\s*$")


def _timestamp(value: str) -> datetime | None:
    try:
        return parse_timestamp(value)
    except ValueError:
        return None  # a malformed stamp must not lose the message


def _record(role: str, lines: list[str], timestamp: datetime | None) -> RecordInput | None:
    text = "\n".join(lines).strip()
    if not text:
        return None
    record_type = ASSISTANT if role == "assistant" else USER
    metadata = {} if role in ("user", "assistant") else {"role": role}
    return RecordInput(type=record_type, content=text, timestamp=timestamp, metadata=metadata)


def parse(content: str, *, default_timestamp: datetime | None = None) -> list[RecordInput]:
    """The records of one retained item, in order."""
    lines = content.replace("\r\n", "\n").split("\n")
    if not any(_ROLE.match(line) for line in lines):
        single = _record("user", lines, default_timestamp)
        return [single] if single else []
    records: list[RecordInput] = []
    role: str | None = None
    stamp: datetime | None = None
    body: list[str] = []
    loose: list[str] = []  # text outside any frame

    def close() -> None:
        nonlocal role, body
        record = (
            _record(role, body, stamp or default_timestamp)
            if role
            else _record("user", loose, default_timestamp)
        )
        if record:
            records.append(record)
        if role is None:
            loose.clear()
        role, body = None, []

    for line in lines:
        started = _ROLE.match(line)
        if started:
            close()
            role, stamp = started.group(1).lower(), None
            continue
        if role is None:
            loose.append(line)
            continue
        ended = _END.match(line)
        if ended and ended.group(1).lower() == role:
            close()
            continue
        timestamp = _TIMESTAMP.match(line)
        if timestamp and not body and stamp is None:
            stamp = _timestamp(timestamp.group(1))
            continue
        body.append(line)
    close()
    return records


def render(records: list[tuple[str, str, datetime | None]]) -> str:
    """(role, text, timestamp) → the same framing, for a document's original_text."""
    parts = []
    for role, text, timestamp in records:
        head = [f"[role: {role}]"]
        if timestamp is not None:
            head.append(f"[timestamp: {timestamp.isoformat()}]")
        parts.append("\n".join([*head, text, f"[{role}:end]"]))
    return "\n\n".join(parts)
