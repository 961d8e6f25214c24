"""Writes behind the Hindsight routes. Each goes through the owning app's services (sessions,
pipeline, projects, memories, artifacts), so permissions, redaction and audit are the REST
API's."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.services import audit_record
from memoryhub.integrations.hindsight import answers, banks, conf, selectors, tags, transcript
from memoryhub.llm import client as llm
from memoryhub.memories import artifacts
from memoryhub.memories import services as memory_services
from memoryhub.memories.models import Memory
from memoryhub.pipeline import dispatch, tasks
from memoryhub.pipeline import services as pipeline_services
from memoryhub.sessions import services as session_services
from projects import services as project_services
from projects.models import Project, Role, slug_validator
from projects.selectors import ProjectAccess, project_access

SYSTEM = "hindsight"
GENERATED_DOCUMENT = "retain-"
_ID_JUNK = re.compile(r"[^a-z0-9-]+")


# --- retain -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetainItem:
    content: str
    timestamp: datetime | None = None
    context: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    document_id: str = ""
    tags: tuple[str, ...] = ()
    update_mode: str = "replace"


@transaction.atomic
def retain(
    *, access: ProjectAccess, items: list[RetainItem], document_tags: tuple[str, ...] = ()
) -> list[str]:
    """Store the items as documents (sessions) and queue their extraction; returns one
    operation id per document. All or nothing.

    Items sharing a document_id are one document; items without one form a new document of
    their own request. Re-sending a document replaces its records (idempotent: an unchanged
    head is kept, so extraction only reads what is new); update_mode "append" adds them.
    """
    documents: dict[str, list[RetainItem]] = {}
    generated = f"{GENERATED_DOCUMENT}{uuid.uuid4().hex}"
    for item in items:
        documents.setdefault(item.document_id or generated, []).append(item)
    return [
        _retain_document(access, document_id, group, document_tags)
        for document_id, group in documents.items()
    ]


def _retain_document(
    access: ProjectAccess,
    document_id: str,
    items: list[RetainItem],
    document_tags: tuple[str, ...],
) -> str:
    actor = access.actor
    records = [
        record
        for item in items
        for record in transcript.parse(item.content, default_timestamp=item.timestamp)
    ]
    doc_tags = sorted({*document_tags, *(t for item in items for t in item.tags)})
    contexts = list(dict.fromkeys(i.context for i in items if i.context))
    extra: dict[str, Any] = {}
    for item in items:
        extra |= item.metadata
    meta: dict[str, Any] = {tags.META_KEY: doc_tags, "hindsight": {"context": ", ".join(contexts)}}
    if extra:
        meta["hindsight"]["metadata"] = extra
    session, created = session_services.session_get_or_create(
        project=access.project,
        actor=actor,
        external_id=document_id,
        metadata=_redacted(meta),
        url_safe_id=False,  # Hindsight accepts any document id ("docs/guide.md")
    )
    if not created:  # the caller's own (another person's document id is a 409 above)
        session_services.session_metadata_merge(session=session, actor=actor, values=meta)
    rewind: int | None = None
    if all(item.update_mode == "append" for item in items):
        session_services.records_append(session=session, actor=actor, records=records)
    else:
        result = session_services.records_replace(session=session, actor=actor, records=records)
        rewind = result.kept if result.removed else None
    session.refresh_from_db()
    job = pipeline_services.stage1_ensure_session(session=session, rewind_to=rewind)
    if job.input_watermark > job.success_watermark:
        dispatch.send(tasks.stage1_run, job.pk)  # on commit
    return selectors.retain_operation_id(job, session.record_count)


def _redacted(value: dict[str, Any]) -> dict[str, Any]:
    cleaned, _ = redaction.redact_json(value)
    return dict(cleaned)


# --- banks ------------------------------------------------------------------------------------


def bank_create(*, actor: Actor, bank_id: str) -> ProjectAccess:
    """PUT on an unknown bank: a new project whose slug is the bank id (tokens that may create
    projects only: read-write and not restricted to a project)."""
    if actor.read_only or actor.restricted_project_id is not None or actor.user is None:
        raise banks.BankNotFound()
    try:
        slug_validator(bank_id)
    except ValidationError:
        raise ApplicationError(
            f"Bank id {bank_id!r} cannot name a new MemoryHub project: use 1-64 lowercase "
            "letters, digits and hyphens."
        ) from None
    project = project_services.project_create(slug=bank_id, owner=actor.user, actor=actor)
    return project_access(slug=project.slug, actor=actor)


def bank_set_missions(*, access: ProjectAccess, missions: dict[str, str]) -> Project:
    """Store reflect_mission / retain_mission in the project's settings (maintainers); the same
    values again change nothing, so oh-my-pi's PUT at every start is harmless for members."""
    section = dict(access.project.settings.get(conf.SECTION) or {})
    changed = {k: v for k, v in missions.items() if section.get(k, "") != v}
    if not changed:
        return access.project
    if not access.at_least(Role.MAINTAINER):
        raise PermissionDenied("Changing a bank's missions needs the maintainer role.")
    section.update(changed)
    return project_services.project_settings_section_put(
        access=access, section=conf.SECTION, value=section
    )


