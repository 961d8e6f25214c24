"""meow-memory's dream (seed-algorithms §5.9): a leased, round-based review of the memories one
agent session (a "window") wrote or was shown, run on a worker after the window went quiet.

Every change goes through the memory services and leaves a MemoryEvent by the actor "dream"
(user-scope creations carry the window's user too, as "dream:<username>"). Nothing is deleted:
memories are updated, marked stale (done or outdated) or archived (wrong, trivial, superseded).

When (dream_enqueue_due, from every pipeline scan; knobs in conf.PipelineConfig, per project):
  * the window's last event (AgentSession.last_active_at) is ≥ dream_idle_minutes old and at
    most 24 h old, and the window has records;
  * it was not dreamed since: the job's input watermark is the newest of the last event and of
    the newest memory the window produced outside a dream (stage 1 usually runs after the
    dream's idle time, so its output makes the window due again), in epoch milliseconds, and
    success_watermark records what the last successful dream covered;
  * the project-local time (Project.timezone) is outside every dream_suppress_windows range and
    the dream_lead_minutes before each;
  * the window's last attempt started ≥ dream_cooldown_hours ago, its retry time has come and
    attempts remain (dream_max_attempts, refilled when the watermark rises);
  * no dream of the project holds a live lease, and only one window per project is sent per scan
    (the one whose last event is oldest, so none ages past 24 h while others go first).
  dream_request (POST …/bank/dream/, `bank_dream`) is the manual trigger: it bypasses idle time,
  suppression, cooldown and spent attempts, but not a live lease.

Scope of a window: memories of the project created from the session (source_session = its
external id) ∪ memories the session was shown (RecallSeen: injected or searched; kept across
compactions, since the dream reviews the whole window), active or stale, project-scope or owned
by the session's user; proposed memories wait for their reviewer and archived ones are done.
RecallSeen is read through its model: the pipeline may import recall (only the reverse is
forbidden by the architecture), and recall imports nothing of the pipeline, so there is no cycle.

Rounds, each one LLM call (llm.complete_json, offline provider by default) and one transaction:
  1. atomic  — project, fact, lesson, rule, soul, user, feedback and reference memories in scope
               (skipped when there are none);
  2. topic   — topic memories in scope; always runs (the model may create topics from the
               conversation);
  3. project — only when the window touched project memories (in scope, or created by rounds
               1–2): every active project memory of the bank, to condense per subcategory.
  Answer: {"operations": [...], "notes": [str, ...]} with operations
    {"op": "update", "id", "content"?, "title"?, "importance"?, "keywords"?, "subcategory"?,
     "goal"?}
    {"op": "stale", "id", "reason", "superseded_by"?}
    {"op": "archive", "id", "reason", "superseded_by"?}
    {"op": "create", "kind", "content", "title"?, "keywords", "importance", "subcategory"?,
     "goal"?, "ref"?}
  validated by validate_operations (ids must belong to the round's scope, kinds to the round,
  superseded_by names an id in scope or the "ref" of a create of the same answer). An invalid
  answer is repaired once by the LLM client, then the round fails: the job records the error and
  is retried after the cooldown while attempts remain; rounds already applied stay applied.
  Applied in the order creates (memory_remember, so a near-copy merges), updates
  (memory_update, verb "dream_update"), then stale/archive (memory_set_status); an operation
  whose memory has meanwhile reached that status is skipped and reported.

Offline rules (the offline provider's answer, deterministic, per round over its active
memories; nothing is summarised offline):
  * done todo → stale: a project/todo memory is marked stale when a later sentence of the window
    (user or assistant text after the todo's record range, or after its creation when it comes
    from elsewhere; or a non-todo memory in the window's scope created after it) says it is
    done — done/finished/fixed/merged/completed/resolved, 完成/已解决/已修复/搞定/已合并 — without
    negation, condition or question, and shares ≥ 2 bank-tokenizer terms with the todo (the
    "done" words themselves not counted);
  * contradiction → archive the older: of two memories of one kind, scope/owner (and
    subcategory for project memories) where memories.services.contradicts(older, newer) holds,
    the older (by updated_at) is archived with superseded_by = the newer; todos are tasks, not
    claims, and are left to the other rules;
  * near-duplicates → archive the older: the same groups, bigram-set Jaccard ≥ 0.6; the kept
    memory takes the higher importance (as memory_remember's merge does);
  * project round: subcategories with more than 8 active entries are reported in the notes.

Finalisation (meow's finalizeDream): updated_at = max(updated_at, T) for the window's own
memories, T being the window's last event fixed when the run starts; each stamped memory gets a
"dream_stamped" event. The run (trigger, rounds, operations applied and skipped, notes,
errors) is the job's detail, shown by GET …/bank/dream/ and the bank's diagnose view.

Lease: Job kind "dream", key "session:<public id>", claimed by conditional UPDATE
(memoryhub.pipeline.jobs) for dream_lease_seconds, heartbeated every dream_heartbeat_seconds and
between rounds; a second dream of the same window meanwhile is skipped.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core import redaction
from memoryhub.core.exceptions import Conflict
from memoryhub.core.services import audit_record
from memoryhub.llm import client as llm
from memoryhub.memories import similarity, text
from memoryhub.memories.kinds import DEFAULT_SCOPE, Kind, Scope, Subcategory, resolve_kind
from memoryhub.memories.models import KEYWORDS_MAX, Memory, MemoryEvent
from memoryhub.memories.services import (
    MemoryInput,
    contradicts,
    memory_remember,
    memory_set_status,
    memory_update,
)
from memoryhub.pipeline import jobs, prompts, services
from memoryhub.pipeline.conf import (
    MINUTES_PER_DAY,
    PipelineConfig,
    parse_window,
    pipeline_config,
    review_required,
)
from memoryhub.pipeline.extractor import SourceRecord, readable_text
from memoryhub.pipeline.models import Job
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession, SessionRecord
from memoryhub.sessions.records import ASSISTANT, USER
from projects.models import Project

DREAM = "dream"
RECENT_HOURS = 24  # meow: only windows whose last event is within a day
DUPLICATE_JACCARD = 0.6
CONDENSE_ABOVE = 8  # project round: a subcategory with more entries needs condensing
OPERATIONS_MAX = 200
RECORDS_MAX = 2000  # the most recent records of a window the rules and prompts read
LOG_MAX = 100  # operations listed per round in the job's detail
PROMPT_CONTENT_CHARS = 2000
IMPORTANCE_MAX = 10  # the prompt asks for 1–4 (meow's soft scale); stored values may be higher

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
    "atomic": tuple(ATOMIC_KINDS),
    "topic": (Kind.TOPIC,),
    "project": (Kind.PROJECT,),
}
SCOPE_STATUSES = (Memory.Status.ACTIVE, Memory.Status.STALE)


def window_key(session: AgentSession) -> str:
    return f"session:{session.public_id}"


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def dream_actor() -> Actor:
    return Actor.for_system(DREAM)


# --- When to dream ----------------------------------------------------------------------------


def suppression(*, now: datetime, tz: str, config: PipelineConfig) -> str | None:
    """The suppression window (as configured) that `now` falls in, counting the lead time
    before each, in the project's timezone; None when a dream may start."""
    local = now.astimezone(ZoneInfo(tz))
    minute = local.hour * 60 + local.minute + local.second / 60
    for window in config.dream_suppress_windows:
        start, end = parse_window(window)
        # Minutes since the lead time began, against the window's length plus the lead: one
        # comparison whether or not the window (or its lead) wraps midnight.
        span = (end - start) % MINUTES_PER_DAY + config.dream_lead_minutes
        if (minute - start + config.dream_lead_minutes) % MINUTES_PER_DAY < span:
            return window
    return None


