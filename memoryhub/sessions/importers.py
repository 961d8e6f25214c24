"""Transcript importers: MewCode and Claude Code session files → RecordInput, streamed.

Pure parsing, no database. `parse_transcript` is a generator over the file's lines: it holds
one line (plus, for Claude Code, the assistant message being reassembled) at a time, so memory
does not grow with the file. It raises TranscriptFormatError at the first malformed line; the
caller (services.session_import) runs inside one transaction so nothing is half-imported.

Formats:
- MewCode `{id}.jsonl`: every line already is a record {type, content, timestamp, tool_use_id?,
  is_error?}; `{id}.meta` is one JSON object (parse_mewcode_meta). MewCode writes naive local
  times; we cannot know the writer's zone, so naive times are taken as UTC.
- Claude Code `~/.claude/projects/<slug>/<session-uuid>.jsonl`: one event per line (user,
  assistant, summary, system, and bookkeeping types that grow over releases). Mapping rules are
  on ClaudeCodeParser.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from memoryhub.core import parsers
from memoryhub.sessions.records import (
    ASSISTANT,
    COMPACT_BOUNDARY,
    RECORD_TYPES,
    TOOL_RESULT,
    USER,
    RecordInput,
    check_shape,
    parse_timestamp,
)
from memoryhub.sessions.records import (
    json_kind as _kind,
)

MEWCODE = "mewcode"
CLAUDE_CODE = "claude_code"
FORMATS = (MEWCODE, CLAUDE_CODE)

# parse_transcript(format=None) looks at most this many lines to pick the format. Every real
# line of either format is decisive, so this only bounds what we buffer for odd leading lines.
DETECT_MAX_LINES = 20

# Line types only Claude Code writes, and envelope keys only Claude Code lines carry.
_CLAUDE_CODE_TYPES = frozenset(
    {
        "summary",
        "system",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "custom-title",
        "attachment",
    }
)
_CLAUDE_CODE_KEYS = ("message", "sessionId", "uuid", "parentUuid", "leafUuid")

# A \uD800-\uDFFF escape may decode to a lone surrogate, which PostgreSQL cannot store.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class TranscriptFormatError(ValueError):
    """A transcript that cannot be imported: `line` is 1-based, or 0 for the whole file."""

    def __init__(self, line: int, reason: str) -> None:
        self.line = line
        self.reason = reason
        super().__init__(
            _("line %(line)s: %(reason)s") % {"line": line, "reason": reason} if line else reason
        )


@dataclass
class TranscriptInfo:
    """What a transcript says about its session, filled in by parse_transcript as it goes.

    Complete only once the generator is exhausted; external_id and cwd are final from the
    first line that carries them, title from the last summary line.
    """

    format: str = ""
    external_id: str = ""  # Claude Code sessionId (first seen); MewCode keeps it in .meta
    title: str = ""  # Claude Code: the last "summary" line's text
    title_leaf_uuid: str = ""  # that summary line's leafUuid
    custom_title: str = ""  # Claude Code: the last "custom-title" line (a user-chosen name)
    cwd: str = ""  # first seen
    git_branch: str = ""  # first seen
    version: str = ""  # Claude Code version, last seen
    line_count: int = 0
    record_count: int = 0
    skipped: int = 0  # lines read but not imported (sidechain, system, unknown types)
    skipped_kinds: dict[str, int] = field(default_factory=dict)
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None

    def skip(self, kind: str) -> None:
        self.skipped += 1
        self.skipped_kinds[kind] = self.skipped_kinds.get(kind, 0) + 1

    def count(self, record: RecordInput) -> None:
        self.record_count += 1
        ts = record.timestamp
        if ts is not None:
            if self.first_timestamp is None or ts < self.first_timestamp:
                self.first_timestamp = ts
            if self.last_timestamp is None or ts > self.last_timestamp:
                self.last_timestamp = ts


@dataclass
class MewcodeMeta:
    """A MewCode `{id}.meta` file."""

    id: str
    title: str
    summary: str
    message_count: int
    total_tokens: int
    created_at: datetime
    last_active: datetime


class _Invalid(Exception):
    """A validation failure inside one line; the line loop adds the line number."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- public API --------------------------------------------------------------------------