# --- memories (§4.3 curation) -----------------------------------------------------------------


def memory_set_state(*, access: ProjectAccess, memory: Memory, state: str, reason: str) -> Memory:
    """Hindsight's invalidated/valid → MemoryHub's stale (with the reason) / active."""
    actor = access.actor
    if state == "invalidated":
        if memory.status in selectors.INVALID_STATUSES:
            return memory
        return memory_services.memory_set_status(
            memory=memory,
            actor=actor,
            status=Memory.Status.STALE,
            reason=reason or "Invalidated through the Hindsight API.",
        )
    if memory.status in selectors.VALID_STATUSES:
        return memory
    return memory_services.memory_set_status(
        memory=memory, actor=actor, status=Memory.Status.ACTIVE
    )


# --- mental models ----------------------------------------------------------------------------


def _save_models(access: ProjectAccess, models: dict[str, conf.MentalModelDef]) -> None:
    section = dict(access.project.settings.get(conf.SECTION) or {})
    section["mental_models"] = {mid: d.to_settings() for mid, d in sorted(models.items())}
    project_services.project_settings_section_put(
        access=access, section=conf.SECTION, value=section
    )


def new_model_id(name: str) -> str:
    base = _ID_JUNK.sub("-", name.lower()).strip("-")[:100] or "model"
    return f"{base}-{uuid.uuid4().hex[:6]}"


@transaction.atomic
def mental_model_create(
    *, access: ProjectAccess, definition: conf.MentalModelDef
) -> tuple[conf.MentalModelDef, bool]:
    """Store the definition and queue its first refresh; an existing id is success (nothing
    changes), as oh-my-pi expects when it seeds its models."""
    models = dict(conf.hindsight_config(access.project.settings).mental_models)
    if definition.id in models:
        return models[definition.id], False
    models[definition.id] = definition
    _save_models(access, models)
    return definition, True


@transaction.atomic
def mental_model_refresh_request(
    *, project: Project, model_id: str, actor: Actor | None = None
) -> datetime:
    """Queue a refresh on the worker (after the surrounding transaction commits). A person's
    (or agent's) request is audited like the REST API's "enqueue now"."""
    from memoryhub.integrations.hindsight import tasks as hindsight_tasks

    requested = timezone.now()
    if actor is not None:
        audit_record(
            actor=actor,
            project=project,
            verb="hindsight.mental_model_refresh_requested",
            target_type="mental_model",
            target_id=model_id,
        )
    hindsight_tasks.mental_model_refresh.delay_on_commit(project.pk, model_id)  # type: ignore[attr-defined]
    return requested


