"""Writes of recall: instruction files, recall files, and a session's injection bookkeeping.

Every change to a file writes an audit event in the same transaction; a write that changes
nothing (same content, same mtime) writes nothing. recall_for_message is the POST /recall/
use case: a read whose only writes are the session's seen/surfaced rows (no audit event, like
search's bookkeeping).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core import redaction, rows
from memoryhub.core.exceptions import ApplicationError, Conflict
from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.core.services import audit_record
from memoryhub.memories import markup, trees
from memoryhub.memories.kinds import Scope
from memoryhub.recall import keyword_hits, recall_files, search, selectors
from memoryhub.recall.models import (
    InstructionFile,
    RecallFile,
    RecallSeen,
    RecallSurfaced,
    normalize_path,
)
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from projects.selectors import ProjectAccess

TREE_MAX_FILES = 1000
SYNC_MAX_FILES = 1000
RECALL_FILE_FIELDS = ["content", "updated_at", "updated_by", "name", "description", "type"]


def _digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


def _clean_path(path: str, field_name: str = "path") -> str:
    try:
        return normalize_path(path)
    except ValidationError as exc:
        raise ValidationError({field_name: exc.messages}) from None


def _save_new[T: (InstructionFile, RecallFile)](obj: T) -> T:
    """Insert `obj`; a concurrent insert of the same path is a Conflict, not a 500."""
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError:
        raise Conflict(
            _("%(path)s was created concurrently; retry.") % {"path": obj.path}
        ) from None
    return obj


# --- instruction files -----------------------------------------------------------------------
@transaction.atomic
def instruction_file_put(
    *,
    project: Project,
    actor: Actor,
    path: str,
    content: str,
    owner: User | None = None,
    mtime: datetime | None = None,
) -> tuple[InstructionFile, bool]:
    """Create or replace a project instruction file, or (owner set) that user's own file
    (whose path is always MEWCODE.md). Returns (file, created). An import passes the source
    file's `mtime`, which the file is then dated by (else now)."""
    path = InstructionFile.USER_FILE_PATH if owner is not None else _clean_path(path)
    content = redaction.redact(content)[0]
    existing = InstructionFile.objects.select_for_update().filter(project=project, owner=owner)
    file = (existing if owner is not None else existing.filter(path=path)).first()
    if file is not None and file.content == content:
        return file, False
    before = file.snapshot() if file is not None else None
    now = mtime or timezone.now()
    if file is None:
        file = InstructionFile(project=project, owner=owner, path=path, created_at=now)
    file.content, file.updated_at, file.updated_by = content, now, actor.user
    file.full_clean(validate_constraints=False)
    if before is None:
        _save_new(file)
    else:
        file.save(update_fields=["content", "updated_at", "updated_by"])
    audit_record(
        actor=actor,
        verb="instruction_file." + ("updated" if before else "created"),
        target_type="instruction_file",
        target_id=file.pk,
        project=project,
        before=before,
        after=file.snapshot() | {"sha256": _digest(content)},
    )
    return file, before is None


@transaction.atomic
def instruction_file_delete(*, file: InstructionFile, actor: Actor) -> None:
    audit_record(
        actor=actor,
        verb="instruction_file.deleted",
        target_type="instruction_file",
        target_id=file.pk,
        project=file.project,
        before=file.snapshot(),
    )
    file.delete()


BulkWriteResult = trees.TreeWriteResult