def detect_format(first_lines: list[bytes]) -> str:
    """Say "mewcode" or "claude_code" from the first decisive line, else TranscriptFormatError.

    A line that is not a JSON object fails here with its (1-based, within first_lines) number.
    """
    seen = False
    for lineno, raw in enumerate(first_lines, start=1):
        obj = _decode_line(lineno, raw)
        if obj is None:
            continue
        seen = True
        detected = _classify(obj)
        if detected:
            return detected
    if not seen:
        raise TranscriptFormatError(0, _("the transcript is empty"))
    raise TranscriptFormatError(
        0, _("not a MewCode or Claude Code transcript: no leading line has either format's shape")
    )


def parse_transcript(
    lines: Iterable[bytes],
    *,
    format: str | None = None,
    info: TranscriptInfo | None = None,
) -> Iterator[RecordInput]:
    """Yield the records of a transcript, one line at a time.

    `format` None → detected from the first lines. Pass `info` to collect what the transcript
    says about its session (title, external id, skipped lines) while records stream out.
    Raises TranscriptFormatError at the first malformed line; records before it have already
    been yielded, so callers that must not half-import wrap the whole loop in a transaction.
    """
    it = iter(lines)
    if format is None:
        head = list(itertools.islice(it, DETECT_MAX_LINES))
        format = detect_format(head)
        it = itertools.chain(head, it)
    if format not in FORMATS:
        raise ValueError(f"unknown transcript format {format!r}; expected one of {FORMATS}")
    info = info if info is not None else TranscriptInfo()
    info.format = format
    parser: _Parser = MewcodeParser(info) if format == MEWCODE else ClaudeCodeParser(info)
    for lineno, raw in enumerate(it, start=1):
        info.line_count = lineno
        obj = _decode_line(lineno, raw)
        if obj is None:
            continue
        try:
            records = parser.feed(lineno, obj)
        except _Invalid as exc:
            raise TranscriptFormatError(lineno, exc.reason) from None
        for record in records:
            info.count(record)
            yield record
    for record in parser.finish():
        info.count(record)
        yield record


def parse_mewcode_meta(raw: bytes) -> MewcodeMeta:
    """Parse a MewCode `{id}.meta`; raises TranscriptFormatError (line 0) when malformed."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TranscriptFormatError(
            0, _("meta: not valid UTF-8 (at byte %(at)s)") % {"at": exc.start}
        ) from None
    try:
        data = parsers.loads(text, parse_constant=_reject_constant)
    except (ValueError, _Invalid) as exc:
        raise TranscriptFormatError(
            0, _("meta: not valid JSON (%(why)s)") % {"why": _json_reason(exc)}
        ) from None
    if not isinstance(data, dict):
        raise TranscriptFormatError(
            0, _("meta: expected a JSON object, got %(kind)s") % {"kind": _kind(data)}
        )
    try:
        meta_id = _str_field(data, "id", required=True)
        if not meta_id:
            raise _Invalid(_("'id' must not be empty"))
        return MewcodeMeta(
            id=meta_id,
            title=_str_field(data, "title"),
            summary=_str_field(data, "summary"),
            message_count=_count_field(data, "message_count"),
            total_tokens=_count_field(data, "total_tokens"),
            created_at=_required_time(data, "created_at"),
            last_active=_required_time(data, "last_active"),
        )
    except _Invalid as exc:
        raise TranscriptFormatError(0, _("meta: %(why)s") % {"why": exc.reason}) from None


# --- line decoding -----------------------------------------------------------------------


def _decode_line(lineno: int, raw: bytes) -> dict[str, Any] | None:
    """One line → its JSON object, or None for a blank line. Raises TranscriptFormatError."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a UTF-8 BOM some editors add
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptFormatError(
            lineno,
            _("not valid UTF-8 (byte 0x%(byte)02x at offset %(at)s)")
            % {"byte": raw[exc.start], "at": exc.start},
        ) from None
    # Without its terminator a cut-off last line reads "Unterminated string", not "control
    # character" (the newline would otherwise sit inside the open string).
    text = text.rstrip("\r\n")
    if not text.strip():
        return None
    try:
        obj = parsers.loads(text, parse_constant=_reject_constant)
    except (ValueError, _Invalid) as exc:
        raise TranscriptFormatError(
            lineno, _("not valid JSON (%(why)s)") % {"why": _json_reason(exc)}
        ) from None
    if not isinstance(obj, dict):
        raise TranscriptFormatError(
            lineno, _("expected a JSON object, got %(kind)s") % {"kind": _kind(obj)}
        )
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(obj):
        raise TranscriptFormatError(
            lineno, "contains an unpaired UTF-16 surrogate escape (not valid Unicode text)"
        )
    return obj


