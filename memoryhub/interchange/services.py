"""Writing an imported Bundle into a project: all of it in one transaction, or nothing.

Every write goes through the owning app's services (memories, recall, sessions, artifacts,
pipeline), which redact secrets and record audit events; this module only decides what is new.
Re-importing the same files creates nothing: a memory with an external id (a meow-memory row
id, a Claude Code file name) is matched by that id, any other by its content hash within the
same scope (the caller's own user-scope memories, or the project's); recall files, instruction
files and artifacts are written by path and content (the same bytes are no change); a session
whose external id the project already has is skipped.

A changed source updates what it imported before: a memory with an external id whose fields
in the file changed since its last import is updated (one history event, dated by the file),
while one whose file did not change keeps any edit made here; recall files, instruction files
and artifacts with new content replace the stored text (their own history), dated by the
source file's time when the upload carries one. A memory without an id cannot be told from a
new one, so its changed line is imported as a new memory.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils.translation import gettext

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.core.exceptions import ApplicationError, Conflict
from memoryhub.core.services import audit_record
from memoryhub.interchange.bundle import (
    EXTERNAL_ID,
    IMPORTED,
    USER_INSTRUCTIONS,
    Bundle,
    ImportedMemory,
    ImportFailed,
    problem,
)
from memoryhub.memories import artifacts
from memoryhub.memories import selectors as memory_selectors
from memoryhub.memories import services as memory_services
from memoryhub.memories.kinds import DEFAULT_SCOPE
from memoryhub.memories.models import Memory, content_hash
from memoryhub.memories.services import MemoryInput
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline import session_imports
from memoryhub.recall import selectors as recall_selectors
from memoryhub.recall import services as recall_services
from memoryhub.sessions import selectors as session_selectors
from memoryhub.sessions import services as session_services
from memoryhub.sessions.importers import TranscriptFormatError, parse_transcript
from projects.models import Project, Role
from projects.selectors import ProjectAccess

LOOKUP_BATCH = 5000  # ids or hashes per IN (...) lookup
PARTS = ("memories", "recall_files", "instructions", "sessions", "artifacts", "rollouts")


@dataclass
class ImportResult:
    format: str
    import_id: str
    created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    updated: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    unchanged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    warnings: list[str] = field(default_factory=list)


def import_actor(actor: Actor) -> Actor:
    """The caller, acting as "import": memories record created_via=import (provenance) and the
    audit trail names the person behind it."""
    return Actor(user=actor.user, token=actor.token, system="import")


def check_import_role(*, access: ProjectAccess, bundle: Bundle) -> None:
    """Members import; project instruction files, artifacts and rollouts need a maintainer
    (the artifacts' own rule, and the one we keep for a project's shared instructions)."""
    if not access.at_least(Role.MEMBER):
        message = gettext("Importing needs the %(role)s role or higher; you are %(current)s.")
        raise PermissionDenied(message % _roles(Role.MEMBER, access.role))
    shared = [
        name
        for name, present in (
            (gettext("project instruction files"), bundle.instructions),
            (gettext("bank artifacts"), bundle.artifacts),
            (gettext("rollouts"), bundle.rollouts),
        )
        if present
    ]
    if shared and not access.at_least(Role.MAINTAINER):
        message = gettext(
            "This upload contains %(parts)s, which need the %(role)s role or higher; "
            "you are %(current)s."
        )
        raise PermissionDenied(
            message % {"parts": ", ".join(shared), **_roles(Role.MAINTAINER, access.role)}
        )


def _roles(needed: str, current: str) -> dict[str, str]:
    """Role names as the dashboard's role labels have them (the same catalogue entries)."""
    return {"role": gettext(str(needed)), "current": gettext(str(current))}


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{name}: {'; '.join(msgs)}" for name, msgs in exc.message_dict.items()]
    return list(exc.messages)


def _scope(item: ImportedMemory) -> str:
    return item.data.scope or DEFAULT_SCOPE.get(item.data.kind, "project")


