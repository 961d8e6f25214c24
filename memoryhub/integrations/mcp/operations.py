"""What each MCP tool, resource and prompt does: synchronous, on the services and selectors the
REST API uses (the same role checks, validation, redaction and audit), so the async server only
adapts arguments and results. Each tool returns an Outcome: text for the model to read and the
same facts as JSON for programs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone
from rest_framework import serializers

from memoryhub.integrations.mcp.caller import Caller, access_for
from memoryhub.memories import artifacts, selectors
from memoryhub.memories import kinds as kinds_module
from memoryhub.memories import services as memory_services
from memoryhub.memories.api import MemoryDetailApi, MemoryInputSerializer, MemoryOutputSerializer
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory
from memoryhub.pipeline.dream import schedule
from memoryhub.pipeline.dream import selectors as dream_selectors
from memoryhub.recall import injection, language, panorama, search, similar
from memoryhub.recall.language import Language, text_language
from memoryhub.sessions import selectors as session_selectors
from memoryhub.sessions import services as session_services
from memoryhub.sessions.api import SessionOutputSerializer
from memoryhub.sessions.conversation import estimate_tokens, messages_to_records
from memoryhub.sessions.records import RecordInput, record_from_dict
from projects.models import Role

SEARCH_DEFAULT_K = 10  # meow-memory: k 10, the first five whatever was seen, then five unseen
SEARCH_MAX_K = 50
SEARCH_CONTENT_MAX = 300


@dataclass(frozen=True)
class SearchWords:
    """memory_search's fixed wording in one language (meow-memory's, for Chinese)."""

    note: str
    none: str
    about: str
    personal: str  # the label of a user-scope memory, where project ones show the project


SEARCH_WORDS = {
    Language.EN: SearchWords(
        note="Oldest first. If entries conflict, the newest wins; older ones show how things "
        "evolved. memory_read <id> shows a memory whole.",
        none="No memory matches.",
        about="about: ",
        personal="personal",
    ),
    Language.ZH: SearchWords(
        note="按时间从旧到新排列。如果冲突，以最新的为准；时间戳较旧的条目可作为事情发展过程的参考。"
        "memory_read <id> 读取全文。",
        none="没有匹配的记忆。",
        about="关于：",
        personal="个人",
    ),
}
RESOURCE_LIST_LIMIT = 50
KIND_NAMES = ", ".join(Kind.values)


@dataclass(frozen=True)
class Outcome:
    text: str
    data: dict[str, Any]


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=str)


def _valid(serializer: serializers.Serializer) -> dict[str, Any]:
    """validated_data, or a ValidationError naming each bad field (as the REST API's 400)."""
    if not serializer.is_valid():
        raise ValidationError(
            {
                field: [str(m) for m in _flatten(errors)]
                for field, errors in serializer.errors.items()
            }
        )
    return dict(serializer.validated_data)


def _flatten(errors: Any) -> list[str]:
    if isinstance(errors, dict):
        return [f"{key}: {m}" for key, value in errors.items() for m in _flatten(value)]
    if isinstance(errors, list):
        return [m for item in errors for m in _flatten(item)]
    return [str(errors)]


def memory_dict(memory: Memory) -> dict[str, Any]:
    return dict(MemoryOutputSerializer(memory).data)


def _stamp(memory: Memory) -> str:
    return memory.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


# --- tools ----------------------------------------------------------------------------------


def memory_remember(caller: Caller, project: str | None, fields: dict[str, Any]) -> Outcome:
    access = access_for(caller, project, role=Role.MEMBER, write=True)
    session_ref = fields.pop("session_id", None)
    data = _valid(MemoryInputSerializer(data={k: v for k, v in fields.items() if v is not None}))
    session_selectors.check_citable(access=access, refs=[session_ref or ""])
    result = memory_services.memory_remember(
        project=access.project,
        actor=access.actor,
        data=memory_services.MemoryInput(**data, source_session=session_ref or ""),
    )
    memory = selectors.memory_get(access=access, public_id=str(result.memory.public_id))
    superseded = [str(m.public_id) for m in result.superseded]
    verb = "Merged into the existing memory" if result.merged else "Remembered as a new memory"
    lines = [f"{verb} {memory.public_id} ({memory.kind}, importance {memory.importance})."]
    if superseded:
        lines.append(f"It contradicts and supersedes (now stale): {', '.join(superseded)}.")
    return Outcome(
        text="\n".join(lines),
        data={"merged": result.merged, "superseded": superseded, "memory": memory_dict(memory)},
    )


def memory_search(
    caller: Caller,
    project: str | None,
    *,
    query: str,
    k: int,
    kinds: Sequence[str],
    statuses: Sequence[str],
    days: int | None,
    session_id: str | None,
    content_max: int,
) -> Outcome:
    access = access_for(caller, project)
    resolved = [kinds_module.resolve_kind(kind) for kind in kinds]
    if None in resolved:
        bad = [kind for kind, found in zip(kinds, resolved, strict=True) if found is None]
        raise ValidationError({"kind": f"Unknown kind(s) {', '.join(bad)}; use {KIND_NAMES}."})
    bad_statuses = sorted(set(statuses) - set(Memory.Status.values))
    if bad_statuses:
        raise ValidationError({"status": f"Unknown status(es): {', '.join(bad_statuses)}."})
    hits = search.memory_search(
        access=access,
        query=search.SearchQuery(
            text=query,
            k=k,
            kinds=tuple(kind for kind in resolved if kind),
            statuses=tuple(statuses) or (Memory.Status.ACTIVE,),
            days=days,
            session=session_selectors.own_session(access=access, ref=session_id),
        ),
    )
    ranked = [(rank, hit) for rank, hit in enumerate(hits, start=1)]
    # meow-memory shows its results oldest first, so the newest of conflicting entries is last.
    ranked.sort(key=lambda pair: (pair[1].memory.updated_at, pair[1].memory.pk))
    # The words around the memories: the request's language, else the memories' own.
    lang = caller.language or text_language(hit.memory.content for hit in hits)
    words = SEARCH_WORDS[lang]
    now = timezone.now()
    results = []
    lines = [words.note] if ranked else [words.none]
    for rank, hit in ranked:
        memory = hit.memory
        content = memory.content[:content_max] if content_max else memory.content
        results.append(
            {
                "id": str(memory.public_id),
                "rank": rank,
                "score": round(hit.score, 6),
                "kind": memory.kind,
                "scope": memory.scope,
                "subcategory": memory.subcategory,
                "title": memory.title,
                "keywords": memory.keywords,
                "importance": memory.importance,
                "status": memory.status,
                "content": content,
                "updated_at": memory.updated_at.isoformat(),
            }
        )
        label = access.project.slug if memory.scope == "project" else words.personal
        relative = language.relative_time(memory.updated_at, now, lang)
        lines.append(
            f"[{label} : {memory.kind}] [{memory.public_id}] {_stamp(memory)} [{relative}] "
            f"{words.about}{', '.join(memory.keywords) or memory.title or '-'}"
            + (f"\n  {content}" if content else "")
        )
    return Outcome(text="\n".join(lines), data={"project": access.project.slug, "results": results})


def memory_read(caller: Caller, project: str | None, memory_id: str) -> Outcome:
    access = access_for(caller, project)
    data = memory_dict(selectors.memory_get(access=access, public_id=_uuid(memory_id)))
    return Outcome(text=_json(data), data=data)


def memory_update(
    caller: Caller,
    project: str | None,
    memory_id: str,
    changes: dict[str, Any],
    *,
    status: str | None,
    reason: str,
    superseded_by: str | None,
) -> Outcome:
    access = access_for(caller, project, role=Role.MEMBER, write=True)
    if changes.get("keywords") == []:
        del changes["keywords"]  # meow-memory: an empty list leaves the keywords alone
    fields = {k: v for k, v in changes.items() if v is not None}
    if not fields and status is None:
        raise ValidationError("Say what to change: content, importance, keywords, status, …")
    data = _valid(MemoryDetailApi.MemoryUpdateInput(data=fields))
    with transaction.atomic():  # fields and status change together or not at all
        memory = selectors.memory_get(access=access, public_id=_uuid(memory_id))
        if data:
            memory = memory_services.memory_update(memory=memory, actor=access.actor, changes=data)
        if status is not None and status != memory.status:
            successor = (
                selectors.memory_get(access=access, public_id=_uuid(superseded_by))
                if superseded_by
                else None
            )
            memory = memory_services.memory_set_status(
                memory=memory,
                actor=access.actor,
                status=status,
                reason=reason,
                superseded_by=successor,
            )
    memory = selectors.memory_get(access=access, public_id=str(memory.public_id))
    return Outcome(
        text=f"Updated {memory.public_id} ({memory.status}).", data={"memory": memory_dict(memory)}
    )


def memory_project(caller: Caller, project: str | None) -> Outcome:
    access = access_for(caller, project)
    view = panorama.project_panorama(access=access, lang=caller.language)
    rows = {
        "rules": [str(r.memory.public_id) for r in view.rules.rows],
        **{
            name: [str(r.memory.public_id) for r in group.rows]
            for name, group in view.sections.items()
        },
        "todo_done": [str(r.memory.public_id) for r in view.todo_done.rows],
        "todo_open": [str(r.memory.public_id) for r in view.todo_open.rows],
    }
    return Outcome(text=view.text, data={"project": access.project.slug, "memory_ids": rows})


def memory_find_similar(
    caller: Caller,
    project: str | None,
    memory_id: str,
    *,
    k: int,
    session_id: str | None,
    content_max: int,
) -> Outcome:
    access = access_for(caller, project)
    target = selectors.memory_get(access=access, public_id=_uuid(memory_id))
    found = similar.find_similar(
        access=access,
        target=target,
        k=k,
        session=session_selectors.own_session(access=access, ref=session_id),
    )
    results = []
    lines = [] if found else ["No similar memory."]
    for item in found:
        memory = item.memory
        content = memory.content[:content_max] if content_max else memory.content
        results.append(
            {
                "id": str(memory.public_id),
                "score": item.score,
                "kind": memory.kind,
                "status": memory.status,
                "importance": memory.importance,
                "keywords": memory.keywords,
                "content": content,
                "updated_at": memory.updated_at.isoformat(),
            }
        )
        lines.append(
            f"{item.score:.3f} [{memory.kind}] [{memory.public_id}] {_stamp(memory)}\n  {content}"
        )
    return Outcome(
        text="\n".join(lines), data={"target": str(target.public_id), "results": results}
    )


def memory_dream(caller: Caller, project: str | None, session_id: str | None) -> Outcome:
    access = access_for(caller, project, role=Role.MAINTAINER, write=True)
    window = (
        session_selectors.session_get(access=access, ref=session_id)
        if session_id
        else dream_selectors.latest_window(project=access.project)
    )
    with transaction.atomic():
        job = schedule.dream_request(project=access.project, session=window, actor=access.actor)
    return Outcome(
        text=f"Dream of session {window.external_id} queued (job {job.pk}, {job.status}).",
        data={"job": job.pk, "status": job.status, "session": window.external_id},
    )


def _records(records: list[Any] | None, messages: list[Any] | None) -> list[RecordInput]:
    if bool(records) == bool(messages):
        raise ValidationError("Send either `records` (MewCode records) or `messages`, not both.")
    if messages:
        try:
            return messages_to_records(messages)
        except (ValueError, AttributeError, TypeError) as exc:
            raise ValidationError({"messages": str(exc)}) from None
    parsed, errors = [], {}
    for index, item in enumerate(records or []):
        try:
            parsed.append(record_from_dict(item))
        except ValueError as exc:
            errors[f"records[{index}]"] = str(exc)
    if errors:
        raise ValidationError(errors)
    return parsed


def session_append(
    caller: Caller,
    project: str | None,
    session_id: str,
    *,
    records: list[Any] | None,
    messages: list[Any] | None,
    title: str,
) -> Outcome:
    access = access_for(caller, project, role=Role.MEMBER, write=True)
    parsed = _records(records, messages)
    with transaction.atomic():  # a session created for records that are refused is not kept
        try:
            session = session_selectors.session_get(access=access, ref=session_id, author_only=True)
            created = False
        except Http404:
            session, created = session_services.session_get_or_create(
                project=access.project, actor=access.actor, external_id=session_id, title=title
            )
        result = session_services.records_append(
            session=session, actor=access.actor, records=parsed
        )
    session.refresh_from_db()
    data = {
        "session_created": created,
        "created": len(result.created),
        "skipped": result.skipped,
        "first_index": result.created[0].index if result.created else None,
        "session": dict(SessionOutputSerializer(session).data),
    }
    return Outcome(
        text=(
            f"Appended {len(result.created)} record(s) to {session.external_id}"
            + (f" ({result.skipped} already stored)" if result.skipped else "")
            + f"; it holds {session.record_count}."
        ),
        data=data,
    )


def session_resume(caller: Caller, project: str | None, session_id: str) -> Outcome:
    access = access_for(caller, project)
    session = session_selectors.session_get(access=access, ref=session_id)
    base = (
        f"{settings.SITE_URL}/api/v1/projects/{access.project.slug}/sessions/"
        f"{session.public_id}/tool-results/"
    )
    conversation, messages = session_services.session_resume(
        session=session, artifact_url=lambda tool_use_id: f"{base}{tool_use_id}/"
    )
    data = {
        "session": dict(SessionOutputSerializer(session).data),
        "messages": messages,
        "boundary_index": conversation.boundary_index,
        "replayed_from_index": conversation.replayed_from_index,
        "dropped_records": conversation.dropped_records,
        "token_estimate": estimate_tokens(messages),
    }
    return Outcome(text=_json(data), data=data)


# --- resources and prompts ------------------------------------------------------------------


def _uuid(value: str) -> str:
    """A memory id as the selectors take it; anything else is simply not found."""
    try:
        return str(uuid.UUID(value.strip()))
    except (ValueError, AttributeError):
        raise Http404("Memory not found.") from None


def memory_resource(caller: Caller, project: str | None, memory_id: str) -> str:
    access = access_for(caller, project)
    return _json(memory_dict(selectors.memory_get(access=access, public_id=_uuid(memory_id))))


def root_listing(caller: Caller, project: str | None) -> str:
    access = access_for(caller, project)
    lines = [f"# memory://root of {access.project.slug}"]
    for artifact in artifacts.artifact_root_listing(project=access.project):
        lines.append(
            f"- memory://root/{artifact.path} ({artifact.chars} chars, version {artifact.version})"  # type: ignore[attr-defined]
        )
    if len(lines) == 1:
        lines.append("(empty: no consolidation has run yet)")
    return "\n".join(lines)


def artifact_resource(caller: Caller, project: str | None, path: str) -> str:
    access = access_for(caller, project)
    try:
        clean = artifacts.validate_relative_path(path)
    except ValidationError:
        raise Http404("Artifact not found.") from None
    return artifacts.artifact_get(project=access.project, path=clean).content


@dataclass(frozen=True)
class ListedResource:
    uri: str
    name: str
    description: str
    mime_type: str


def resource_list(caller: Caller) -> list[ListedResource]:
    """What resources/list shows: the connection's project's memory://root and its most
    recently updated memories. Without a pinned project, nothing (use the templates)."""
    if not caller.project:
        return []
    access = access_for(caller, None)
    listed = [
        ListedResource(
            uri="memory://root",
            name=f"{access.project.slug}: memory://root",
            description="The consolidation artifacts: MEMORY.md, memory_summary.md, skills.",
            mime_type="text/markdown",
        )
    ]
    recent = selectors.memory_list(
        access=access, filters=selectors.MemoryFilters(statuses=(Memory.Status.ACTIVE,))
    )[:RESOURCE_LIST_LIMIT]
    for memory in recent:
        listed.append(
            ListedResource(
                uri=f"memory://memories/{memory.public_id}",
                name=memory.title or memory.content[:60],
                description=f"{memory.kind} · importance {memory.importance} · {_stamp(memory)}",
                mime_type="application/json",
            )
        )
    return listed


def injection_prompt(
    caller: Caller, project: str | None, profile: str, session_id: str | None
) -> str:
    access = access_for(caller, project)
    session = session_selectors.own_session(access=access, ref=session_id)
    payload = injection.build_payload(access=access, profile=injection.Profile(profile))
    if session is not None:
        injection.mark_injected(session=session, payload=payload)
    return payload.text