def _reject_constant(name: str) -> Any:
    # json accepts NaN/Infinity by default; they are not JSON and PostgreSQL rejects them.
    raise _Invalid(f"{name} is not a JSON value")


def _json_reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return str(exc)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _classify(obj: dict[str, Any]) -> str | None:
    """Which format one line belongs to, or None when the line alone does not say."""
    line_type = obj.get("type")
    if any(key in obj for key in _CLAUDE_CODE_KEYS) or line_type in _CLAUDE_CODE_TYPES:
        return CLAUDE_CODE
    if line_type in RECORD_TYPES and "content" in obj:
        return MEWCODE
    return None


# --- field helpers -----------------------------------------------------------------------


def _str_field(obj: dict[str, Any], key: str, *, where: str = "", required: bool = False) -> str:
    """A string field; absent or null → "" unless required."""
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise _Invalid(
            _("%(where)s'%(key)s' must be a string, got %(kind)s")
            % {"where": where, "key": key, "kind": _kind(value)}
        )
    return value


def _opt_str(obj: dict[str, Any], key: str, where: str = "") -> str | None:
    """A field that is a string or null (parentUuid, message.id); `where` is a path prefix."""
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise _Invalid(f"'{where}{key}' must be a string or null, got {_kind(value)}")
    return value


def _bool_field(obj: dict[str, Any], key: str, where: str = "") -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Invalid(f"{where}'{key}' must be true or false, got {_kind(value)}")
    return value