@transaction.atomic
def instruction_tree_put(
    *,
    project: Project,
    actor: Actor,
    files: Mapping[str, str],
    replace: bool,
    mtimes: Mapping[str, datetime] | None = None,
) -> BulkWriteResult:
    """Write a whole tree of project instruction files at once, all or nothing; with replace,
    project files missing from `files` are deleted. A new or changed file is dated by its
    `mtimes` entry (an import's source file time), else now."""
    if len(files) > TREE_MAX_FILES:
        raise ValidationError(
            {"files": _("At most %(n)s files per upload.") % {"n": TREE_MAX_FILES}}
        )
    tree: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    for raw_path, content in files.items():
        try:
            path = normalize_path(raw_path)
            InstructionFile(path=path, content=content).clean_fields(
                exclude=["project", "owner", "updated_by"]
            )
        except ValidationError as exc:
            errors[raw_path] = exc.messages
            continue
        if path in tree:
            errors[raw_path] = [f"Same file as another path ({path})."]
        tree[path] = redaction.redact(content)[0]
    if errors:
        raise ValidationError(errors)

    now = timezone.now()
    dated = {normalize_path(p): t for p, t in (mtimes or {}).items() if p in files}
    stored = {
        f.path: f
        for f in InstructionFile.objects.select_for_update().filter(
            project=project, owner__isnull=True
        )
    }
    changed: list[InstructionFile] = []

    def put(path: str, content: str, file: InstructionFile | None) -> bool:
        when = dated.get(path, now)
        if file is None:
            _save_new(
                InstructionFile(
                    project=project,
                    path=path,
                    content=content,
                    created_at=when,
                    updated_at=when,
                    updated_by=actor.user,
                )
            )
            return True
        if file.content == content:
            return False
        file.content, file.updated_at, file.updated_by = content, when, actor.user
        changed.append(file)
        return True

    def delete(gone: Sequence[InstructionFile]) -> None:
        InstructionFile.objects.filter(pk__in=[f.pk for f in gone]).delete()

    result = trees.tree_replace(
        stored=stored, wanted=tree, put=put, delete=delete if replace else None
    )
    InstructionFile.objects.bulk_update(changed, ["content", "updated_at", "updated_by"])
    if result.changed:
        audit_record(
            actor=actor,
            verb="instruction_tree.uploaded",
            target_type="project",
            target_id=project.pk,
            project=project,
            after={
                "created": result.created,
                "updated": result.updated,
                "deleted": result.deleted,
                "replace": replace,
            },
        )
    return result


# --- recall files ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RecallFileInput:
    path: str
    content: str
    mtime: datetime | None = None  # the file's modification time; None: now


def _owner_for(scope: str, actor: Actor) -> User | None:
    if scope == Scope.PROJECT:
        return None
    if actor.user is None:
        raise ApplicationError(_("User-scope recall files belong to a user; this actor has none."))
    return actor.user


def _apply(file: RecallFile, data: RecallFileInput, actor: Actor, now: datetime) -> bool:
    """Set `file` from `data` and validate it; False when nothing would change."""
    mtime = data.mtime or now
    data = replace(data, content=redaction.redact(data.content)[0])
    if (
        file.pk is not None
        and file.content == data.content
        and (data.mtime is None or file.updated_at == data.mtime)
    ):
        return False
    front = recall_files.parse_frontmatter(data.content)
    file.content, file.updated_at, file.updated_by = data.content, mtime, actor.user
    file.name, file.description, file.type = front.name, front.description, front.type
    file.full_clean(validate_constraints=False)
    return True


def _recall_file_event(
    file: RecallFile, actor: Actor, verb: str, before: dict[str, object] | None
) -> None:
    audit_record(
        actor=actor,
        verb=f"recall_file.{verb}",
        target_type="recall_file",
        target_id=file.pk,
        project=file.project,
        before=before,
        after=None if verb == "deleted" else file.snapshot() | {"sha256": _digest(file.content)},
    )


@transaction.atomic
def recall_file_put(
    *, project: Project, actor: Actor, scope: str, data: RecallFileInput
) -> tuple[RecallFile, bool]:
    """Create or replace one recall file (user scope: the actor's own). Returns (file,
    created)."""
    owner = _owner_for(scope, actor)
    path = _clean_path(data.path)
    file = (
        RecallFile.objects.select_for_update()
        .filter(project=project, scope=scope, owner=owner, path=path)
        .first()
    )
    created = file is None
    if file is None:
        file = RecallFile(project=project, scope=scope, owner=owner, path=path)
    before = None if created else file.snapshot()
    if not _apply(file, RecallFileInput(path, data.content, data.mtime), actor, timezone.now()):
        return file, False
    if created:
        _save_new(file)
    else:
        file.save(update_fields=RECALL_FILE_FIELDS)
    _recall_file_event(file, actor, "created" if created else "updated", before)
    return file, created


@transaction.atomic
def recall_file_delete(*, file: RecallFile, actor: Actor) -> None:
    _recall_file_event(file, actor, "deleted", file.snapshot())
    file.delete()