# What an import may change in a memory it imported before (the fields the formats carry).
UPDATABLE = ("content", "title", "keywords", "importance", "kind", "subcategory", "goal")


def _fingerprint(data: MemoryInput) -> str:
    """The source's version of a memory: a re-import updates it only when this changed, so
    edits made here to a memory whose file did not change are kept."""
    fields = {name: getattr(data, name) for name in UPDATABLE}
    fields["content"] = redaction.redact(data.content)[0]
    fields["keywords"] = memory_services.normalize_keywords(data.keywords)
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


def _by_external_id(visible: QuerySet[Memory], items: list[ImportedMemory]) -> dict[str, Memory]:
    wanted = sorted({i.external_id for i in items if i.external_id})
    known: dict[str, Memory] = {}
    for start in range(0, len(wanted), LOOKUP_BATCH):
        chunk = wanted[start : start + LOOKUP_BATCH]
        for memory in visible.filter(**{f"metadata__{EXTERNAL_ID}__in": chunk}):
            known.setdefault(memory.metadata[EXTERNAL_ID], memory)
    return known


def _update_imported(
    memory: Memory, item: ImportedMemory, actor: Actor, provenance: dict[str, Any]
) -> bool:
    """Bring a memory imported before up to its changed source; False when the source is as
    it was last imported (or already matches)."""
    fingerprint = provenance["fingerprint"]
    previous = memory.metadata.get(IMPORTED)
    if isinstance(previous, dict) and previous.get("fingerprint") == fingerprint:
        return False
    data = item.data
    wanted = {name: getattr(data, name) for name in UPDATABLE}
    wanted["content"] = redaction.redact(data.content)[0]
    wanted["keywords"] = memory_services.normalize_keywords(data.keywords)
    changes: dict[str, Any] = {k: v for k, v in wanted.items() if getattr(memory, k) != v}
    if not changes:
        return False  # changed back, or already edited here to match
    changes["metadata"] = {**memory.metadata, **data.metadata, IMPORTED: provenance}
    memory_services.memory_update(memory=memory, actor=actor, changes=changes, at=data.updated_at)
    return True


def _import_memories(
    access: ProjectAccess,
    actor: Actor,
    bundle: Bundle,
    import_id: str,
    result: ImportResult,
    errors: list[dict[str, Any]],
) -> None:
    items = bundle.memories
    if not items:
        return
    hashes = [content_hash(redaction.redact(i.data.content)[0]) for i in items]
    visible = memory_selectors.memory_visible(access=access)
    known_hashes: set[tuple[str, str]] = set()
    unique_hashes = sorted(set(hashes))
    for start in range(0, len(unique_hashes), LOOKUP_BATCH):
        known_hashes.update(
            visible.filter(
                content_hash__in=unique_hashes[start : start + LOOKUP_BATCH]
            ).values_list("scope", "content_hash")
        )
    known_ids = _by_external_id(visible, items)
    fresh: list[ImportedMemory] = []
    for item, digest in zip(items, hashes, strict=True):
        provenance: dict[str, Any] = {
            "format": bundle.format,
            "file": item.file[:300],
            "import_id": import_id,
            "fingerprint": _fingerprint(item.data),
        }
        if item.line:
            provenance["line"] = item.line
        existing = known_ids.get(item.external_id) if item.external_id else None
        if existing is not None:
            # The same id again: the source's file may have changed since the last import.
            try:
                changed = _update_imported(existing, item, actor, provenance)
            except ValidationError as exc:
                errors.append(problem(item.file, item.line, "; ".join(_messages(exc))))
                continue
            (result.updated if changed else result.unchanged)["memories"] += 1
            continue
        # The same text already in the bank is the same memory, whatever id it came with (an
        # export of memories made here gets ids on the way back); within one upload, rows with
        # their own ids stay apart, as the source kept them.
        if (_scope(item), digest) in known_hashes:
            result.unchanged["memories"] += 1
            continue
        item.data.metadata = {**item.data.metadata, IMPORTED: provenance}
        if item.external_id:
            item.data.metadata[EXTERNAL_ID] = item.external_id
        fresh.append(item)
    batch = memory_services.BULK_MAX_ITEMS
    for start in range(0, len(fresh), batch):
        chunk = fresh[start : start + batch]
        try:
            memory_services.memory_bulk_create(
                project=access.project, actor=actor, items=[i.data for i in chunk]
            )
        except memory_services.BulkValidationError as exc:
            for index, problems in exc.details["items"].items():
                item = chunk[int(index)]
                text = "; ".join(f"{k}: {' '.join(v)}" for k, v in problems.items())
                errors.append(problem(item.file, item.line, text))
            continue
        result.created["memories"] += len(chunk)


