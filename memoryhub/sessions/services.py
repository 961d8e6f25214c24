"""Writes to agent sessions: create, append, import, compact, end, delete, resume's cache."""

from __future__ import annotations

import functools
import itertools
import json
import secrets
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.core.exceptions import ApplicationError, Conflict, PayloadTooLarge
from memoryhub.core.markers import contains_injection
from memoryhub.core.services import audit_record
from memoryhub.llm import client as llm
from memoryhub.llm.errors import LlmBudgetExhausted, LlmError
from memoryhub.sessions import compaction, importers
from memoryhub.sessions.conf import SessionConfig, ingest_limits, session_config
from memoryhub.sessions.conversation import (
    Message,
    estimate_tokens,
    messages_to_records,
    record_tokens,
    records_to_messages,
    text_of,
    valid_prefix_length,
)
from memoryhub.sessions.models import AgentSession, SessionRecord, ToolResultDecision
from memoryhub.sessions.records import (
    ASSISTANT,
    COMPACT_BOUNDARY,
    COMPRESSION,
    SYSTEM_PROMPT,
    USER,
    RecordInput,
    record_from_dict,
    without_nul,
)
from memoryhub.sessions.trimming import TrimState, apply_tool_result_budget
from projects.models import Project

INSERT_BATCH = 1000
TITLE_CHARS = 50


def new_external_id() -> str:
    """MewCode's id shape: session_YYYYMMDD_HHMMSS_xxxx."""
    suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(4))
    return f"session_{timezone.now():%Y%m%d_%H%M%S}_{suffix}"


EXTERNAL_ID_SLASH = (
    'An external id cannot contain "/": it names the session in URLs (…/sessions/{id}/), '
    "where a slash, even encoded as %2F, splits the path."
)


def validate_external_id(external_id: str) -> None:
    """For a serializer field naming a session to create; the services check the same."""
    if "/" in external_id:
        raise ValidationError(EXTERNAL_ID_SLASH, code="invalid")


def _check_author(session: AgentSession, actor: Actor) -> None:
    # A session with no author (its creator's account was deleted, or a process made it) is
    # nobody's to take over either: the REST rule (sessions.selectors.session_get) says the same.
    if actor.user is not None and session.created_by_user_id != actor.user.pk:
        raise Conflict(
            gettext("Session %(id)r belongs to another person: use another id.")
            % {"id": session.external_id},
            details={"external_id": ["belongs to another person"]},
        )


@transaction.atomic
def session_get_or_create(
    *,
    project: Project,
    actor: Actor,
    external_id: str = "",
    title: str = "",
    metadata: dict[str, Any] | None = None,
    source: str = AgentSession.Source.API,
    url_safe_id: bool = True,
) -> tuple[AgentSession, bool]:
    """The project's session with this external id, created when missing (idempotent for its
    author; another person's session of that id is a 409: what a session says becomes its
    author's memories, so nobody else may take it over).
    An id with "/" is refused only when creating: one stored before that rule still resolves.
    url_safe_id=False keeps a foreign protocol's ids as they are (a Hindsight document id may
    hold "/", as in Hindsight); REST then names that session by its public id."""
    external_id = external_id or new_external_id()
    existing = AgentSession.objects.filter(project=project, external_id=external_id).first()
    if existing is not None:
        _check_author(existing, actor)
        return existing, False
    if url_safe_id and "/" in external_id:
        raise ValidationError({"external_id": EXTERNAL_ID_SLASH})
    if session_config(project.settings).redact_secrets:  # agents put paths, env lines here
        title = redaction.redact(title)[0]
        metadata = redaction.redact_json(metadata or {})[0]
    session = AgentSession(
        project=project,
        external_id=external_id,
        title=title[:200],
        metadata=metadata or {},
        source=source,
        created_by_user=actor.user,
        created_by_token=actor.token,
    )
    session.full_clean()
    try:
        with transaction.atomic():
            session.save()
    except IntegrityError:  # a concurrent request created it first
        existing = AgentSession.objects.get(project=project, external_id=external_id)
        _check_author(existing, actor)
        return existing, False
    _session_audit(session, actor, "session.created", after={"external_id": external_id})
    return session, True


