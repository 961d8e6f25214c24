"""Provenance excerpts: the transcript records a memory was learned from, for the review
queue and the memory page. Batched: a page of memories costs two queries, whatever its size."""

from __future__ import annotations

import functools
import operator
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Q

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories.models import Memory
from memoryhub.sessions import selectors as session_selectors
from memoryhub.sessions.conversation import text_of
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.selectors import ProjectAccess

EXCERPT_RECORDS = 4  # at most this many records of a memory's range
EXCERPT_CHARS = 500  # of each record's text
_INJECTED = re.compile(
    re.escape(INJECTION_OPEN) + r".*?(?:" + re.escape(INJECTION_CLOSE) + r"|$)", re.S
)


@dataclass
class ExcerptLine:
    index: int
    type: str
    text: str
    truncated: bool


@dataclass
class Excerpt:
    session: AgentSession | None
    lines: list[ExcerptLine]


def _record_text(record: SessionRecord) -> str:
    text = text_of(record.content) if isinstance(record.content, str | list) else ""
    if not text and isinstance(record.content, list):
        names = [
            str(block.get("name", "tool"))
            for block in record.content
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]
        text = " ".join(f"[tool_use {name}]" for name in names)
    # What MemoryHub itself injected is not what the user said: fold it to a marker.
    return _INJECTED.sub("[memoryhub-context]", text).strip()


def excerpts(access: ProjectAccess, memories: Sequence[Memory]) -> dict[int, Excerpt]:
    """memory pk → the excerpt of its source records (memories without a source are absent)."""
    refs = {m.source_session for m in memories if m.source_session}
    if not refs:
        return {}
    uuids = []
    for ref in refs:
        try:
            uuids.append(uuid.UUID(ref))
        except ValueError:
            continue
    # Sessions through their selector: the project's sessions, which every member may read.
    sessions = session_selectors.session_list(
        access=access, filters=session_selectors.SessionFilters()
    ).filter(Q(external_id__in=refs) | Q(public_id__in=uuids))
    by_ref: dict[str, AgentSession] = {}
    for session in sessions:
        by_ref[session.external_id] = session
        by_ref[str(session.public_id)] = session
    ranges: dict[int, tuple[int, int, int]] = {}
    for memory in memories:
        source = by_ref.get(memory.source_session)
        if source is None or memory.source_record_start is None:
            continue
        start = memory.source_record_start
        end = memory.source_record_end if memory.source_record_end is not None else start
        ranges[memory.pk] = (source.pk, start, min(end, start + EXCERPT_RECORDS - 1))
    records: dict[tuple[int, int], SessionRecord] = {}
    if ranges:
        where = functools.reduce(
            operator.or_,
            (Q(session_id=s, index__gte=a, index__lte=b) for s, a, b in set(ranges.values())),
        )
        for row in SessionRecord.objects.filter(where).only(
            "session_id", "index", "type", "content"
        ):
            records[(row.session_id, row.index)] = row
    result: dict[int, Excerpt] = {}
    for memory in memories:
        if memory.source_session == "":
            continue
        lines = []
        if memory.pk in ranges:
            session_pk, start, end = ranges[memory.pk]
            for index in range(start, end + 1):
                found = records.get((session_pk, index))
                if found is None:
                    continue
                text = _record_text(found)
                lines.append(
                    ExcerptLine(
                        index=index,
                        type=found.type,
                        text=text[:EXCERPT_CHARS],
                        truncated=len(text) > EXCERPT_CHARS,
                    )
                )
        result[memory.pk] = Excerpt(session=by_ref.get(memory.source_session), lines=lines)
    return result
