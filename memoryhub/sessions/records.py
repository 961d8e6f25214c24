"""The transcript record: one line of an agent's session, as MewCode stores it.

Types (seed 000 §1): system_prompt (never replayed), user, assistant (string content, or a
block list with text / tool_use / thinking blocks), tool_result (one record per result, with
tool_use_id and is_error), compression (legacy summary) and compact_boundary (content
{"summary": str, "keep": [record dicts]}).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

SYSTEM_PROMPT = "system_prompt"
USER = "user"
ASSISTANT = "assistant"
TOOL_RESULT = "tool_result"
COMPRESSION = "compression"
COMPACT_BOUNDARY = "compact_boundary"
RECORD_TYPES = (SYSTEM_PROMPT, USER, ASSISTANT, TOOL_RESULT, COMPRESSION, COMPACT_BOUNDARY)
MAX_SEQ = 2**63 - 1  # the column is a signed 64-bit integer


@dataclass
class RecordInput:
    """A record as submitted by an agent or produced by an importer, before it is stored."""

    type: str
    content: Any  # str, a list of content blocks, or (compact_boundary) a dict
    timestamp: datetime | None = None
    tool_use_id: str = ""
    is_error: bool = False
    seq: int | None = None  # the client's sequence number: a retried append is idempotent
    metadata: dict[str, Any] = field(default_factory=dict)  # source-format extras

    def to_dict(self) -> dict[str, Any]:
        """The MewCode wire shape: {type, content, timestamp, tool_use_id?, is_error?}."""
        data: dict[str, Any] = {"type": self.type, "content": self.content}
        data["timestamp"] = self.timestamp.isoformat() if self.timestamp else None
        if self.tool_use_id:
            data["tool_use_id"] = self.tool_use_id
        if self.type == TOOL_RESULT:
            data["is_error"] = self.is_error
        return data


def without_nul(value: Any) -> Any:
    """`value` with every NUL in its strings (keys included) replaced by U+FFFD. A transcript
    quotes tool output, a binary file's bytes among it; PostgreSQL's text and JSON cannot hold
    NUL, and refusing the record would refuse the whole chunk an agent pushes, every time."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, list):
        return [without_nul(item) for item in value]
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    return value


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 → aware datetime; naive times are taken as UTC. Raises ValueError."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError("timestamp must be an ISO-8601 string")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        # Stored in UTC: 9999-12-31T23:59-05:00 is past year 9999 there, which PostgreSQL would
        # keep and Python could never read back (the session, and the project's backup, broken).
        parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"timestamp {value!r} is out of range once converted to UTC") from None
    return parsed


def check_shape(record_type: str, content: Any, tool_use_id: str) -> str | None:
    """Why a record is malformed, or None when it is well-formed."""
    if record_type not in RECORD_TYPES:
        return f"unknown type {record_type!r}; expected one of {', '.join(RECORD_TYPES)}"
    if record_type == COMPACT_BOUNDARY:
        if not (
            isinstance(content, dict)
            and isinstance(content.get("summary"), str)
            and isinstance(content.get("keep", []), list)
        ):
            return 'compact_boundary content must be {"summary": str, "keep": [records]}'
        return None
    if record_type == TOOL_RESULT and not tool_use_id:
        return "tool_result needs tool_use_id"
    if record_type == ASSISTANT and isinstance(content, list):
        for block in content:
            if not (isinstance(block, dict) and isinstance(block.get("type"), str)):
                return "assistant content blocks must be objects with a string 'type'"
            if block["type"] == "tool_use" and not block.get("id"):
                return "tool_use blocks need an id"
        return None
    if not isinstance(content, str | list):
        return f"{record_type} content must be a string or a list of blocks"
    for i, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, dict):
            return f"content[{i}] must be an object, got {json_kind(block)}"
    return None


def json_kind(value: Any) -> str:
    """How a decoded JSON value is named in error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def record_from_dict(data: dict[str, Any]) -> RecordInput:
    """A record in the MewCode wire shape → RecordInput. Raises ValueError when malformed."""
    if not isinstance(data, dict):
        raise ValueError("a record must be a JSON object")
    record_type = data.get("type")
    content = data.get("content", "")
    tool_use_id = data.get("tool_use_id") or ""
    if not isinstance(record_type, str):
        raise ValueError("type is required")
    if not isinstance(tool_use_id, str):
        raise ValueError("tool_use_id must be a string")
    problem = check_shape(record_type, content, tool_use_id)
    if problem:
        raise ValueError(problem)
    seq = data.get("seq")
    if seq is not None and (
        not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ
    ):
        raise ValueError(f"seq must be an integer from 0 to {MAX_SEQ}")
    is_error = data.get("is_error", False)
    if not isinstance(is_error, bool | None):  # "false" would otherwise be stored as true
        raise ValueError("is_error must be true or false")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("metadata must be an object")
    return RecordInput(
        type=record_type,
        content=content,
        timestamp=parse_timestamp(data.get("timestamp")),
        tool_use_id=tool_use_id,
        is_error=bool(is_error),
        seq=seq,
        metadata=metadata,
    )