def _newest_outputs(
    project: Project, sessions: Sequence[AgentSession], since: datetime
) -> dict[str, datetime]:
    """external id → creation time of the newest memory the session produced outside a dream
    after `since` (only such memories can move a window's watermark past its last event)."""
    rows = (
        Memory.objects.filter(
            project=project,
            # updated_at ≥ created_at: the indexed column narrows, created_at decides.
            updated_at__gte=since,
            created_at__gte=since,
            source_session__in=[s.external_id for s in sessions],
        )
        .exclude(created_via=Memory.Via.DREAM)
        .values("source_session")
        .annotate(newest=Max("created_at"))
    )
    return {row["source_session"]: row["newest"] for row in rows}


def _watermark(session: AgentSession, newest_output: datetime | None) -> int:
    last = session.last_active_at
    return _ms(max(last, newest_output) if newest_output else last)


def _due(job: Job | None, watermark: int, now: datetime, config: PipelineConfig) -> bool:
    if job is None:
        return True
    if job.success_watermark >= watermark:
        return False  # dreamed since the window's last change
    if job.status == Job.Status.RUNNING and job.lease_until and job.lease_until > now:
        return False
    if job.started_at and job.started_at + timedelta(hours=config.dream_cooldown_hours) > now:
        return False
    if job.retry_at and job.retry_at > now:
        return False
    # Attempts are refilled by a rising watermark (jobs.ensure), not by waiting.
    return job.retries_remaining > 0 or watermark > job.input_watermark


def dream_enqueue_due(*, project: Project, now: datetime | None = None) -> int | None:
    """The id of the one window of the project that should be dreamed now, or None.

    Ensure-style and cheap when nothing is due: one job row is written, for the chosen window.
    """
    now = now or timezone.now()
    config = pipeline_config(project.settings)
    if suppression(now=now, tz=project.timezone, config=config):
        return None
    if Job.objects.filter(
        project=project, kind=Job.Kind.DREAM, status=Job.Status.RUNNING, lease_until__gt=now
    ).exists():
        return None  # one dream at a time per bank
    recent = now - timedelta(hours=RECENT_HOURS)
    sessions = list(
        AgentSession.objects.filter(
            project=project,
            record_count__gt=0,
            last_active_at__gte=recent,
            last_active_at__lte=now - timedelta(minutes=config.dream_idle_minutes),
        ).order_by("last_active_at", "pk")[: config.thread_scan_limit]
    )
    if not sessions:
        return None
    newest = _newest_outputs(project, sessions, recent)
    existing = {
        job.key: job
        for job in Job.objects.filter(
            kind=Job.Kind.DREAM, key__in=[window_key(s) for s in sessions]
        )
    }
    for session in sessions:
        watermark = _watermark(session, newest.get(session.external_id))
        if not _due(existing.get(window_key(session)), watermark, now, config):
            continue
        job = jobs.ensure(
            kind=Job.Kind.DREAM,
            key=window_key(session),
            project=project,
            watermark=watermark,
            session_id=session.pk,
            retries=config.dream_max_attempts,
        )
        if Job.objects.filter(jobs.claimable(), pk=job.pk).exists():
            return job.pk
    return None