@transaction.atomic
def mental_model_delete(*, access: ProjectAccess, model_id: str) -> None:
    models = dict(conf.hindsight_config(access.project.settings).mental_models)
    models.pop(model_id)
    _save_models(access, models)
    artifacts.artifact_delete(
        project=access.project, path=selectors.model_path(model_id), actor=access.actor
    )


def system_access(project: Project) -> ProjectAccess:
    """What a mental model may read: the project's memories, never a person's own (user
    scope), since every member sees the model."""
    return ProjectAccess(project=project, role=Role.VIEWER, actor=Actor.for_system(SYSTEM))


def mental_model_refresh(*, project: Project, model_id: str) -> str:
    """Regenerate a model's content from the bank: its source query recalled over the
    project's memories (tag-scoped with all_strict when the model has tags, as Hindsight
    does) plus, for untagged models, the consolidated memory_summary.md.

    Idempotent (ensure-style): an unchanged result writes no new version. The LLM call runs
    outside any transaction; a failure is recorded and the old content stays. Returns
    "refreshed", "failed" or "missing".
    """
    project = Project.objects.get(pk=project.pk)  # the definition as stored now
    access = system_access(project)
    definition = conf.hindsight_config(project.settings).mental_models.get(model_id)
    if definition is None:
        return "missing"
    items = selectors.recall(
        access=access,
        query=definition.source_query,
        tag_list=list(definition.tags),
        tags_match="all_strict" if definition.tags else "any",
        max_tokens=definition.max_tokens * 2,
        budget="mid",
    )
    try:
        content = answers.mental_model_text(
            project=project,
            name=definition.name,
            source_query=definition.source_query,
            items=items,
            max_tokens=definition.max_tokens,
            with_notes=not definition.tags,
        )
    except llm.LlmError as exc:
        _record_refresh(project, model_id, failed=str(exc))
        return "failed"
    _store_content(project, model_id, content)
    return "refreshed"


@transaction.atomic
def _store_content(project: Project, model_id: str, content: str) -> None:
    # Re-read under the lock: the model may have been deleted while the LLM was writing.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    project.refresh_from_db(fields=["settings"])
    if model_id not in conf.hindsight_config(project.settings).mental_models:
        return
    actor = Actor.for_system(SYSTEM)
    path = selectors.model_path(model_id)
    previous = artifacts.artifact_find(project=project, path=path)
    before = previous.content if previous is not None else ""
    if content:
        artifacts.artifact_put(project=project, path=path, content=content, actor=actor)
    else:
        artifacts.artifact_delete(project=project, path=path, actor=actor)
    after = artifacts.artifact_find(project=project, path=path)
    stored = after.content if after is not None else ""
    _record_refresh(
        project, model_id, previous=before if stored != before else None, chars=len(stored)
    )


def _record_refresh(
    project: Project,
    model_id: str,
    *,
    previous: str | None = None,
    chars: int = 0,
    failed: str = "",
) -> None:
    """The refresh ledger (history, last_refreshed_at, operation status): one audit event per
    refresh, carrying the previous content when it changed."""
    audit_record(
        actor=Actor.for_system(SYSTEM),
        project=project,
        verb=selectors.REFRESH_FAILED if failed else selectors.REFRESHED,
        target_type="mental_model",
        target_id=model_id,
        before={"content": previous} if previous is not None else None,
        after={"error": failed[:2000]} if failed else {"chars": chars},
    )


def mental_models_after_consolidation(*, project: Project) -> list[str]:
    """Queue a refresh of every model with trigger.refresh_after_consolidation."""
    from memoryhub.integrations.hindsight import tasks as hindsight_tasks

    due = [
        d.id
        for d in conf.hindsight_config(project.settings).mental_models.values()
        if d.refresh_after_consolidation
    ]
    for model_id in due:
        hindsight_tasks.mental_model_refresh.delay(project.pk, model_id)
    return due