def _redact_files(bundle: Bundle) -> None:
    """Recall and instruction files are stored as sent by their services, so an import redacts
    them itself (memories, artifacts, rollouts and transcripts are redacted by theirs)."""
    for file in bundle.recall_files:
        file.content = redaction.redact(file.content)[0]
    bundle.instructions = {p: redaction.redact(t)[0] for p, t in bundle.instructions.items()}
    if bundle.user_instructions is not None:
        bundle.user_instructions = redaction.redact(bundle.user_instructions)[0]


def _import_files(
    access: ProjectAccess,
    actor: Actor,
    bundle: Bundle,
    result: ImportResult,
    errors: list[dict[str, Any]],
) -> None:
    _redact_files(bundle)
    for scope in ("project", "user"):
        files = [f for f in bundle.recall_files if f.scope == scope]
        if not files:
            continue
        where = {f.path: f.file for f in files}
        try:
            written = recall_services.recall_files_sync(
                project=access.project,
                actor=actor,
                scope=scope,
                files=[recall_services.RecallFileInput(f.path, f.content, f.mtime) for f in files],
                delete_missing=False,
            )
        except ValidationError as exc:
            for path, messages in getattr(exc, "message_dict", {"": exc.messages}).items():
                errors.append(problem(where.get(path, path), None, "; ".join(messages)))
            continue
        result.created["recall_files"] += len(written.created)
        result.updated["recall_files"] += len(written.updated)
        result.unchanged["recall_files"] += len(written.unchanged)
    if bundle.instructions:
        try:
            tree = recall_services.instruction_tree_put(
                project=access.project,
                actor=actor,
                files=bundle.instructions,
                replace=False,
                mtimes=bundle.mtimes,
            )
        except ValidationError as exc:
            for path, messages in getattr(exc, "message_dict", {"": exc.messages}).items():
                errors.append(problem(path, None, "; ".join(messages)))
        else:
            result.created["instructions"] += len(tree.created)
            result.updated["instructions"] += len(tree.updated)
            result.unchanged["instructions"] += len(tree.unchanged)
    if bundle.user_instructions is not None:
        try:
            outcome = _user_instructions_put(
                access, actor, bundle.user_instructions, bundle.mtimes.get(USER_INSTRUCTIONS)
            )
        except ValidationError as exc:
            file = gettext("user instruction file")
            errors.append(problem(file, None, "; ".join(_messages(exc))))
        else:
            getattr(result, outcome)["instructions"] += 1
    for path, content in sorted(bundle.artifacts.items()):
        try:
            before = artifacts.artifact_find(project=access.project, path=path)
            _, changed = artifacts.artifact_put(
                project=access.project,
                path=path,
                content=content,
                actor=actor,
                mtime=bundle.mtimes.get(path),
            )
        except ValidationError as exc:
            errors.append(problem(path, None, "; ".join(_messages(exc))))
            continue
        outcome = "created" if before is None else "updated" if changed else "unchanged"
        getattr(result, outcome)["artifacts"] += 1
    for rollout in bundle.rollouts:
        try:
            changed = pipeline_services.stage1_output_import(
                project=access.project,
                actor=actor,
                thread_id=rollout.thread_id,
                raw_memory=rollout.raw_memory,
                rollout_summary=rollout.rollout_summary,
                rollout_slug=rollout.rollout_slug,
                generated_at=rollout.updated_at,
            )
        except ValidationError as exc:
            errors.append(problem(rollout.file, None, "; ".join(_messages(exc))))
            continue
        except Conflict as exc:  # the thread is another person's session
            errors.append(problem(rollout.file, None, exc.message))
            continue
        result.created["rollouts"] += int(changed)
        result.unchanged["rollouts"] += int(not changed)