def window_get(*, project: Project, ref: str) -> AgentSession:
    """A session of the project by its public id or external id (for the command)."""
    qs = AgentSession.objects.filter(project=project)
    session = None
    with contextlib.suppress(ValueError):  # not a UUID: an external id
        session = qs.filter(public_id=uuid.UUID(ref)).first()
    session = session or qs.filter(external_id=ref).first()
    if session is None:
        raise Http404("Session not found.")
    return session


def latest_window(*, project: Project) -> AgentSession:
    """The manual trigger's default window: the project's most recently active session."""
    session = AgentSession.objects.filter(project=project).order_by("-last_active_at").first()
    if session is None:
        raise Http404("This project has no session to dream about.")
    return session


@transaction.atomic
def dream_request(*, project: Project, session: AgentSession, actor: Actor) -> Job:
    """The manual trigger: make the window's dream claimable now (bypassing idle time,
    suppression, cooldown and spent attempts) unless one holds a live lease (Conflict)."""
    config = pipeline_config(project.settings)
    now = timezone.now()
    newest = _newest_outputs(project, [session], session.created_at).get(session.external_id)
    job = jobs.ensure(
        kind=Job.Kind.DREAM,
        key=window_key(session),
        project=project,
        watermark=_watermark(session, newest),
        session_id=session.pk,
        retries=config.dream_max_attempts,
    )
    if job.status == Job.Status.RUNNING and job.lease_until and job.lease_until > now:
        raise Conflict("A dream of this window is already running.")
    requested = {"by": actor.label, "at": now.isoformat()}
    updates: dict[str, Any] = {
        "retries_remaining": config.dream_max_attempts,
        "retry_at": None,
        "detail": {**job.detail, "requested": requested},
    }
    if job.input_watermark <= job.success_watermark:
        # Nothing new since the last dream: a manual request is new input of its own.
        updates["input_watermark"] = job.success_watermark + 1
    Job.objects.filter(pk=job.pk).update(**updates)
    audit_record(
        actor=actor,
        project=project,
        verb="bank.dream_requested",
        target_type="session",
        target_id=session.public_id,
    )
    job.refresh_from_db()
    return job


# --- Reading a window -------------------------------------------------------------------------

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
    """Sentences of `value` that state something is done (see the module docstring)."""
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
        """The window's memories now (module docstring: "Scope of a window")."""
        seen = RecallSeen.objects.filter(session=self.session).values("memory_id")
        return (
            Memory.objects.filter(project=self.project, status__in=SCOPE_STATUSES)
            .filter(Q(source_session=self.session.external_id) | Q(pk__in=seen))
            .filter(Q(scope=Scope.PROJECT) | Q(scope=Scope.USER, owner=self.user))
        )


def _window(session: AgentSession) -> Window:
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


def _round_memories(name: str, window: Window, config: PipelineConfig) -> list[Memory]:
    if name == "project":
        qs = Memory.objects.filter(
            Q(project=window.project, kind=Kind.PROJECT, scope=Scope.PROJECT)
            & (Q(status=Memory.Status.ACTIVE) | Q(pk__in=window.scope().values("pk")))
        )
    else:
        qs = window.scope().filter(kind__in=ROUND_KINDS[name])
    newest = qs.order_by("-updated_at", "-pk")
    memories = list(newest[: config.max_raw_memories_for_global])
    return sorted(memories, key=lambda m: (m.kind, m.subcategory, m.updated_at, m.pk))


# --- Offline rules ----------------------------------------------------------------------------


def _is_todo(memory: Memory) -> bool:
    return memory.kind == Kind.PROJECT and memory.subcategory == Subcategory.TODO


def _short(memory: Memory) -> str:
    return str(memory.public_id)[:8]


def done_evidence(todo: Memory, window: Window, evidence: Iterable[Memory]) -> str | None:
    """Why `todo` is done, quoting the window, or None (module docstring: "done todo")."""
    terms = frozenset(text.tokenize(f"{todo.title}\n{todo.content}")) - MARKER_TERMS
    if len(terms) < 2:
        return None
    own_range = (
        todo.source_session == window.session.external_id and todo.source_record_end is not None
    )
    for item in window.texts:
        later = (
            item.index > (todo.source_record_end or 0)
            if own_range
            else item.created_at > todo.created_at
        )
        if not later:
            continue
        for sentence in item.sentences:
            if len(sentence.terms & terms) >= 2:
                return f"record #{item.index} of the session says: {sentence.text[:200]}"
    for memory in evidence:
        if memory.pk == todo.pk or _is_todo(memory) or memory.created_at <= todo.created_at:
            continue
        for sentence in done_sentences(memory.content):
            if len(sentence.terms & terms) >= 2:
                return f"memory {_short(memory)} says: {sentence.text[:200]}"
    return None


