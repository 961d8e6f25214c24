"""Reading records: what the offline extractor sees of a transcript.

What is read
============
* Only text the user wrote counts for preferences, prohibitions, corrections, facts,
  references and to-dos. The assistant's claims are never taken as durable truths. Its text is
  used in one place only: as the explanation of a fix (rule `error_fix`).
* Text between INJECTION_OPEN and INJECTION_CLOSE was injected by MemoryHub and is removed. An
  unclosed block runs to the end of the text. A record flagged `contains_injection` whose
  marker is nowhere in its readable text is skipped whole, because we cannot tell which part
  was injected. `<system-reminder>` blocks (agent-injected context), fenced code blocks and
  `>` quotes are removed from user text as well.
* `compact_boundary` records: the summary is an LLM's text and is ignored. Records of the
  `keep` tail are read only if they do not repeat a record seen earlier in the input (MewCode
  appends every message before it compacts, so the tail is normally a copy). Records read
  this way carry the index of their boundary.
* Tool calls: an assistant `tool_use` block of a shell tool (Bash, shell, run_command, …)
  with a `command` input, paired with its `tool_result` by `tool_use_id`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memoryhub.core.markers import INJECTION_OPEN, contains_injection, strip_injections
from memoryhub.sessions.conversation import text_of
from memoryhub.sessions.records import (
    ASSISTANT,
    COMPACT_BOUNDARY,
    TOOL_RESULT,
    USER,
    RecordInput,
)

__all__ = ["SourceRecord", "clean_user_text", "expand_records", "readable_text", "source_records"]


@dataclass(frozen=True)
class SourceRecord:
    """One stored transcript record, as the extractor sees it."""

    index: int
    type: str
    content: Any
    tool_use_id: str = ""
    is_error: bool = False
    contains_injection: bool = False


_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)


def readable_text(record: SourceRecord) -> str | None:
    """The record's text with injected blocks removed; None when it cannot be trusted (flagged
    as carrying an injection, but the marker is not in its readable text)."""
    if not isinstance(record.content, str | list):
        return ""
    text = text_of(record.content)
    if INJECTION_OPEN in text:
        return strip_injections(text)
    if record.contains_injection:
        return None
    return text


def source_records(
    rows: Iterable[Mapping[str, Any] | RecordInput], *, start: int = 0
) -> list[SourceRecord]:
    """MewCode wire dicts or RecordInputs → SourceRecords numbered from `start`, with
    `contains_injection` computed as ingestion does (the marker anywhere in the content)."""
    out = []
    for offset, row in enumerate(rows):
        if isinstance(row, RecordInput):
            type_, content, tool_use_id, is_error = (
                row.type,
                row.content,
                row.tool_use_id,
                row.is_error,
            )
        else:
            type_ = str(row.get("type", ""))
            content = row.get("content", "")
            tool_use_id = str(row.get("tool_use_id") or "")
            is_error = bool(row.get("is_error", False))
        out.append(
            SourceRecord(
                index=start + offset,
                type=type_,
                content=content,
                tool_use_id=tool_use_id,
                is_error=is_error,
                contains_injection=contains_injection(content),
            )
        )
    return out


def _signature(type_: str, content: Any, tool_use_id: str) -> str:
    return json.dumps([type_, content, tool_use_id], ensure_ascii=False, sort_keys=True)


def expand_records(records: Sequence[SourceRecord]) -> list[SourceRecord]:
    """The records in order, with each compact boundary replaced by the unseen records of its
    `keep` tail (carrying the boundary's index). Other record types pass through."""
    seen: set[str] = set()
    out: list[SourceRecord] = []
    for record in records:
        if record.type != COMPACT_BOUNDARY:
            seen.add(_signature(record.type, record.content, record.tool_use_id))
            out.append(record)
            continue
        keep = record.content.get("keep") if isinstance(record.content, dict) else None
        for item in keep if isinstance(keep, list) else []:
            if not isinstance(item, dict) or item.get("type") not in (USER, ASSISTANT, TOOL_RESULT):
                continue
            content = item.get("content", "")
            tool_use_id = str(item.get("tool_use_id") or "")
            signature = _signature(str(item["type"]), content, tool_use_id)
            if signature in seen:
                continue
            seen.add(signature)
            out.append(
                SourceRecord(
                    index=record.index,
                    type=str(item["type"]),
                    content=content,
                    tool_use_id=tool_use_id,
                    is_error=bool(item.get("is_error", False)),
                    contains_injection=contains_injection(content),
                )
            )
    return out


def clean_user_text(text: str) -> str:
    text = _SYSTEM_REMINDER.sub(" ", strip_injections(text))
    text = _FENCED.sub(" ", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(">")]
    return "\n".join(lines)