@dataclass
class AppendResult:
    created: list[SessionRecord] = field(default_factory=list)
    skipped: int = 0  # records whose seq was already stored (a retried append)


def _check_limits(records: Sequence[RecordInput]) -> None:
    limits = ingest_limits()
    if len(records) > limits.records_per_append:
        raise PayloadTooLarge(
            f"At most {limits.records_per_append} records per append; got {len(records)}.",
            details={"limit_records": limits.records_per_append},
        )
    for index, record in enumerate(records):
        size = len(json.dumps(record.content, ensure_ascii=False).encode())
        if size > limits.record_max_bytes:
            raise PayloadTooLarge(
                f"Record {index} is {size} bytes; the limit is {limits.record_max_bytes} bytes "
                "per record.",
                details={"record": index, "limit_bytes": limits.record_max_bytes},
            )


def _session_audit(
    session: AgentSession,
    actor: Actor,
    verb: str,
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> None:
    audit_record(
        actor=actor,
        project=session.project,
        verb=verb,
        target_type="session",
        target_id=session.public_id,
        before=before,
        after=after,
    )


class _Counters:
    """What a batch of records adds to (or, removed, takes from) the session's counters."""

    def __init__(self) -> None:
        self.records = 0
        self.messages = 0
        self.tokens = 0
        self.redactions = 0
        self.injections = 0
        self.first_user_text = ""

    def count(self, record_type: str, *, tokens: int, redactions: int, injected: bool) -> None:
        self.records += 1
        self.messages += int(record_type in (USER, ASSISTANT))
        self.tokens += tokens
        self.redactions += redactions
        self.injections += int(injected)

    @classmethod
    def removed(cls, rows: Sequence[SessionRecord]) -> _Counters:
        """Counters that take stored `rows` back out (a rewind), before any new appends."""
        counters = cls()
        for row in rows:
            counters.count(
                row.type,
                tokens=record_tokens(row.to_input()),
                redactions=row.redactions,
                injected=row.contains_injection,
            )
        for name in ("records", "messages", "tokens", "redactions", "injections"):
            setattr(counters, name, -getattr(counters, name))
        return counters


def _insert(
    session: AgentSession, batch: Sequence[RecordInput], config: SessionConfig, counters: _Counters
) -> list[SessionRecord]:
    """Redact, flag and insert `batch` after the session's last record."""
    rows = []
    start = session.record_count + counters.records
    for offset, record in enumerate(batch):
        raw_content, raw_metadata = without_nul(record.content), without_nul(record.metadata)
        content, redactions = (
            redaction.redact_json(raw_content) if config.redact_secrets else (raw_content, 0)
        )
        metadata, meta_redactions = (
            redaction.redact_json(raw_metadata) if config.redact_secrets else (raw_metadata, 0)
        )
        redactions += meta_redactions
        flagged = contains_injection(content)
        rows.append(
            SessionRecord(
                session=session,
                index=start + offset,
                type=record.type,
                content=content,
                tool_use_id=without_nul(record.tool_use_id),
                is_error=record.is_error,
                timestamp=record.timestamp,
                seq=record.seq,
                redactions=redactions,
                contains_injection=flagged,
                metadata=metadata,
            )
        )
        counters.count(
            record.type, tokens=record_tokens(record), redactions=redactions, injected=flagged
        )
        if record.type == USER and not counters.first_user_text and not flagged:
            counters.first_user_text = text_of(content).strip()
    SessionRecord.objects.bulk_create(rows, batch_size=INSERT_BATCH)
    return rows


def _finish(session: AgentSession, counters: _Counters) -> None:
    session.record_count += counters.records
    session.message_count += counters.messages
    session.token_estimate = max(0, session.token_estimate + counters.tokens)
    session.redaction_count = max(0, session.redaction_count + counters.redactions)
    session.injected_block_count += counters.injections
    session.last_active_at = timezone.now()
    if not session.title and counters.first_user_text:
        session.title = counters.first_user_text[:TITLE_CHARS]
    session.save(
        update_fields=[
            "record_count",
            "message_count",
            "token_estimate",
            "redaction_count",
            "injected_block_count",
            "last_active_at",
            "title",
        ]
    )


@transaction.atomic
def records_append(
    *, session: AgentSession, actor: Actor, records: Sequence[RecordInput]
) -> AppendResult:
    """Append records all-or-nothing. Records whose `seq` is already stored are skipped, so an
    agent can retry an append safely (idempotent by client sequence number)."""
    _check_limits(records)
    seqs = [r.seq for r in records if r.seq is not None]
    if len(seqs) != len(set(seqs)):
        raise ValidationError({"records": gettext("seq values must be unique within an append.")})
    # The row lock serialises appends to one session, so indexes stay dense and ordered.
    session = AgentSession.objects.select_for_update().get(pk=session.pk)
    stored = set(
        SessionRecord.objects.filter(session=session, seq__in=seqs).values_list("seq", flat=True)
    )
    fresh = [r for r in records if r.seq is None or r.seq not in stored]
    config = session_config(session.project.settings)
    counters = _Counters()
    created = _insert(session, fresh, config, counters) if fresh else []
    if created:
        _finish(session, counters)
    return AppendResult(created=created, skipped=len(records) - len(fresh))


@transaction.atomic
def session_import(
    *,
    project: Project,
    actor: Actor,
    lines: Iterable[bytes],
    meta: bytes | None = None,
    transcript_format: str | None = None,
    external_id: str = "",
) -> AgentSession:
    """Import a whole transcript (MewCode .jsonl [+ .meta] or Claude Code .jsonl), streamed in
    batches inside one transaction: a malformed line rolls everything back.

    A session id with "/" cannot name the session in URLs and is refused like a malformed file
    (TranscriptFormatError): an upload whose transcript carries one (MewCode .meta id, Claude
    Code sessionId) can be retried with another `external_id`; a bundle import (interchange)
    names that file among its errors."""
    info = importers.TranscriptInfo()
    mewcode_meta = importers.parse_mewcode_meta(meta) if meta else None
    parsed = importers.parse_transcript(lines, format=transcript_format, info=info)
    # The first record settles the format and (Claude Code) the session id.
    first = next(parsed, None)
    given = external_id
    external_id = (
        external_id
        or (mewcode_meta.id if mewcode_meta else "")
        or info.external_id
        or new_external_id()
    )
    if "/" in external_id:
        hint = "" if given else "; import it with another external_id"
        raise importers.TranscriptFormatError(
            0, f'the session id {external_id!r} contains "/", which a session URL cannot hold{hint}'
        )
    if AgentSession.objects.filter(project=project, external_id=external_id).exists():
        raise Conflict(
            gettext("Session %(id)r already exists in this project.") % {"id": external_id},
            details={"external_id": [external_id]},
        )
    session, _ = session_get_or_create(
        project=project,
        actor=actor,
        external_id=external_id,
        source=AgentSession.Source.MEWCODE
        if info.format == "mewcode"
        else AgentSession.Source.CLAUDE_CODE,
    )
    config = session_config(project.settings)
    counters = _Counters()
    limit = ingest_limits().record_max_bytes
    batch: list[RecordInput] = []

    def flush() -> None:
        _insert(session, batch, config, counters)
        batch.clear()

    for record in itertools.chain([first] if first else [], parsed):
        size = len(json.dumps(record.content, ensure_ascii=False).encode())
        if size > limit:
            raise PayloadTooLarge(
                f"A record of {size} bytes exceeds the limit of {limit} bytes per record.",
                details={"line": record.metadata.get("line"), "limit_bytes": limit},
            )
        batch.append(record)
        if len(batch) >= INSERT_BATCH:
            flush()
    if batch:
        flush()
    _finish(session, counters)
    # The transcript's own last activity (never later than now), not the time of its import.
    last_active = mewcode_meta.last_active if mewcode_meta else info.last_timestamp
    if last_active is not None:
        session.last_active_at = min(last_active, timezone.now())
        session.save(update_fields=["last_active_at"])
    title = (mewcode_meta.title if mewcode_meta else "") or info.title
    extra: dict[str, Any] = {"cwd": info.cwd} if info.cwd else {}
    if title or extra or mewcode_meta:
        summary = mewcode_meta.summary if mewcode_meta else session.summary
        if config.redact_secrets:  # the .meta title is the first user message, unredacted
            title, _ = redaction.redact(title)
            summary, _ = redaction.redact(summary)
            extra, _ = redaction.redact_json(extra)
        session.title = (title or session.title)[:200]
        session.summary = summary
        if mewcode_meta and mewcode_meta.created_at:
            session.created_at = mewcode_meta.created_at
        session.metadata = session.metadata | extra | {"skipped_lines": info.skipped}
        session.save(update_fields=["title", "summary", "created_at", "metadata"])
    _session_audit(
        session,
        actor,
        "session.imported",
        after={
            "format": info.format,
            "records": session.record_count,
            "redactions": session.redaction_count,
        },
    )
    return session


@transaction.atomic
def session_end(*, session: AgentSession, actor: Actor) -> AgentSession:
    if session.status != AgentSession.Status.ENDED:
        session.status = AgentSession.Status.ENDED
        session.last_active_at = timezone.now()
        session.save(update_fields=["status", "last_active_at"])
        _session_audit(session, actor, "session.ended")
    return session


@transaction.atomic
def session_delete(*, session: AgentSession, actor: Actor) -> None:
    _session_audit(
        session,
        actor,
        "session.deleted",
        before={"external_id": session.external_id, "records": session.record_count},
    )
    session.delete()


# --- Resume ---------------------------------------------------------------------------------


@dataclass
class Conversation:
    """What a resume replays: the boundary summary (if any), then records up to the last point
    with no dangling tool_use."""

    messages: list[Message]
    boundary_index: int | None
    replayed_from_index: int
    dropped_records: int


def session_conversation(session: AgentSession) -> Conversation:
    boundary = (
        SessionRecord.objects.filter(session=session, type=COMPACT_BOUNDARY)
        .order_by("-index")
        .first()
    )
    rows = SessionRecord.objects.filter(session=session).exclude(
        type__in=[SYSTEM_PROMPT, COMPRESSION, COMPACT_BOUNDARY]
    )
    chain: list[RecordInput] = []
    if boundary is not None:
        rows = rows.filter(index__gt=boundary.index)
        chain = [record_from_dict(r) for r in boundary.content.get("keep", [])]
    chain += [row.to_input() for row in rows.order_by("index")]
    valid = valid_prefix_length(chain)
    messages = records_to_messages(chain[:valid])
    if boundary is not None:
        header = compaction.CONTINUATION_HEADER + boundary.content.get("summary", "")
        if boundary.content.get("keep"):
            header += compaction.TAIL_NOTE
        messages.insert(0, {"role": "user", "content": header})
    return Conversation(
        messages=messages,
        boundary_index=boundary.index if boundary else None,
        replayed_from_index=boundary.index + 1 if boundary else 0,
        dropped_records=len(chain) - valid,
    )


def session_resume(
    *, session: AgentSession, artifact_url: Callable[[str], str]
) -> tuple[Conversation, list[Message]]:
    """The conversation to replay, with tool results trimmed.

    Idempotent (ensure-style): trimming decisions made here are stored once and reused, so
    every later resume of the same records returns the same bytes.
    """
    conversation = session_conversation(session)
    config = session_config(session.project.settings)
    state = TrimState()
    for tool_id, replacement in ToolResultDecision.objects.filter(session=session).values_list(
        "tool_use_id", "replacement"
    ):
        if replacement:
            state.replacements[tool_id] = replacement
        else:
            state.verbatim.add(tool_id)
    trimmed, new = apply_tool_result_budget(conversation.messages, state, config, artifact_url)
    decisions = [ToolResultDecision(session=session, tool_use_id=i) for i in new.verbatim] + [
        ToolResultDecision(session=session, tool_use_id=i, replacement=preview, artifact=full)
        for i, (preview, full) in new.persisted.items()
    ]
    if decisions:
        # ignore_conflicts: a concurrent resume that decided first wins; both decided alike.
        ToolResultDecision.objects.bulk_create(decisions, ignore_conflicts=True)
    return conversation, trimmed


# --- Compaction -----------------------------------------------------------------------------


@dataclass
class CompactOutcome:
    compacted: bool
    reason: str
    current_tokens: int
    thresholds: compaction.Thresholds
    boundary: SessionRecord | None = None
    summary: str = ""
    kept_messages: int = 0
    tokens_after: int = 0


class CompactionFailed(ApplicationError):
    status_code = 502
    code = "compaction_failed"


def session_compact(
    *,
    session: AgentSession,
    actor: Actor,
    context_window: int,
    manual: bool,
    current_tokens: int | None = None,
) -> CompactOutcome:
    """Compact when due: summarise the prefix, keep the tail verbatim, append a boundary.

    The LLM call happens outside any transaction; the boundary append is atomic.
    """
    config = session_config(session.project.settings)
    conversation = session_conversation(session)
    messages = conversation.messages
    tokens = current_tokens if current_tokens is not None else estimate_tokens(messages)
    thresholds = compaction.Thresholds.for_window(context_window, config)

    def outcome(reason: str) -> CompactOutcome:
        return CompactOutcome(False, reason, tokens, thresholds)

    if not manual:
        if tokens < thresholds.auto:
            return outcome("below_threshold")
        if session.compact_failures >= config.compact_max_failures:
            return outcome("circuit_open")
    keep_start = compaction.keep_start_index(messages, config)
    prefix = messages[:keep_start]
    if keep_start <= 0 or estimate_tokens(prefix) < config.min_summarize_prefix_tokens:
        return outcome("prefix_too_small")
    try:
        summary = _summarise(session.project, prefix)
    except LlmBudgetExhausted as exc:
        _count_failure(session)
        raise ApplicationError(str(exc)) from exc
    except LlmError as exc:
        _count_failure(session)
        raise CompactionFailed(f"The summary could not be produced: {exc}") from exc
    keep = [r.to_dict() for r in messages_to_records(messages[keep_start:])]
    boundary_record = RecordInput(
        type=COMPACT_BOUNDARY,
        content={"summary": summary, "keep": keep},
        timestamp=timezone.now(),
    )
    boundary = _append_boundary(session, actor, boundary_record, tokens)
    after = session_conversation(session)
    return CompactOutcome(
        True,
        "compacted",
        tokens,
        thresholds,
        boundary=boundary,
        summary=summary,
        kept_messages=len(messages) - keep_start,
        tokens_after=estimate_tokens(after.messages),
    )


def _summarise(project: Project, prefix: list[Message]) -> str:
    """Up to three attempts; when the prompt is too long, drop the oldest fifth of turns."""
    groups = compaction.turn_groups(prefix)
    for attempt in range(3):
        current = [m for g in groups for m in g]
        request = llm.LlmRequest(
            purpose="compaction",
            messages=compaction.summary_messages(current),
            offline=functools.partial(compaction.offline_summary, current),
            max_tokens=compaction.SUMMARY_MAX_TOKENS,
            project=project,
        )
        try:
            return compaction.extract_summary(llm.complete(request).text)
        except LlmBudgetExhausted:
            raise
        except LlmError as exc:
            too_long = any(w in str(exc).lower() for w in ("too long", "too many", "context"))
            if attempt == 2 or not too_long or len(groups) <= 1:
                raise
            groups = groups[max(1, len(groups) // 5) :]
    raise AssertionError("unreachable")


def _count_failure(session: AgentSession) -> None:
    AgentSession.objects.filter(pk=session.pk).update(compact_failures=session.compact_failures + 1)


@transaction.atomic
def _append_boundary(
    session: AgentSession, actor: Actor, record: RecordInput, tokens_before: int
) -> SessionRecord:
    session = AgentSession.objects.select_for_update().get(pk=session.pk)
    config = session_config(session.project.settings)
    counters = _Counters()
    (boundary,) = _insert(session, [record], config, counters)
    # A boundary is bookkeeping, not conversation: it moves last_active only (as in MewCode).
    session.record_count += 1
    session.compact_failures = 0
    session.last_active_at = timezone.now()
    session.save(update_fields=["record_count", "compact_failures", "last_active_at"])
    _session_audit(
        session,
        actor,
        "session.compacted",
        after={"boundary_index": boundary.index, "tokens_before": tokens_before},
    )
    return boundary


# --- Incremental transcript push (hook-based agents) ----------------------------------------

# seq of a pushed record: its first line × stride + its place among the records of that line
# (a Claude Code user line yields one record per tool result plus one for the text).
TRANSCRIPT_SEQ_STRIDE = 1000


@dataclass
class TranscriptPushResult:
    created: int
    skipped: int
    next_line: int
    held_back: bool
    format: str


class _Exhausted:
    """Wraps the lines; `done` turns true once the parser has read the last one, so records
    yielded after that come from the parser's finish() (the pending, maybe unfinished one)."""

    def __init__(self, lines: Sequence[bytes]) -> None:
        self.lines = lines
        self.done = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.lines
        self.done = True


@transaction.atomic
def transcript_push(
    *,
    session: AgentSession,
    actor: Actor,
    lines: Sequence[bytes],
    first_line: int,
    final: bool,
    transcript_format: str | None = None,
) -> TranscriptPushResult:
    """Append the records of lines `first_line`… (1-based) of the agent's own transcript file
    (Claude Code or MewCode .jsonl), parsed as the importer does.

    The session remembers where the next push starts (metadata["transcript"]["next_line"]):
    lines before it were read already and are ignored, so a retried push adds nothing; a push
    that starts past it would leave a gap and is refused (409, details.next_line). Unless
    `final`, the last record is held back (next_line stays on its first line) when its lines
    may still continue — Claude Code streams one assistant message over several lines, and a
    compact boundary waits for its summary line. Records carry seq = line × 1000 + ordinal, so
    records_append's seq check is a second guard against duplicates.
    """
    # The row lock serialises pushes of one session (a Stop hook racing a SessionEnd hook).
    session = AgentSession.objects.select_for_update().get(pk=session.pk)
    state = dict(session.metadata.get("transcript") or {})
    next_line = int(state.get("next_line", 1))
    if first_line > next_line:
        raise Conflict(
            f"The transcript continues at line {next_line}; this push starts at {first_line}.",
            details={"next_line": next_line},
        )
    fresh = lines[next_line - first_line :]
    fmt = state.get("format") or transcript_format
    if not fresh or not any(line.strip() for line in fresh):
        return TranscriptPushResult(0, 0, next_line, False, fmt or "")
    try:
        fmt = fmt or importers.detect_format(list(fresh[: importers.DETECT_MAX_LINES]))
        records, held_back = _transcript_records(fresh, fmt, next_line, final)
    except importers.TranscriptFormatError as exc:  # its line numbers count from this push
        line = exc.line + next_line - 1 if exc.line else 0
        raise importers.TranscriptFormatError(line, exc.reason) from None
    result = records_append(session=session, actor=actor, records=records) if records else None
    session.refresh_from_db()
    new_next = held_back.metadata["line"] if held_back else next_line + len(fresh)
    session.metadata = session.metadata | {"transcript": {"format": fmt, "next_line": new_next}}
    update = ["metadata"]
    if session.source == AgentSession.Source.API and state.get("next_line") is None:
        # A session an agent's hook created: say which agent's transcript it holds.
        session.source = (
            AgentSession.Source.CLAUDE_CODE
            if fmt == importers.CLAUDE_CODE
            else AgentSession.Source.MEWCODE
        )
        update.append("source")
    session.save(update_fields=update)
    return TranscriptPushResult(
        created=len(result.created) if result else 0,
        skipped=result.skipped if result else 0,
        next_line=new_next,
        held_back=held_back is not None,
        format=fmt,
    )


def _transcript_records(
    lines: Sequence[bytes], fmt: str, first_line: int, final: bool
) -> tuple[list[RecordInput], RecordInput | None]:
    """The records of `lines` (the first is line `first_line`) with absolute line numbers and
    seq; the last one apart when it came from the parser's finish() and this push is not final."""
    source = _Exhausted(lines)
    records: list[RecordInput] = []
    ordinals: dict[int, int] = {}
    held_back: RecordInput | None = None
    for record in importers.parse_transcript(source, format=fmt):
        line = record.metadata["line"] + first_line - 1
        record.metadata["line"] = line
        if "summary_line" in record.metadata:
            record.metadata["summary_line"] += first_line - 1
        ordinal = ordinals.get(line, 0)
        ordinals[line] = ordinal + 1
        if ordinal >= TRANSCRIPT_SEQ_STRIDE:
            raise ValidationError({"transcript": f"line {line} holds too many records"})
        record.seq = line * TRANSCRIPT_SEQ_STRIDE + ordinal
        _fit_record(record, ingest_limits().record_max_bytes)
        if source.done and not final:
            held_back = record
            continue
        records.append(record)
    return records, held_back


# --- Whole-transcript upserts ---------------------------------------------------------------


@dataclass
class ReplaceResult:
    kept: int  # stored records that matched the new transcript's head, left untouched
    removed: int  # stored records past the first difference, deleted
    created: list[SessionRecord] = field(default_factory=list)


def _comparable(record_type: str, content: Any) -> tuple[str, str]:
    return record_type, json.dumps(content, sort_keys=True, ensure_ascii=False)


@transaction.atomic
def records_replace(
    *, session: AgentSession, actor: Actor, records: Sequence[RecordInput]
) -> ReplaceResult:
    """Make the session's records exactly `records` (an agent re-sending its whole transcript).

    Idempotent: the longest common head is kept as stored (same indexes, so extraction
    watermarks past it stay valid), records after the first difference are deleted and the
    rest of `records` appended. Re-sending a transcript that only grew appends just the new
    tail; re-sending the same one changes nothing.
    """
    _check_limits(records)
    session = AgentSession.objects.select_for_update().get(pk=session.pk)
    config = session_config(session.project.settings)
    stored = list(SessionRecord.objects.filter(session=session).order_by("index"))
    kept = 0
    for row, record in zip(stored, records, strict=False):
        # Stored records are redacted: compare the incoming ones as they would be stored.
        incoming = (
            redaction.redact_json(record.content)[0] if config.redact_secrets else record.content
        )
        if _comparable(row.type, row.content) != _comparable(record.type, incoming):
            break
        kept += 1
    removed = stored[kept:]
    if removed:
        SessionRecord.objects.filter(session=session, index__gte=kept).delete()
    fresh = list(records[kept:])
    # Starting below zero, the new records are numbered from the first removed one.
    counters = _Counters.removed(removed)
    created = _insert(session, fresh, config, counters) if fresh else []
    if created or removed:
        _finish(session, counters)
    if removed:
        _session_audit(
            session,
            actor,
            "session.records_replaced",
            before={"records": len(stored)},
            after={"kept": kept, "removed": len(removed), "appended": len(created)},
        )
    return ReplaceResult(kept=kept, removed=len(removed), created=created)


@transaction.atomic
def session_metadata_merge(
    *, session: AgentSession, actor: Actor, values: dict[str, Any]
) -> AgentSession:
    """Set top-level keys of the session's metadata (redacted like its records when the
    project redacts); the same values again change nothing and record nothing."""
    session = AgentSession.objects.select_for_update().get(pk=session.pk)
    if session_config(session.project.settings).redact_secrets:
        values = redaction.redact_json(values)[0]
    merged = session.metadata | values
    if merged == session.metadata:
        return session
    before = {k: session.metadata.get(k) for k in values}
    session.metadata = merged
    session.save(update_fields=["metadata"])
    _session_audit(session, actor, "session.metadata_changed", before=before, after=values)
    return session


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _fit_record(record: RecordInput, limit: int) -> None:
    """Bring a record over the per-record limit under it by leaving out its largest parts.

    A pushed transcript continues where the last push stopped, so one pasted screenshot or
    huge tool output refused with 413 would stop every later push of the session (an import
    refuses the whole file instead). Image and text blocks become a note, a tool_use keeps its
    id and name but not its input, a string keeps its head; metadata says how big it was.
    """
    size = _json_size(record.content)
    if size <= limit or isinstance(record.content, dict):
        return

    def note(n: int) -> str:
        return f"[MemoryHub left out {n} bytes here: over the {limit}-byte record limit]"

    content = record.content
    if isinstance(content, list):
        blocks = list(content)
        for i in sorted(range(len(blocks)), key=lambda i: -_json_size(blocks[i])):
            if _json_size(blocks) <= limit:
                break
            block = blocks[i]
            if isinstance(block, dict) and block.get("type") == "tool_use":
                blocks[i] = block | {"input": {"omitted": note(_json_size(block["input"]))}}
            else:
                blocks[i] = {"type": "text", "text": note(_json_size(block))}
        content = blocks
    if _json_size(content) > limit:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        head = text[: limit // 8]  # ≤ 4 bytes per character, and room for the JSON quoting
        content = head + "\n" + note(len(text.encode()) - len(head.encode()))
    record.content = content
    record.metadata["oversized_bytes"] = size