def _count_field(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid(f"'{key}' must be a non-negative integer, got {value!r}")
    return value


def _timestamp(obj: dict[str, Any], key: str = "timestamp") -> datetime | None:
    value = obj.get(key)
    try:
        return parse_timestamp(value)
    except ValueError:
        if isinstance(value, str):
            raise _Invalid(
                _("'%(key)s' %(value)r is not an ISO 8601 timestamp") % {"key": key, "value": value}
            ) from None
        raise _Invalid(
            _("'%(key)s' must be an ISO 8601 string, got %(kind)s")
            % {"key": key, "kind": _kind(value)}
        ) from None


def _required_time(obj: dict[str, Any], key: str) -> datetime:
    value = _timestamp(obj, key)
    if value is None:
        raise _Invalid(_("'%(key)s' is required") % {"key": key})
    return value


def _check_blocks(blocks: list[Any], where: str) -> None:
    """Every block an object with a string type; tool_use blocks complete (resume pairs them)."""
    for i, block in enumerate(blocks):
        at = f"{where}[{i}]"
        if not isinstance(block, dict):
            raise _Invalid(f"{at} must be an object, got {_kind(block)}")
        block_type = block.get("type")
        if not isinstance(block_type, str):
            raise _Invalid(f"{at} needs a string 'type'")
        if block_type == "tool_use":
            if not isinstance(block.get("id"), str) or not block["id"]:
                raise _Invalid(f"{at}: a tool_use block needs a non-empty string 'id'")
            if not isinstance(block.get("name"), str):
                raise _Invalid(f"{at}: a tool_use block needs a string 'name'")
            if not isinstance(block.get("input", {}), dict):
                raise _Invalid(f"{at}: a tool_use block's 'input' must be an object")


# --- MewCode -----------------------------------------------------------------------------


class _Parser:
    def feed(self, lineno: int, obj: dict[str, Any]) -> list[RecordInput]:
        raise NotImplementedError

    def finish(self) -> list[RecordInput]:
        return []


class MewcodeParser(_Parser):
    """MewCode lines are records already: validate each and keep its line number."""

    def __init__(self, info: TranscriptInfo) -> None:
        self.info = info

    def feed(self, lineno: int, obj: dict[str, Any]) -> list[RecordInput]:
        record = _mewcode_record(obj, where="")
        record.timestamp = _timestamp(obj)
        record.metadata = {"line": lineno}
        return [record]


def _mewcode_record(obj: dict[str, Any], *, where: str) -> RecordInput:
    """Validate one record dict (a line, or an entry of a boundary's keep list)."""
    if "type" not in obj:
        raise _Invalid(_("%(where)srecord has no 'type'") % {"where": where})
    record_type = obj["type"]
    if not isinstance(record_type, str):
        raise _Invalid(f"{where}'type' must be a string, got {_kind(record_type)}")
    if record_type not in RECORD_TYPES:
        raise _Invalid(
            _("%(where)sunknown record type %(type)r; expected one of %(types)s")
            % {"where": where, "type": record_type, "types": ", ".join(RECORD_TYPES)}
        )
    if "content" not in obj:
        raise _Invalid(
            _("%(where)s%(type)s record has no 'content'") % {"where": where, "type": record_type}
        )
    content = obj["content"]
    tool_use_id = _str_field(obj, "tool_use_id", where=where)
    is_error = _bool_field(obj, "is_error", where)
    # The rules the append API applies, so an importable line is also an appendable one.
    problem = check_shape(record_type, content, tool_use_id)
    if problem:
        raise _Invalid(f"{where}{problem}")
    if isinstance(content, list):
        _check_blocks(content, f"{where}content")
    if record_type == COMPACT_BOUNDARY:
        for i, kept in enumerate(content.get("keep", [])):
            at = f"{where}content.keep[{i}]: "
            if not isinstance(kept, dict):
                raise _Invalid(f"{at}must be a record object, got {_kind(kept)}")
            if kept.get("type") == COMPACT_BOUNDARY:
                raise _Invalid(f"{at}a boundary cannot keep another compact_boundary")
            _mewcode_record(kept, where=at)
    return RecordInput(
        type=record_type,
        content=content,
        tool_use_id=tool_use_id,
        # to_dict writes is_error for tool_result only; ignoring it elsewhere keeps round trips.
        is_error=is_error if record_type == TOOL_RESULT else False,
    )


# --- Claude Code -------------------------------------------------------------------------


class ClaudeCodeParser(_Parser):
    """Claude Code lines → records.

    - user, string content → one `user` record. List content → one `tool_result` record per
      tool_result block (content as-is, string or block list; missing → ""), then one `user`
      record for the other blocks: a string when it is a single text block, else the block list
      (images, several texts). Tool results go first so they still follow their tool_use.
    - assistant: consecutive lines with the same message.id (Claude Code writes one content
      block per line) are merged into one `assistant` record with the blocks in order; string
      content becomes a text block. Lines that are skipped do not break the run.
    - system compact_boundary + the following user line with isCompactSummary → one
      `compact_boundary` record {"summary": text, "keep": []}: Claude Code keeps its tail as
      the lines that follow, so they are ordinary records after the boundary. A summary line
      without a boundary still becomes a boundary; a boundary without a summary gets summary ""
      and metadata summary_missing.
    - summary / custom-title lines set TranscriptInfo.title / custom_title, no record.
    - isMeta lines are imported with metadata is_meta; sidechain (subagent) lines, other
      system lines and unknown types are skipped and counted.
    """

    def __init__(self, info: TranscriptInfo) -> None:
        self.info = info
        # At most one record waits: an assistant message whose next line may continue it, or a
        # boundary waiting for its summary line. Each flushes the other, so order is kept.
        self._pending: RecordInput | None = None
        self._pending_message_id: str | None = None

    def feed(self, lineno: int, obj: dict[str, Any]) -> list[RecordInput]:
        if "type" not in obj:
            raise _Invalid("line has no 'type'")
        line_type = obj["type"]
        if not isinstance(line_type, str):
            raise _Invalid(f"'type' must be a string, got {_kind(line_type)}")
        if line_type == "summary":
            self.info.title = _str_field(obj, "summary", required=True)
            self.info.title_leaf_uuid = _opt_str(obj, "leafUuid") or ""
            return []
        if line_type == "custom-title":
            self.info.custom_title = _str_field(obj, "customTitle", required=True)
            return []
        if line_type not in ("user", "assistant", "system"):
            # Claude Code adds bookkeeping types over time (file-history-snapshot, progress…).
            self.info.skip(line_type)
            return []
        if _bool_field(obj, "isSidechain"):
            self.info.skip("sidechain")
            return []
        self._envelope(obj)
        if line_type == "user":
            return self._user(lineno, obj)
        if line_type == "assistant":
            return self._assistant(lineno, obj)
        return self._system(lineno, obj)

    def finish(self) -> list[RecordInput]:
        return self._flush()

    # -- line types --

    def _user(self, lineno: int, obj: dict[str, Any]) -> list[RecordInput]:
        content = self._content(obj)
        timestamp = _timestamp(obj)
        meta = self._meta(lineno, obj)
        if _bool_field(obj, "isCompactSummary"):
            return self._compact_summary(lineno, obj, content, timestamp)
        if isinstance(content, str):
            return self._flush() + [RecordInput(USER, content, timestamp, metadata=meta)]
        _check_blocks(content, "message.content")
        records: list[RecordInput] = []
        others: list[dict[str, Any]] = []
        for i, block in enumerate(content):
            if block["type"] != "tool_result":
                others.append(block)
                continue
            at = f"message.content[{i}]: "
            tool_use_id = _str_field(block, "tool_use_id", where=at, required=True)
            if not tool_use_id:
                raise _Invalid(f"{at}a tool_result block needs a non-empty 'tool_use_id'")
            result = block.get("content")
            if result is None:
                result = ""
            elif isinstance(result, list):
                _check_blocks(result, f"message.content[{i}].content")
            elif not isinstance(result, str):
                raise _Invalid(f"{at}'content' must be a string or an array, got {_kind(result)}")
            records.append(
                RecordInput(
                    TOOL_RESULT,
                    result,
                    timestamp,
                    tool_use_id=tool_use_id,
                    is_error=_bool_field(block, "is_error", at),
                    metadata=dict(meta),
                )
            )
        if len(others) == 1 and others[0]["type"] == "text":
            text = _str_field(others[0], "text", where="message.content: ", required=True)
            records.append(RecordInput(USER, text, timestamp, metadata=dict(meta)))
        elif others:
            records.append(RecordInput(USER, others, timestamp, metadata=dict(meta)))
        if not records:
            self.info.skip("user:empty")
        return self._flush() + records

    def _assistant(self, lineno: int, obj: dict[str, Any]) -> list[RecordInput]:
        message = self._message(obj)
        content = self._content(obj)
        blocks: list[Any] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        _check_blocks(blocks, "message.content")
        message_id = _opt_str(message, "id", "message.")
        model = _opt_str(message, "model", "message.")
        usage = message.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise _Invalid(f"'message.usage' must be an object, got {_kind(usage)}")
        timestamp = _timestamp(obj)
        meta = self._meta(lineno, obj)
        pending = self._pending
        continues = (
            pending is not None
            and pending.type == ASSISTANT
            and message_id is not None
            and message_id == self._pending_message_id
        )
        if pending is not None and continues:
            pending.content.extend(blocks)
            pending.metadata["uuids"].append(meta["uuid"])
            if usage is not None:
                # Each streamed line repeats the usage so far; the last one is the total.
                pending.metadata["usage"] = usage
            if model and "model" not in pending.metadata:
                pending.metadata["model"] = model
            return []
        out = self._flush()
        meta["uuids"] = [meta["uuid"]]
        if message_id is not None:
            meta["message_id"] = message_id
        if model:
            meta["model"] = model
        if usage is not None:
            meta["usage"] = usage
        self._pending = RecordInput(ASSISTANT, list(blocks), timestamp, metadata=meta)
        self._pending_message_id = message_id
        return out

    def _system(self, lineno: int, obj: dict[str, Any]) -> list[RecordInput]:
        subtype = _opt_str(obj, "subtype")
        if subtype != "compact_boundary":
            self.info.skip(f"system:{subtype or 'none'}")
            return []
        compact = obj.get("compactMetadata")
        if compact is not None and not isinstance(compact, dict):
            raise _Invalid(f"'compactMetadata' must be an object, got {_kind(compact)}")
        meta = self._meta(lineno, obj)
        logical_parent = _opt_str(obj, "logicalParentUuid")
        if logical_parent is not None:
            meta["logicalParentUuid"] = logical_parent
        if compact is not None:
            meta["compactMetadata"] = compact
        out = self._flush()
        self._pending = RecordInput(
            COMPACT_BOUNDARY, {"summary": "", "keep": []}, _timestamp(obj), metadata=meta
        )
        self._pending_message_id = None
        return out

    def _compact_summary(
        self,
        lineno: int,
        obj: dict[str, Any],
        content: str | list[Any],
        timestamp: datetime | None,
    ) -> list[RecordInput]:
        if isinstance(content, str):
            summary = content
        else:
            _check_blocks(content, "message.content")
            summary = "\n\n".join(
                _str_field(block, "text", where="message.content: ", required=True)
                for block in content
                if block["type"] == "text"
            )
        pending = self._pending
        if pending is not None and pending.type == COMPACT_BOUNDARY:
            self._pending = None
            out: list[RecordInput] = []
            boundary = pending
        else:
            out = self._flush()
            boundary = RecordInput(
                COMPACT_BOUNDARY, {}, timestamp, metadata=self._meta(lineno, obj)
            )
        boundary.content = {"summary": summary, "keep": []}
        boundary.metadata["summary_line"] = lineno
        boundary.metadata["summary_uuid"] = _opt_str(obj, "uuid")
        return [*out, boundary]

    # -- helpers --

    def _flush(self) -> list[RecordInput]:
        pending, self._pending, self._pending_message_id = self._pending, None, None
        if pending is None:
            return []
        if pending.type == COMPACT_BOUNDARY:
            pending.metadata["summary_missing"] = True
        return [pending]

    def _envelope(self, obj: dict[str, Any]) -> None:
        """Type-check the fields every conversation line carries and note the session's."""
        session_id = _opt_str(obj, "sessionId")
        cwd = _opt_str(obj, "cwd")
        branch = _opt_str(obj, "gitBranch")
        version = _opt_str(obj, "version")
        _bool_field(obj, "isMeta")
        info = self.info
        # First seen: the import service reads external_id right after the first record.
        if session_id and not info.external_id:
            info.external_id = session_id
        if cwd and not info.cwd:
            info.cwd = cwd
        if branch and not info.git_branch:
            info.git_branch = branch
        if version:
            info.version = version

    def _message(self, obj: dict[str, Any]) -> dict[str, Any]:
        message = obj.get("message")
        if not isinstance(message, dict):
            raise _Invalid(f"'message' must be an object, got {_kind(message)}")
        return message

    def _content(self, obj: dict[str, Any]) -> str | list[Any]:
        message = self._message(obj)
        if "content" not in message:
            raise _Invalid("'message' has no 'content'")
        content = message["content"]
        if not isinstance(content, str | list):
            raise _Invalid(f"'message.content' must be a string or an array, got {_kind(content)}")
        return content

    def _meta(self, lineno: int, obj: dict[str, Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "line": lineno,
            "uuid": _opt_str(obj, "uuid"),
            "parentUuid": _opt_str(obj, "parentUuid"),
        }
        if obj.get("isMeta") is True:
            meta["is_meta"] = True
        return meta