def _groups(memories: Iterable[Memory]) -> dict[tuple[Any, ...], list[Memory]]:
    groups: dict[tuple[Any, ...], list[Memory]] = {}
    for memory in memories:
        key = (memory.kind, memory.scope, memory.owner_id, memory.subcategory)
        groups.setdefault(key, []).append(memory)
    return groups


def _newest_first(memory: Memory) -> tuple[datetime, datetime, int]:
    return (memory.updated_at, memory.created_at, memory.pk)


def offline_operations(name: str, memories: Sequence[Memory], window: Window) -> dict[str, Any]:
    """The offline provider's answer for one round (module docstring: "Offline rules")."""
    operations: list[dict[str, Any]] = []
    notes: list[str] = []
    active = [m for m in memories if m.status == Memory.Status.ACTIVE]
    removed: set[int] = set()
    for todo in (m for m in active if _is_todo(m)):
        reason = done_evidence(todo, window, window.initial_scope)
        if reason:
            operations.append({"op": "stale", "id": str(todo.public_id), "reason": reason})
            removed.add(todo.pk)
    raised: dict[int, tuple[Memory, int]] = {}
    for group in _groups(m for m in active if m.pk not in removed).values():
        group.sort(key=_newest_first, reverse=True)
        for position, newer in enumerate(group):
            if newer.pk in removed:
                continue
            for older in group[position + 1 :]:
                if older.pk in removed:
                    continue
                if not _is_todo(newer) and contradicts(older.content, newer.content):
                    reason = f"Contradicted by the newer memory {_short(newer)}."
                elif similarity.jaccard(older.content, newer.content) >= DUPLICATE_JACCARD:
                    reason = f"Near-duplicate of the newer memory {_short(newer)}."
                    importance = min(older.importance, IMPORTANCE_MAX)
                    if importance > raised.get(newer.pk, (newer, newer.importance))[1]:
                        raised[newer.pk] = (newer, importance)
                else:
                    continue
                operations.append(
                    {
                        "op": "archive",
                        "id": str(older.public_id),
                        "reason": reason,
                        "superseded_by": str(newer.public_id),
                    }
                )
                removed.add(older.pk)
    for memory, importance in raised.values():
        operations.append({"op": "update", "id": str(memory.public_id), "importance": importance})
    if name == "project":
        counts: dict[str, int] = {}
        for memory in active:
            if memory.pk not in removed:
                counts[memory.subcategory or "-"] = counts.get(memory.subcategory or "-", 0) + 1
        for subcategory, count in sorted(counts.items()):
            if count > CONDENSE_ABOVE:
                notes.append(
                    f"project/{subcategory} has {count} active entries (more than "
                    f"{CONDENSE_ABOVE}): condense it (the offline provider writes no summaries)."
                )
    return {"operations": operations, "notes": notes}


# --- The operations contract ------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    op: str
    id: str = ""  # update / stale / archive: the public id of a memory in the round's scope
    ref: str = ""  # create: a name superseded_by may use within the same answer
    changes: dict[str, Any] = field(default_factory=dict)  # update: fields; create: the memory
    reason: str = ""
    superseded_by: str = ""  # a public id in scope, or a create's ref


@dataclass(frozen=True)
class Plan:
    operations: list[Operation]
    notes: list[str]


_OP_KEYS = {
    "update": ({"id"}, {"content", "title", "importance", "keywords", "subcategory", "goal"}),
    "stale": ({"id", "reason"}, {"superseded_by"}),
    "archive": ({"id", "reason"}, {"superseded_by"}),
    "create": (
        {"kind", "content", "keywords", "importance"},
        {"title", "subcategory", "goal", "ref"},
    ),
}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _string(item: Mapping[str, Any], key: str, where: str, *, limit: int = 0) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} must be a string, got {_type_name(value)}")
    value = value.strip()
    if limit and len(value) > limit:
        raise ValueError(f"{where}.{key} has {len(value)} characters; at most {limit}")
    return value


def _required(item: Mapping[str, Any], key: str, where: str, *, limit: int = 0) -> str:
    value = _string(item, key, where, limit=limit)
    if not value:
        raise ValueError(f"{where}.{key} must not be empty")
    return value


def _importance(item: Mapping[str, Any], where: str) -> int:
    value = item["importance"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.importance must be an integer, got {_type_name(value)}")
    if not 1 <= value <= IMPORTANCE_MAX:
        raise ValueError(f"{where}.importance must be 1 to 4 (at most {IMPORTANCE_MAX})")
    return value


def _keywords(item: Mapping[str, Any], where: str) -> list[str]:
    value = item["keywords"]
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}.keywords must be a non-empty list of strings")
    if len(value) > KEYWORDS_MAX:
        raise ValueError(f"{where}.keywords has {len(value)} entries; at most {KEYWORDS_MAX}")
    if not all(isinstance(k, str) and k.strip() and len(k) <= 100 for k in value):
        raise ValueError(f"{where}.keywords must be non-empty strings of at most 100 characters")
    return [k.strip() for k in value]