def _user_instructions_put(
    access: ProjectAccess, actor: Actor, content: str, mtime: datetime | None
) -> str:
    """Write the caller's own instruction file: "created", "updated" or "unchanged"."""
    if access.actor.user is None:
        raise ValidationError(gettext("A user instruction file needs a person behind the request."))
    try:
        before: str | None = recall_selectors.user_instruction_file_get(access=access).content
    except Http404:
        before = None
    recall_services.instruction_file_put(
        project=access.project,
        actor=actor,
        path="",
        content=content,
        owner=access.actor.user,
        mtime=mtime,
    )
    return "created" if before is None else "unchanged" if before == content else "updated"


def _import_sessions(
    access: ProjectAccess,
    actor: Actor,
    bundle: Bundle,
    result: ImportResult,
    errors: list[dict[str, Any]],
) -> None:
    for item in bundle.sessions:
        try:
            session_selectors.session_get(access=access, ref=item.external_id)
        except Http404:
            pass
        else:
            result.unchanged["sessions"] += 1
            continue
        try:
            with item.transcript.open() as lines:
                session = session_services.session_import(
                    project=access.project,
                    actor=actor,
                    lines=_lines(lines),
                    meta=item.meta,
                    transcript_format=item.transcript_format,
                    external_id=item.external_id,
                )
        except TranscriptFormatError as exc:
            errors.append(problem(item.file, exc.line or None, exc.reason))
            continue
        except ApplicationError as exc:
            line = exc.details.get("line") if isinstance(exc.details, dict) else None
            errors.append(problem(item.file, line, exc.message))
            continue
        session_imports.extraction_ensure(session)
        result.created["sessions"] += 1


def transcript_problems(bundle: Bundle) -> list[dict[str, Any]]:
    """The first format problem of each transcript in the bundle, read without writing."""
    problems = []
    for item in bundle.sessions:
        try:
            with item.transcript.open() as lines:
                for _record in parse_transcript(_lines(lines), format=item.transcript_format):
                    pass
        except TranscriptFormatError as exc:
            problems.append(problem(item.file, exc.line or None, exc.reason))
    return problems


def _lines(stream: Iterable[bytes]) -> Iterable[bytes]:
    yield from stream


@transaction.atomic
def bundle_import(*, access: ProjectAccess, bundle: Bundle, dry_run: bool = False) -> ImportResult:
    """Write `bundle` into the caller's project, all or nothing.

    Raises ImportFailed listing every error (file, line, message) found in any part; nothing
    is written then. Idempotent: see the module docstring. A dry run does all of it and rolls
    back (work enqueued on commit is dropped with it): the result is what an import would do.
    """
    check_import_role(access=access, bundle=bundle)
    # Two imports of the same files at once must not both find them new: writers of one bank
    # take its row lock, as memory_remember does (NO KEY: inserts that reference it still run).
    Project.objects.select_for_update(no_key=True).filter(pk=access.project.pk).first()
    actor = import_actor(access.actor)
    result = ImportResult(format=bundle.format, import_id=uuid.uuid4().hex)
    result.warnings = list(bundle.warnings)
    errors: list[dict[str, Any]] = []
    _import_memories(access, actor, bundle, result.import_id, result, errors)
    _import_files(access, actor, bundle, result, errors)
    _import_sessions(access, actor, bundle, result, errors)
    if errors:
        raise ImportFailed(errors)
    if dry_run:
        transaction.set_rollback(True)
        return result
    audit_record(
        actor=actor,
        verb="interchange.imported",
        target_type="project",
        target_id=access.project.pk,
        project=access.project,
        after={
            "format": bundle.format,
            "import_id": result.import_id,
            "created": result.created,
            "updated": result.updated,
            "unchanged": result.unchanged,
        },
    )
    return result
