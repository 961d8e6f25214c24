"""Reads behind the Hindsight routes, always through MemoryHub's own selectors: memory_search
(the ranking, and the visibility rule of memory_visible), memory_list / memory_get, the session
selectors, the bank's artifacts and the pipeline's job table."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, Max, QuerySet
from django.http import Http404

from memoryhub.core.models import AuditEvent
from memoryhub.integrations.hindsight import conf, tags, transcript
from memoryhub.memories import artifacts
from memoryhub.memories import selectors as memory_selectors
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import BankArtifact, Memory
from memoryhub.pipeline.models import Job
from memoryhub.recall import search
from memoryhub.sessions import selectors as session_selectors
from memoryhub.sessions.conversation import text_of
from memoryhub.sessions.models import AgentSession
from memoryhub.sessions.records import ASSISTANT, USER
from projects.selectors import ProjectAccess

# Hindsight's fact types ↔ MemoryHub kinds. world: what is true of the project, its code, the
# people and the world; experience: what the agent lived through (corrections, lessons, its
# own manner); observation: consolidated syntheses (meow-memory topics, which dream builds).
TYPE_KINDS: dict[str, tuple[str, ...]] = {
    "world": (Kind.PROJECT, Kind.REFERENCE, Kind.FACT, Kind.RULE, Kind.USER),
    "experience": (Kind.FEEDBACK, Kind.LESSON, Kind.SOUL),
    "observation": (Kind.TOPIC,),
}
KIND_TYPE = {kind: fact_type for fact_type, kinds in TYPE_KINDS.items() for kind in kinds}
# How many ranked memories each recall budget considers before packing into max_tokens.
BUDGET_DEPTH = {"low": 20, "mid": 50, "high": 100}
CHARS_PER_TOKEN = 4  # Hindsight counts with tiktoken; this is the usual approximation
MENTAL_MODELS_DIR = artifacts.NOT_STAGE2_DIRS[0]
VALID_STATUSES = (Memory.Status.ACTIVE, Memory.Status.PROPOSED)
INVALID_STATUSES = (Memory.Status.STALE, Memory.Status.ARCHIVED)


def tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def kinds_for(types: list[str] | None) -> tuple[str, ...]:
    if not types:
        return ()
    return tuple(k for t in dict.fromkeys(types) for k in TYPE_KINDS[t])


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class RecallItem:
    memory: Memory
    score: float
    raw: float
    tags: tuple[str, ...]

    def to_result(self) -> dict[str, Any]:
        m = self.memory
        return {
            "id": str(m.public_id),
            "text": m.content,
            "type": KIND_TYPE.get(m.kind, "world"),
            "entities": list(m.keywords),
            "context": m.title or None,
            "occurred_start": iso(m.created_at),
            "occurred_end": None,
            "mentioned_at": iso(m.updated_at),
            "document_id": m.source_session or None,
            "metadata": {"kind": m.kind, "importance": str(m.importance), "scope": m.scope},
            "tags": list(self.tags),
            "scores": {"final": round(self.score, 6), "keyword": round(self.raw, 6)},
        }


def recall(
    *,
    access: ProjectAccess,
    query: str,
    types: list[str] | None = None,
    tag_list: list[str] | None = None,
    tags_match: str = "any",
    max_tokens: int = 4096,
    budget: str = "mid",
) -> list[RecallItem]:
    """MemoryHub's ranking (BM25 × recency) over the active memories the caller may see,
    filtered by kind and tags, best first, packed into `max_tokens`."""
    project = access.project
    session_filter = tags.session_filter(project=project, tags=tag_list or (), mode=tags_match)
    hits = search.memory_search(
        access=access,
        query=search.SearchQuery(
            text=query,
            k=BUDGET_DEPTH[budget],
            kinds=kinds_for(types),
            source_sessions=session_filter.only,
            exclude_source_sessions=session_filter.exclude,
        ),
    )
    by_session = tags.session_tags(
        project=project, external_ids={h.memory.source_session for h in hits}
    )
    items: list[RecallItem] = []
    used = 0
    for hit in hits:
        cost = tokens(hit.memory.content)
        if used + cost > max_tokens:
            break  # packed in rank order: a later, shorter memory does not jump the queue
        used += cost
        item_tags = by_session.get(hit.memory.source_session, ())
        items.append(RecallItem(hit.memory, hit.score, hit.raw, item_tags))
    return items


# --- memories list (§4.3) --------------------------------------------------------------------


def memory_rows(
    *,
    access: ProjectAccess,
    fact_type: str | None,
    q: str,
    state: str,
    document_id: str | None,
    tag_list: list[str],
    tags_match: str,
) -> QuerySet[Memory]:
    statuses = {"valid": VALID_STATUSES, "invalidated": INVALID_STATUSES}.get(
        state, (*VALID_STATUSES, *INVALID_STATUSES)
    )
    filters = memory_selectors.MemoryFilters(
        kinds=kinds_for([fact_type] if fact_type else None), statuses=statuses, q=q
    )
    rows = memory_selectors.memory_list(access=access, filters=filters)
    if document_id is not None:
        rows = rows.filter(source_session=document_id)
    session_filter = tags.session_filter(project=access.project, tags=tag_list, mode=tags_match)
    if session_filter.only is not None:
        rows = rows.filter(source_session__in=session_filter.only)
    if session_filter.exclude:
        rows = rows.exclude(source_session__in=session_filter.exclude)
    return rows


def memory_row(memory: Memory, item_tags: tuple[str, ...]) -> dict[str, Any]:
    invalid = memory.status in INVALID_STATUSES
    return {
        "id": str(memory.public_id),
        "text": memory.content,
        "context": memory.title,
        "date": iso(memory.created_at),
        "fact_type": KIND_TYPE.get(memory.kind, "world"),
        "document_id": memory.source_session or None,
        "mentioned_at": iso(memory.updated_at),
        "occurred_start": iso(memory.created_at),
        "occurred_end": None,
        "entities": ", ".join(memory.keywords),
        "proof_count": 1,
        "tags": list(item_tags),
        "metadata": {"kind": memory.kind, "importance": memory.importance, **memory.metadata},
        "state": "invalidated" if invalid else "valid",
        "invalidation_reason": memory.status_reason or None if invalid else None,
        "invalidated_at": iso(memory.updated_at) if invalid else None,
        "updated_at": iso(memory.updated_at),
        "source_memory_ids": [],
    }


# --- documents -------------------------------------------------------------------------------


def documents(*, access: ProjectAccess, q: str) -> QuerySet[AgentSession]:
    return session_selectors.session_list(
        access=access, filters=session_selectors.SessionFilters(q=q)
    )


def document_get(*, access: ProjectAccess, document_id: str) -> AgentSession:
    try:
        return session_selectors.session_get(access=access, ref=document_id)
    except Http404:
        raise Http404("Document not found") from None


def document_text(session: AgentSession) -> str:
    """The document as oh-my-pi frames it, from the stored (redacted) records."""
    rows = session_selectors.records_page(session=session, after=None, types=(USER, ASSISTANT))
    return transcript.render(
        [
            (row.metadata.get("role") or row.type, text_of(row.content), row.timestamp)
            for row in rows
        ]
    )


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def memory_counts(*, access: ProjectAccess, document_ids: list[str]) -> dict[str, int]:
    """Visible memories learned from each document (session)."""
    rows = (
        memory_selectors.memory_visible(access=access)
        .filter(source_session__in=document_ids)
        .values("source_session")
        .annotate(n=Count("id"))
    )
    return {row["source_session"]: row["n"] for row in rows}


# --- mental models ---------------------------------------------------------------------------


def model_path(model_id: str) -> str:
    return f"{MENTAL_MODELS_DIR}/{model_id}.md"


@dataclass(frozen=True)
class MentalModelView:
    definition: conf.MentalModelDef
    content: str
    last_refreshed_at: datetime | None

    def to_response(self, bank_id: str, detail: str) -> dict[str, Any]:
        d = self.definition
        body: dict[str, Any] = {
            "id": d.id,
            "bank_id": bank_id,
            "name": d.name,
            "source_query": d.source_query,
            "tags": list(d.tags),
            "max_tokens": d.max_tokens,
            "trigger": {
                "mode": d.mode,
                "refresh_after_consolidation": d.refresh_after_consolidation,
            },
            "last_refreshed_at": iso(self.last_refreshed_at),
            "created_at": d.created_at or None,
            "is_stale": False,
        }
        if detail in ("content", "full"):
            # Never a placeholder: empty until a refresh found something to say.
            body["content"] = self.content
        if detail == "full":
            body["reflect_response"] = {"text": self.content, "based_on": {}}
        return body


REFRESHED = "mental_model.refreshed"
REFRESH_FAILED = "mental_model.refresh_failed"


def _refresh_events(access: ProjectAccess) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(project=access.project, target_type="mental_model")


def mental_models(
    *, access: ProjectAccess, tag_list: list[str] | None = None, tags_match: str = "any"
) -> list[MentalModelView]:
    definitions = conf.hindsight_config(access.project.settings).mental_models
    wanted = [
        d for d in definitions.values() if matches_model(d, tag_list or [], tags_match or "any")
    ]
    if not wanted:
        return []
    contents = dict(
        BankArtifact.objects.filter(
            project=access.project, path__in=[model_path(d.id) for d in wanted]
        ).values_list("path", "content")
    )
    refreshed: dict[str, datetime] = {}
    for target, at in (
        _refresh_events(access)
        .filter(verb=REFRESHED, target_id__in=[d.id for d in wanted])
        .values_list("target_id", "created_at")
    ):
        refreshed[target] = max(at, refreshed.get(target, at))
    return [
        MentalModelView(d, contents.get(model_path(d.id), ""), refreshed.get(d.id))
        for d in sorted(wanted, key=lambda d: d.id)
    ]


def matches_model(definition: conf.MentalModelDef, tag_list: list[str], mode: str) -> bool:
    return tags.matches(definition.tags, tag_list, mode)


def mental_model(*, access: ProjectAccess, model_id: str) -> MentalModelView:
    for view in mental_models(access=access):
        if view.definition.id == model_id:
            return view
    raise Http404(f"Mental model '{model_id}' not found")


def mental_model_history(*, access: ProjectAccess, model_id: str) -> list[dict[str, Any]]:
    """Each change of content, newest first: what it was before, and when it changed."""
    mental_model(access=access, model_id=model_id)
    events = (
        _refresh_events(access)
        .filter(verb=REFRESHED, target_id=model_id, before__isnull=False)
        .order_by("-created_at", "-id")
    )
    return [
        {
            "previous_content": (event.before or {}).get("content", ""),
            "previous_reflect_response": None,
            "changed_at": iso(event.created_at),
        }
        for event in events
    ]


# --- operations ------------------------------------------------------------------------------


def retain_operation_id(job: Job, watermark: int) -> str:
    return f"retain.{job.pk}.{watermark}"


def refresh_operation_id(model_id: str, requested_at: datetime) -> str:
    return f"mm.{int(requested_at.timestamp() * 1000)}.{model_id}"


def operation(*, access: ProjectAccess, operation_id: str) -> dict[str, Any]:
    """The status of a retain (its session's stage-1 job) or a mental-model refresh."""
    kind, _, rest = operation_id.partition(".")
    first, _, second = rest.partition(".")
    if kind == "retain" and first.isdigit() and second.isdigit():
        return _retain_status(access, operation_id, int(first), int(second))
    if kind == "mm" and first.isdigit() and second:
        return _refresh_status(access, operation_id, int(first), second)
    raise Http404(f"Operation '{operation_id}' not found")


def _retain_status(access: ProjectAccess, op: str, job_id: int, watermark: int) -> dict[str, Any]:
    job = Job.objects.filter(pk=job_id, project=access.project, kind=Job.Kind.STAGE1).first()
    if job is None:
        raise Http404(f"Operation '{op}' not found")
    if job.success_watermark >= watermark:
        status = "completed"
    elif job.status == Job.Status.FAILED:
        status = "failed"
    elif job.status == Job.Status.RUNNING:
        status = "processing"
    else:
        status = "pending"
    return {
        "operation_id": op,
        "status": status,
        "operation_type": "retain",
        "created_at": iso(job.created_at),
        "updated_at": iso(job.finished_at or job.started_at or job.created_at),
        "completed_at": iso(job.finished_at) if status == "completed" else None,
        "error_message": job.last_error or None,
        "retry_count": max(0, 3 - job.retries_remaining) if job.last_error else 0,
    }


def _refresh_status(access: ProjectAccess, op: str, millis: int, model_id: str) -> dict[str, Any]:
    try:
        requested = datetime.fromtimestamp(millis / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):  # an id no refresh of ours was given
        raise Http404(f"Operation '{op}' not found") from None
    event = (
        _refresh_events(access)
        .filter(target_id=model_id, created_at__gte=requested, verb__in=[REFRESHED, REFRESH_FAILED])
        .order_by("created_at")
        .first()
    )
    if (
        event is None
        and model_id not in conf.hindsight_config(access.project.settings).mental_models
    ):
        raise Http404(f"Operation '{op}' not found")
    status = "pending" if event is None else ("completed" if event.verb == REFRESHED else "failed")
    return {
        "operation_id": op,
        "status": status,
        "operation_type": "refresh_mental_model",
        "mental_model_id": model_id,
        "created_at": iso(requested),
        "completed_at": iso(event.created_at) if event else None,
        "error_message": (event.after or {}).get("error") if event and status == "failed" else None,
    }


def bank_statistics(*, access: ProjectAccess) -> dict[str, Any]:
    """Hindsight's bank stats over what the caller may see, and the project's pipeline jobs."""
    visible = memory_selectors.memory_visible(access=access).filter(status__in=VALID_STATUSES)
    by_kind = dict(visible.values_list("kind").annotate(n=Count("id")).values_list("kind", "n"))
    by_type = dict.fromkeys(TYPE_KINDS, 0)
    for kind, n in by_kind.items():
        by_type[KIND_TYPE.get(kind, "world")] += n
    jobs = Job.objects.filter(project=access.project)
    by_status = dict(jobs.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    last = jobs.filter(kind=Job.Kind.STAGE2, status=Job.Status.DONE).aggregate(
        at=Max("finished_at")
    )["at"]
    return {
        "total_nodes": sum(by_kind.values()),
        "total_links": 0,
        "total_documents": documents(access=access, q="").count(),
        "nodes_by_fact_type": by_type,
        "links_by_link_type": {},
        "links_by_fact_type": {},
        "links_breakdown": {},
        "pending_operations": sum(
            by_status.get(s, 0) for s in (Job.Status.PENDING, Job.Status.RUNNING, Job.Status.ERROR)
        ),
        "failed_operations": by_status.get(Job.Status.FAILED, 0),
        "last_consolidated_at": iso(last),  # Hindsight's field: our last stage 2
        "total_observations": by_type["observation"],
    }
