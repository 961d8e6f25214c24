"""What a memory event changed, field by field, with a word diff for text (for the history)."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from memoryhub.memories.services import EDITABLE_FIELDS

_WORDS = re.compile(r"\s+|[\w\u3400-\u9fff]+|[^\w\s]", re.UNICODE)
# Field order in the history; anything else (e.g. merged_from) follows.
FIELD_ORDER = (
    "status",
    "status_reason",
    "superseded_by",
    "merged_from",
    "scope",
    "owner",
    *EDITABLE_FIELDS,
)
TEXT_FIELDS = {"title", "content", "goal", "status_reason"}


@dataclass
class Segment:
    op: str  # "eq" | "del" | "ins"
    text: str


@dataclass
class FieldChange:
    name: str
    before: str = ""
    after: str = ""
    segments: list[Segment] = field(default_factory=list)  # text fields: a word diff
    added: list[str] = field(default_factory=list)  # list fields
    removed: list[str] = field(default_factory=list)


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def word_diff(before: str, after: str) -> list[Segment]:
    """Word-level diff; CJK runs are one token each (difflib on characters would be noisy)."""
    a, b = _WORDS.findall(before), _WORDS.findall(after)
    segments: list[Segment] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            segments.append(Segment("eq", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            segments.append(Segment("del", "".join(a[i1:i2])))
        if j2 > j1:
            segments.append(Segment("ins", "".join(b[j1:j2])))
    return segments


def changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[FieldChange]:
    before, after = before or {}, after or {}
    names = [n for n in FIELD_ORDER if n in before or n in after]
    names += sorted((set(before) | set(after)) - set(names))
    result = []
    for name in names:
        old, new = before.get(name), after.get(name)
        if name in before and name in after and old == new:
            continue
        change = FieldChange(name=name, before=_show(old), after=_show(new))
        if name in TEXT_FIELDS and isinstance(old, str) and isinstance(new, str):
            change.segments = word_diff(old, new)
        elif isinstance(old, list) or isinstance(new, list):
            old_list, new_list = list(old or []), list(new or [])
            change.added = [str(v) for v in new_list if v not in old_list]
            change.removed = [str(v) for v in old_list if v not in new_list]
        result.append(change)
    return result