def _resolve(value: Any, scope: Mapping[str, Memory], where: str) -> str:
    """A public id of the round's scope from the model's spelling (full, or a unique prefix of
    at least 8 characters)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be the id of a memory listed in this round")
    wanted = value.strip().lower()
    if wanted in scope:
        return wanted
    matches = [key for key in scope if len(wanted) >= 8 and key.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"{where} {value!r} is not the id of a memory listed in this round")


def _memory_fields(
    item: Mapping[str, Any], where: str, kind: str, *, partial: bool
) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    limit = settings.MEMORY_MAX_CONTENT_CHARS
    if "content" in item or not partial:
        fields["content"] = _required(item, "content", where, limit=limit)
    if "title" in item:
        fields["title"] = _string(item, "title", where, limit=200)
    if "importance" in item:
        fields["importance"] = _importance(item, where)
    if "keywords" in item:
        fields["keywords"] = _keywords(item, where)
    if "subcategory" in item or (kind == Kind.PROJECT and not partial):
        subcategory = _string(item, "subcategory", where)
        if kind != Kind.PROJECT:
            raise ValueError(f"{where}.subcategory is only for project memories (this is {kind})")
        if subcategory not in Subcategory.values:
            raise ValueError(f"{where}.subcategory must be one of {', '.join(Subcategory.values)}")
        fields["subcategory"] = subcategory
    if "goal" in item:
        if kind != Kind.TOPIC:
            raise ValueError(f"{where}.goal is only for topic memories (this is {kind})")
        fields["goal"] = _string(item, "goal", where, limit=500)
    return fields


def validate_operations(
    obj: Any, *, round_name: str, scope: Mapping[str, Memory], user_scope: bool
) -> Plan:
    """A round's answer → a Plan; raises ValueError (which the LLM client repairs once).

    `scope` maps the lower-case public ids of the round's memories to them; `user_scope` says
    whether the window has a user, without whom user-scope memories cannot be created."""
    if not isinstance(obj, dict):
        raise ValueError(f'expected a JSON object {{"operations": [...]}}, got {_type_name(obj)}')
    extra = sorted(str(k) for k in obj if k not in ("operations", "notes"))
    if extra or "operations" not in obj:
        raise ValueError('the answer must be {"operations": [...], "notes": [...]} exactly')
    items = obj["operations"]
    if not isinstance(items, list) or len(items) > OPERATIONS_MAX:
        raise ValueError(f"operations must be a list of at most {OPERATIONS_MAX} objects")
    notes = obj.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ValueError("notes must be a list of strings")
    names = [
        item["ref"].strip()
        for item in items
        if isinstance(item, dict)
        and item.get("op") == "create"
        and isinstance(item.get("ref"), str)
    ]
    refs = {name for name in names if name}
    if len(refs) != len([name for name in names if name]):
        raise ValueError("two created entries have the same ref")
    operations: list[Operation] = []
    updated: set[str] = set()
    retired: set[str] = set()
    for i, item in enumerate(items):
        where = f"operations[{i}]"
        if not isinstance(item, dict) or item.get("op") not in _OP_KEYS:
            raise ValueError(f"{where} must be an object with op one of {', '.join(_OP_KEYS)}")
        op = item["op"]
        required, optional = _OP_KEYS[op]
        missing = sorted(required - set(item))
        unknown = sorted(str(k) for k in item if k not in required | optional | {"op"})
        if missing or unknown:
            raise ValueError(
                f"{where} ({op}): "
                + "; ".join(
                    part
                    for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"unexpected {', '.join(unknown)}" if unknown else "",
                    )
                    if part
                )
            )
        if op == "create":
            kind = resolve_kind(_required(item, "kind", where))
            if kind not in ROUND_KINDS[round_name]:
                raise ValueError(
                    f"{where}.kind must be one of {', '.join(ROUND_KINDS[round_name])} in the "
                    f"{round_name} round"
                )
            if DEFAULT_SCOPE[kind] == Scope.USER and not user_scope:
                raise ValueError(f"{where}: this window has no user to own a {kind} memory")
            changes = {"kind": kind, **_memory_fields(item, where, kind, partial=False)}
            ref = _string(item, "ref", where, limit=64)
            operations.append(Operation(op=op, ref=ref, changes=changes))
            continue
        target = _resolve(item["id"], scope, f"{where}.id")
        if op == "update":
            if target in updated:
                raise ValueError(f"{where}: memory {target} is updated twice")
            updated.add(target)
            changes = _memory_fields(item, where, scope[target].kind, partial=True)
            if not changes:
                raise ValueError(f"{where} (update) changes nothing")
            operations.append(Operation(op=op, id=target, changes=changes))
            continue
        if target in retired:
            raise ValueError(f"{where}: memory {target} is already marked stale or archived")
        retired.add(target)
        superseded_by = ""
        if item.get("superseded_by") not in (None, ""):
            raw = item["superseded_by"]
            if isinstance(raw, str) and raw.strip() in refs:
                superseded_by = "ref:" + raw.strip()
            else:
                superseded_by = _resolve(raw, scope, f"{where}.superseded_by")
                if superseded_by == target:
                    raise ValueError(f"{where}: a memory cannot supersede itself")
        operations.append(
            Operation(
                op=op,
                id=target,
                reason=_required(item, "reason", where, limit=900),
                superseded_by=superseded_by,
            )
        )
    return Plan(operations=operations, notes=[n.strip()[:500] for n in notes if n.strip()])


# --- Applying a plan --------------------------------------------------------------------------


@dataclass
class RoundResult:
    name: str
    scope: int
    applied: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    touched_project: bool = False

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for entry in self.applied:
            counts[entry["op"]] = counts.get(entry["op"], 0) + 1
        return {
            "name": self.name,
            "scope": self.scope,
            "operations": counts,
            "applied": self.applied[:LOG_MAX],
            "skipped": self.skipped[:LOG_MAX],
            "notes": self.notes,
        }


_TARGET_STATUS = {"stale": Memory.Status.STALE, "archive": Memory.Status.ARCHIVED}
_ALLOWED_FROM = {
    Memory.Status.STALE: (Memory.Status.ACTIVE, Memory.Status.PROPOSED),
    Memory.Status.ARCHIVED: (Memory.Status.ACTIVE, Memory.Status.PROPOSED, Memory.Status.STALE),
}


def _clean(value: str) -> str:
    return redaction.redact(value)[0]


@transaction.atomic
def apply_plan(
    plan: Plan, *, scope: Mapping[str, Memory], window: Window, result: RoundResult
) -> None:
    """Creates, then updates, then stale/archive, all by the actor "dream", in one transaction."""
    actor = dream_actor()
    status = (
        Memory.Status.PROPOSED if review_required(window.project.settings) else Memory.Status.ACTIVE
    )
    created: dict[str, Memory] = {}
    order = {"create": 0, "update": 1, "stale": 2, "archive": 2}
    for operation in sorted(plan.operations, key=lambda o: order[o.op]):
        if operation.op == "create":
            data = MemoryInput(
                status=status, source_session=window.session.external_id, **operation.changes
            )
            writer = (
                Actor.for_system(DREAM, user=window.user)
                if DEFAULT_SCOPE[data.kind] == Scope.USER
                else actor
            )
            outcome = memory_remember(project=window.project, actor=writer, data=data)
            if operation.ref:
                created[operation.ref] = outcome.memory
            result.touched_project |= data.kind == Kind.PROJECT
            result.applied.append(
                {
                    "op": "create",
                    "id": str(outcome.memory.public_id),
                    "kind": data.kind,
                    "merged": outcome.merged,
                }
            )
            continue
        memory = Memory.objects.get(pk=scope[operation.id].pk)
        result.touched_project |= memory.kind == Kind.PROJECT
        if operation.op == "update":
            memory_update(
                memory=memory, actor=actor, changes=operation.changes, verb="dream_update"
            )
            result.applied.append(
                {"op": "update", "id": operation.id, "fields": sorted(operation.changes)}
            )
            continue
        target = _TARGET_STATUS[operation.op]
        if memory.status not in _ALLOWED_FROM[target]:
            result.skipped.append(
                {"op": operation.op, "id": operation.id, "why": f"already {memory.status}"}
            )
            continue
        successor = None
        if operation.superseded_by.startswith("ref:"):
            successor = created.get(operation.superseded_by[4:])
        elif operation.superseded_by:
            successor = scope[operation.superseded_by]
        if successor is not None and successor.pk == memory.pk:
            # The entry created to replace it was merged into it (memory_remember): it lives on.
            result.skipped.append(
                {"op": operation.op, "id": operation.id, "why": "its replacement merged into it"}
            )
            continue
        reason = _clean(operation.reason)
        memory_set_status(
            memory=memory, actor=actor, status=target, reason=reason, superseded_by=successor
        )
        entry = {"op": operation.op, "id": operation.id, "reason": reason[:300]}
        if successor is not None:
            entry["superseded_by"] = str(successor.public_id)
        result.applied.append(entry)


# --- Prompts ----------------------------------------------------------------------------------

DREAM_SYSTEM = """\
You are the dreaming curator of a team memory bank that coding agents share. One agent \
session (a "window") has gone quiet. You review the memories it wrote or was shown and tidy \
them, the way a person sorts their notes at the end of a day. You never delete anything: you \
update an entry, mark it stale (done, or no longer true but worth keeping as history), archive \
it (wrong, trivial, or replaced by another entry), or create a new entry.