@transaction.atomic
def recall_files_sync(
    *,
    project: Project,
    actor: Actor,
    scope: str,
    files: Sequence[RecallFileInput],
    delete_missing: bool,
) -> BulkWriteResult:
    """Bring one memory directory (the project's, or the actor's user directory) in line with
    `files`, all or nothing; with delete_missing, stored files not in `files` are deleted."""
    if len(files) > SYNC_MAX_FILES:
        raise ValidationError({"files": _("At most %(n)s files per sync.") % {"n": SYNC_MAX_FILES}})
    owner = _owner_for(scope, actor)
    stored = {
        f.path: f
        for f in RecallFile.objects.select_for_update().filter(
            project=project, scope=scope, owner=owner
        )
    }
    now = timezone.now()
    # Validate and apply every file in memory first: nothing is written when one is invalid.
    applied: dict[str, tuple[RecallFile, bool]] = {}
    errors: dict[str, list[str]] = {}
    for data in files:
        try:
            path = normalize_path(data.path)
            if path in applied:
                raise ValidationError(_("Same file as another path (%(path)s).") % {"path": path})
            file = stored.get(path) or RecallFile(
                project=project, scope=scope, owner=owner, path=path
            )
            changed = _apply(file, RecallFileInput(path, data.content, data.mtime), actor, now)
            applied[path] = (file, changed)
        except ValidationError as exc:
            errors[data.path] = exc.messages
    if errors:
        raise ValidationError(errors)

    def put(path: str, item: tuple[RecallFile, bool], previous: RecallFile | None) -> bool:
        file, changed = item
        if previous is None:
            _save_new(file)
        elif changed:
            file.save(update_fields=RECALL_FILE_FIELDS)
        return changed

    def delete(gone: Sequence[RecallFile]) -> None:
        RecallFile.objects.filter(pk__in=[f.pk for f in gone]).delete()

    result = trees.tree_replace(
        stored=stored, wanted=applied, put=put, delete=delete if delete_missing else None
    )
    if result.changed:
        audit_record(
            actor=actor,
            verb="recall_files.synced",
            target_type="project",
            target_id=project.pk,
            project=project,
            after={
                "scope": scope,
                "created": result.created,
                "updated": result.updated,
                "deleted": result.deleted,
            },
        )
    return result


# Injections this process has already marked: (database, session, its record count, the UTC
# day, the payload's memories). Handing the same payload to the same session again on the same
# day, with no record (and so no compaction) in between, would write nothing (see _seen_upsert):
# an agent revalidating its payload skips the statement. Another process may still run it once.
INJECTED_MARKS_SIZE = 4096
_injected_marks: OrderedDict[tuple[object, ...], None] = OrderedDict()
_injected_marks_lock = threading.Lock()


def recall_payload_mark_injected(*, session: AgentSession, memory_pks: Sequence[int]) -> None:
    """An injection payload was handed to `session`: its memories count as seen (injected)."""
    now = timezone.now()
    key = (
        connection.settings_dict["NAME"],
        session.pk,
        session.record_count,
        now.astimezone(UTC).date(),
        tuple(memory_pks),
    )
    with _injected_marks_lock:
        if key in _injected_marks:
            _injected_marks.move_to_end(key)
            return
    recall_seen_mark(session=session, memory_ids=memory_pks, reason=RecallSeen.Reason.INJECTED)
    if transaction.get_connection().in_atomic_block:
        return  # a rollback would undo the rows the memo would vouch for
    with _injected_marks_lock:
        _injected_marks[key] = None
        while len(_injected_marks) > INJECTED_MARKS_SIZE:
            _injected_marks.popitem(last=False)


def forget_injected_marks() -> None:
    """Empty this process's memo of marked injections (tests: rolled-back rows)."""
    with _injected_marks_lock:
        _injected_marks.clear()


# --- recall (POST /recall/) ------------------------------------------------------------------
HITS_HEADER = "Possibly relevant memories, for reference only:"


@dataclass(frozen=True)
class RecallResult:
    hits: list[search.Hit]
    files: list[RecallFile]
    text: str
    now: datetime


def hits_block(hits: Sequence[search.Hit]) -> str:
    """meow-memory's hit block: per hit `[kind] [id] YYYY-MM-DD HH:MM UTC`, then the content
    and a blank line."""
    if not hits:
        return ""
    lines = [HITS_HEADER]
    for hit in hits:
        memory = hit.memory
        stamp = memory.updated_at.astimezone(UTC)
        lines += [f"[{memory.kind}] [{memory.public_id}] {stamp:%Y-%m-%d %H:%M} UTC"]
        lines += [markup.neutralize(memory.content), ""]
    return "\n".join(lines)


