"""What a dream run reads of its window: the records, the sentences saying something is done,
and the memories each round reviews.

Scope of a window: memories of the project created from the session (source_session = its
external id) ∪ memories the session was shown (RecallSeen: injected or searched; kept across
compactions, since the dream reviews the whole window), active or stale, project-scope or owned
by the session's user; proposed memories wait for their reviewer and archived ones are done.
RecallSeen is read through its model: the pipeline may import recall (only the reverse is
forbidden by the architecture), and recall imports nothing of the pipeline, so there is no cycle.

Each round reviews at most stage2_max_raw_memories memories (the most recently updated):
the atomic and topic rounds the window's scope narrowed to their kinds (ROUND_KINDS), the
project round every project-scope project memory of the bank that is active or in that scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q, QuerySet

from accounts.models import User
from memoryhub.memories import text
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_project_level, memory_visible_q
from memoryhub.pipeline.conf import PipelineConfig
from memoryhub.pipeline.extractor import SourceRecord, readable_text
from memoryhub.recall.selectors import session_touched_memory_ids
from memoryhub.sessions.models import AgentSession, SessionRecord
from memoryhub.sessions.records import ASSISTANT, USER
from projects.models import Project

RECORDS_MAX = 2000  # the most recent records of a window the rules and prompts read

ROUNDS = ("atomic", "topic", "project")
ATOMIC_KINDS = (
    Kind.PROJECT,
    Kind.FACT,
    Kind.LESSON,
    Kind.RULE,
    Kind.SOUL,
    Kind.USER,
    Kind.FEEDBACK,
    Kind.REFERENCE,
)
ROUND_KINDS: dict[str, tuple[str, ...]] = {
    "atomic": ATOMIC_KINDS,
    "topic": (Kind.TOPIC,),
    "project": (Kind.PROJECT,),
}
SCOPE_STATUSES = (Memory.Status.ACTIVE, Memory.Status.STALE)

_DONE = re.compile(
    r"\b(?:done|finished|fixed|merged|completed|resolved)\b|完成|已解决|已修复|修好了|搞定|已合并",
    re.IGNORECASE,
)
# A "done" that is denied, conditional, future or asked about is no evidence.
_NOT_DONE = re.compile(
    r"\b(?:not|never|no|yet|still|once|when|after|until|unless|if|before|will|would|should|"
    r"must|need|needs|going|todo|to-do|pending|almost|nearly|partially|half)\b|n't|n’t|'ll|’ll|"
    r"未|没|不|还|尚|待|要|如果|等|吗",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")
MARKER_TERMS = frozenset(
    text.tokenize("done finished fixed merged completed resolved todo task")
    + text.tokenize("完成 已解决 已修复 修好 搞定 已合并")
)


@dataclass(frozen=True)
class Sentence:
    text: str
    terms: frozenset[str]


def done_sentences(value: str) -> list[Sentence]:
    """Sentences of `value` that state something is done (the done-todo rule in offline.py)."""
    found = []
    for part in _SENTENCE_END.split(value):
        part = part.strip()
        if not part or part.endswith(("?", "？")) or not _DONE.search(part):
            continue
        if _NOT_DONE.search(part):
            continue
        found.append(Sentence(part, frozenset(text.tokenize(part)) - MARKER_TERMS))
    return found


@dataclass(frozen=True)
class WindowText:
    index: int
    created_at: datetime
    sentences: tuple[Sentence, ...]


@dataclass
class Window:
    """One session as the dream sees it, loaded when the run starts."""

    session: AgentSession
    last_event: datetime  # T
    records: list[SourceRecord]
    texts: list[WindowText]  # user and assistant records that say something is done
    initial_scope: list[Memory] = field(default_factory=list)

    @property
    def project(self) -> Project:
        return self.session.project

    @property
    def user(self) -> User | None:
        return self.session.created_by_user

    def scope(self) -> QuerySet[Memory]:
        """The window's memories now (see the module docstring)."""
        seen = session_touched_memory_ids(session=self.session)
        return (
            Memory.objects.filter(project=self.project, status__in=SCOPE_STATUSES)
            .filter(Q(source_session=self.session.external_id) | Q(pk__in=seen))
            .filter(memory_visible_q(user=self.user))
        )


def load_window(session: AgentSession) -> Window:
    rows = list(
        SessionRecord.objects.filter(session=session)
        .order_by("-index")
        .values(
            "index",
            "type",
            "content",
            "tool_use_id",
            "is_error",
            "contains_injection",
            "created_at",
        )[:RECORDS_MAX]
    )
    created = {row["index"]: row["created_at"] for row in rows}
    records = [
        SourceRecord(
            index=row["index"],
            type=row["type"],
            content=row["content"],
            tool_use_id=row["tool_use_id"],
            is_error=row["is_error"],
            contains_injection=row["contains_injection"],
        )
        for row in reversed(rows)
    ]
    texts = []
    for record in records:
        if record.type not in (USER, ASSISTANT):
            continue
        readable = readable_text(record)
        sentences = done_sentences(readable) if readable else []
        if sentences:
            texts.append(WindowText(record.index, created[record.index], tuple(sentences)))
    window = Window(
        session=session, last_event=session.last_active_at, records=records, texts=texts
    )
    window.initial_scope = list(window.scope())
    return window


def round_memories(name: str, window: Window, config: PipelineConfig) -> list[Memory]:
    if name == "project":
        qs = memory_project_level(project=window.project).filter(
            Q(kind=Kind.PROJECT)
            & (Q(status=Memory.Status.ACTIVE) | Q(pk__in=window.scope().values("pk")))
        )
    else:
        qs = window.scope().filter(kind__in=ROUND_KINDS[name])
    newest = qs.order_by("-updated_at", "-pk")
    memories = list(newest[: config.stage2_max_raw_memories])
    return sorted(memories, key=lambda m: (m.kind, m.subcategory, m.updated_at, m.pk))