Answer with strict JSON only, one object, no Markdown fences and no commentary:
{"operations": [ ... ], "notes": ["optional short remarks for the maintainers"]}

Each operation is one of:
{"op": "update", "id": "<id>", "content"?: str, "title"?: str, "importance"?: 1-4, \
"keywords"?: [str], "subcategory"?: str, "goal"?: str}
{"op": "stale", "id": "<id>", "reason": str, "superseded_by"?: "<id or ref>"}
{"op": "archive", "id": "<id>", "reason": str, "superseded_by"?: "<id or ref>"}
{"op": "create", "kind": str, "content": str, "title"?: str, "keywords": [str], \
"importance": 1-4, "subcategory"?: str, "goal"?: str, "ref"?: str}

Rules of the contract:
- "id" is the full id shown in square brackets for an entry of THIS round; any other id is \
refused.
- "ref" names a created entry so that a stale or archive operation of the same answer can \
point to it with superseded_by.
- An entry gets at most one update and at most one stale-or-archive operation.
- Kinds: project (with subcategory overview, structure, decisions, quotes, ops or todo), \
fact, lesson, rule, soul, user, feedback, reference, topic (with a goal). Each round says \
which kinds it may create.
- importance: 4 a red line (safety, data loss), 3 emphasised by the user or true everywhere, \
2 a decision the user made, 1 a useful detail.
- keywords: 8 to 13 words that a future request would contain when this entry matters; core \
entities and proper nouns first; not the project's name.
- Write dates as absolute dates (YYYY-MM-DD); the sealed time T below is "now" for this \
window.
- Entries that are correct and current need no operation. An empty list is a fine answer.
"""

ATOMIC_CHECKLIST = """\
Checklist for these entries:
1. Outdated or wrong according to the conversation → update it (keep what is still true).
2. A todo (project/todo) the conversation shows as finished → stale, quoting the evidence.
3. Trivial, one-off or wrong entries → archive with the reason.
4. A lesson about a bug that has been fixed since: keep it when it still teaches something, \
otherwise stale.
5. Two entries that contradict each other → keep the newer one (by its timestamp) and archive \
the older with superseded_by = the newer.
6. Re-check every importance against the scale.
7. An entry that mixes unrelated things → create one entry per thing (with refs) and archive \
the original, superseded_by one of them.
8. Keywords that would not retrieve the entry → rewrite them.
9. An entry of the wrong kind or subcategory → create it with the right one and archive the old \
entry, superseded_by the new one.
10. A specific lesson that holds in general → create a rule stating it generally.
11. soul, user and rule entries are shown at the start of every session: keep them short, \
durable and few.
May create: {kinds}."""

TOPIC_CHECKLIST = """\
Guide for topics (ongoing threads of work, each with a goal):
- Update the content or goal of a topic the conversation moved forward.
- A finished topic → stale, quoting the evidence; a dead end or a duplicate → archive \
(superseded_by the topic you keep).
- Split a topic that mixes threads; merge topics about one thread (update the one you keep, \
archive the rest with superseded_by).
- A substantial thread of the conversation without a topic → create one (kind topic, goal = \
what done looks like, keywords, importance).
May create: topic."""

PROJECT_CHECKLIST = """\
These are the project's active project entries by subcategory. Condense them:
- Where several entries of one subcategory overlap, create one tighter entry (with a ref) and \
archive the entries it replaces with superseded_by = that ref. Never state a fact that no entry \
states.
- Keep quotes verbatim; keep each open todo as its own entry; finished todos → stale.
- Contradictions → keep the newer entry and archive the older, superseded_by the newer.
May create: project."""

ROUND_TITLES = {
    "atomic": "atomic memories",
    "topic": "topics",
    "project": "project summary",
}


def render_memory(memory: Memory) -> str:
    label = " ".join(
        part
        for part in (
            memory.kind,
            memory.subcategory,
            f"«{memory.title}»" if memory.title else "",
            memory.status,
            str(memory.public_id),
            memory.updated_at.strftime("%Y-%m-%d %H:%M"),
            f"importance {memory.importance}",
        )
        if part
    )
    content = memory.content[:PROMPT_CONTENT_CHARS]
    lines = [f"- [{label}] {content}"]
    if memory.goal:
        lines.append(f"  goal: {memory.goal}")
    lines.append(f"  keywords: {', '.join(memory.keywords) or '(none)'}")
    return "\n".join(lines)


def round_messages(
    name: str, memories: Sequence[Memory], window: Window, config: PipelineConfig, number: int
) -> list[dict[str, str]]:
    if name == "atomic":
        checklist = ATOMIC_CHECKLIST.replace("{kinds}", ", ".join(ATOMIC_KINDS))
    else:
        checklist = TOPIC_CHECKLIST if name == "topic" else PROJECT_CHECKLIST
    budget = min(
        config.fallback_token_limit,
        int(config.context_window * config.rollout_payload_percent) // 2,
    )
    conversation = json.dumps(prompts.rollout_items(window.records), ensure_ascii=False)
    entries = "\n".join(render_memory(m) for m in memories) or "(none)"
    body = (
        f"[memoryhub-dream] round {number} of up to {len(ROUNDS)}: {ROUND_TITLES[name]}\n"
        f"Sealed time T (the window's last event): "
        f"{window.last_event.astimezone(ZoneInfo('UTC')):%Y-%m-%d %H:%M} UTC; project "
        f"timezone {window.project.timezone}.\n"
        f"Window: session {window.session.external_id}.\n\n"
        f"Entries of this round ({len(memories)}):\n{entries}\n\n"
        f"The window's conversation (most recent part, JSON):\n"
        f"{prompts.truncate_by_approx_tokens(conversation, budget)}\n\n"
        f"{checklist}\n\nAnswer with the JSON object now."
    )
    return [{"role": "system", "content": DREAM_SYSTEM}, {"role": "user", "content": body}]


# --- A run ------------------------------------------------------------------------------------


def dream_round(
    name: str, memories: list[Memory], window: Window, config: PipelineConfig, number: int
) -> RoundResult:
    """One round: ask (LLM or offline rules), validate, apply in one transaction."""
    scope = {str(m.public_id): m for m in memories}
    request = llm.LlmRequest(
        purpose=f"dream_{name}",
        messages=round_messages(name, memories, window, config, number),
        offline=lambda: json.dumps(offline_operations(name, memories, window), ensure_ascii=False),
        project=window.project,
        max_tokens=8192,
    )
    plan = llm.complete_json(
        request,
        validate=lambda obj: validate_operations(
            obj, round_name=name, scope=scope, user_scope=window.user is not None
        ),
    )
    result = RoundResult(name=name, scope=len(memories), notes=[_clean(n) for n in plan.notes])
    apply_plan(plan, scope=scope, window=window, result=result)
    return result


def _save_detail(claim: jobs.Claim, detail: dict[str, Any]) -> None:
    """Record progress on the job while the lease is ours (a failed run keeps it)."""
    Job.objects.filter(pk=claim.job_id, owner_token=claim.token).update(detail=detail)


@transaction.atomic
def finalise(window: Window) -> int:
    """meow's finalizeDream stamp: updated_at = max(updated_at, T) for the window's own
    memories, each with a "dream_stamped" event. Returns how many were stamped."""
    actor = dream_actor()
    stamped = list(
        Memory.objects.select_for_update().filter(
            project=window.project,
            source_session=window.session.external_id,
            updated_at__lt=window.last_event,
        )
    )
    if not stamped:
        return 0
    Memory.objects.filter(pk__in=[m.pk for m in stamped]).update(updated_at=window.last_event)
    MemoryEvent.objects.bulk_create(
        [
            MemoryEvent(
                memory=memory,
                project_id=memory.project_id,
                actor_user=actor.user,
                actor_token=actor.token,
                actor_label=actor.label,
                verb="dream_stamped",
                before={"updated_at": memory.updated_at.isoformat()},
                after={"updated_at": window.last_event.isoformat()},
            )
            for memory in stamped
        ]
    )
    return len(stamped)


def dream(job: Job, claim: jobs.Claim) -> dict[str, Any]:
    """The work of one claimed dream job: rounds, then finalisation; returns the job detail."""
    assert job.session_id is not None  # dream jobs always name their window
    session = AgentSession.objects.select_related("project", "created_by_user").get(
        pk=job.session_id
    )
    config = pipeline_config(job.project.settings)
    window = _window(session)
    requested = job.detail.get("requested")
    detail: dict[str, Any] = {
        "trigger": "manual" if requested else "scheduled",
        **({"requested_by": requested} if requested else {}),
        "session": session.external_id,
        "last_event_at": window.last_event.isoformat(),
        "started_at": timezone.now().isoformat(),
        "rounds": [],
    }
    touched = any(m.kind == Kind.PROJECT for m in window.initial_scope)
    for number, name in enumerate(ROUNDS, 1):
        if not jobs.heartbeat(
            claim,
            lease_seconds=config.dream_lease_seconds,
            progress=int(100 * (number - 1) / len(ROUNDS)),
        ):
            raise RuntimeError("lost the dream's lease")
        if name == "project" and not touched:
            detail["rounds"].append({"name": name, "skipped": "no project memory was touched"})
            continue
        memories = _round_memories(name, window, config)
        if name == "atomic" and not memories:
            detail["rounds"].append({"name": name, "skipped": "no memories in scope"})
            continue
        try:
            result = dream_round(name, memories, window, config, number)
        except Exception as exc:
            detail["rounds"].append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
            detail["error"] = f"round {name} failed"
            _save_detail(claim, detail)
            raise
        touched |= result.touched_project
        detail["rounds"].append(result.summary())
        _save_detail(claim, detail)
    detail["stamped"] = finalise(window)
    detail["last_dream_at"] = timezone.now().isoformat()
    return detail


def dream_run(*, job_id: int) -> str:
    """Claim and run one dream job: "done", "skipped" (lease taken, nothing due) or "error".

    Idempotent by claim-by-conditional-UPDATE: the claim only succeeds while the job is due
    (watermark), attempts remain and no live lease is held; a failure is retried after the
    cooldown until dream_max_attempts are spent, then the job is visibly failed."""
    job = Job.objects.select_related("project").get(pk=job_id)
    config = pipeline_config(job.project.settings)
    return services._run(
        job_id,
        lease=config.dream_lease_seconds,
        retry_delay=config.dream_cooldown_hours * 3600,
        heartbeat_seconds=config.dream_heartbeat_seconds,
        work=dream,
    )


# --- Reads ------------------------------------------------------------------------------------


def dream_runs(*, project: Project, limit: int = 50) -> list[Job]:
    """The project's dream jobs, most recently started first."""
    return list(
        Job.objects.filter(project=project, kind=Job.Kind.DREAM)
        .select_related("session")
        .order_by(F("started_at").desc(nulls_last=True), "-pk")[:limit]
    )


def dream_schedule(*, project: Project, now: datetime | None = None) -> dict[str, Any]:
    """The project's dream settings and whether a scheduled dream may start now."""
    now = now or timezone.now()
    config = pipeline_config(project.settings)
    return {
        "timezone": project.timezone,
        "local_time": now.astimezone(ZoneInfo(project.timezone)).isoformat(),
        "suppressed_by": suppression(now=now, tz=project.timezone, config=config),
        "idle_minutes": config.dream_idle_minutes,
        "suppress_windows": list(config.dream_suppress_windows),
        "lead_minutes": config.dream_lead_minutes,
        "cooldown_hours": config.dream_cooldown_hours,
        "max_attempts": config.dream_max_attempts,
    }