def recall_text(blocks: Sequence[str]) -> str:
    """One <system-reminder> with the non-empty blocks, inside the injection tag that the
    sessions ingester recognises; "" when every block is empty."""
    body = "\n".join(block for block in blocks if block)
    if not body:
        return ""
    return f"{INJECTION_OPEN}\n<system-reminder>\n{body}\n</system-reminder>\n{INJECTION_CLOSE}"


def recall_seen_mark(
    *,
    session: AgentSession,
    memory_ids: Sequence[int],
    reason: str,
    file_ids: Sequence[int] = (),
) -> None:
    """THE seen-set write: the session has now seen these memories (injected or searched) and
    recall files. An upsert, so what is shown again after a compaction counts as shown again
    (selectors.seen_memory_ids reads it)."""
    now = timezone.now()
    if not file_ids:  # one statement: atomic on its own, no BEGIN/COMMIT round trips
        _seen_upsert(session=session, memory_ids=memory_ids, reason=reason, now=now)
        return
    with transaction.atomic():
        _seen_upsert(session=session, memory_ids=memory_ids, reason=reason, now=now)
        RecallSurfaced.objects.bulk_create(
            [RecallSurfaced(session=session, recall_file_id=i, created_at=now) for i in file_ids],
            update_conflicts=True,
            unique_fields=["session", "recall_file"],
            update_fields=["created_at"],
        )


def _seen_upsert(
    *, session: AgentSession, memory_ids: Sequence[int], reason: str, now: datetime
) -> None:
    if not memory_ids:
        return
    if connection.vendor != "postgresql":
        RecallSeen.objects.bulk_create(
            [
                RecallSeen(session=session, memory_id=i, reason=reason, created_at=now)
                for i in memory_ids
            ],
            update_conflicts=True,
            unique_fields=["session", "memory", "reason"],
            update_fields=["created_at"],
        )
        return
    # An injection marks a few hundred memories on every request: one array parameter instead
    # of a model instance and a placeholder per row. A row already dated today and after the
    # session's last compaction stays as it is: re-dating it changes neither what counts as
    # seen nor the dashboard's hits per day. So an unchanged payload handed out again writes
    # nothing at all (an upsert would lock every row, and every request would wait for a WAL
    # flush); only older rows are re-dated and only new ones inserted.
    table = RecallSeen._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH redated AS (UPDATE {table} AS seen SET created_at = %(now)s"  # noqa: S608
            " WHERE seen.session_id = %(session)s AND seen.reason = %(reason)s"
            " AND seen.memory_id = ANY(%(ids)s::bigint[])"
            " AND (seen.created_at < date_trunc('day', %(now)s::timestamptz)"
            f" OR seen.created_at <= {selectors.since_compaction_sql('seen.session_id')})"
            " RETURNING seen.memory_id)"
            f" INSERT INTO {table} (session_id, memory_id, reason, created_at)"
            " SELECT %(session)s, m, %(reason)s, %(now)s FROM unnest(%(ids)s::bigint[]) AS m"
            " WHERE m NOT IN (SELECT memory_id FROM redated)"
            " ON CONFLICT (session_id, memory_id, reason) DO NOTHING",
            {
                "session": session.pk,
                "reason": reason,
                "now": now,
                "ids": rows.int_array(sorted(set(memory_ids))),
            },
        )


def recall_for_message(
    *,
    access: ProjectAccess,
    session: AgentSession | None,
    query: str,
    recent_tools: Sequence[str] = (),
    as_of: datetime | None = None,
) -> RecallResult:
    """Keyword hits and the selector's recall files for a user message, as one injection
    text; everything returned is marked as shown to the session (when there is one).

    Not atomic on purpose: the selector's LLM call must not run inside a transaction.
    """
    now = as_of or timezone.now()
    if not query.strip():
        return RecallResult(hits=[], files=[], text="", now=now)
    hits = keyword_hits.keyword_hits(access=access, message=query, session=session, now=now)
    chosen = recall_files.select(
        project=access.project,
        query=query,
        files=selectors.recall_candidates(access=access, session=session),
        recent_tools=recent_tools,
    )
    files = selectors.recall_files_with_content(files=chosen)
    text = recall_text([hits_block(hits), recall_files.render(files, now)])
    if session is not None:
        recall_seen_mark(
            session=session,
            memory_ids=[hit.memory.pk for hit in hits],
            reason=RecallSeen.Reason.INJECTED,
            file_ids=[file.pk for file in files],
        )
    return RecallResult(hits=hits, files=files, text=text, now=now)
