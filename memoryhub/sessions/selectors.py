from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from memoryhub.sessions.models import AgentSession, SessionRecord, ToolResultDecision
from projects.models import Project, Role
from projects.selectors import ProjectAccess


@dataclass(frozen=True)
class SessionFilters:
    status: str | None = None
    source: str | None = None
    q: str = ""
    active_after: datetime | None = None
    active_before: datetime | None = None


def session_list(*, access: ProjectAccess, filters: SessionFilters) -> QuerySet[AgentSession]:
    qs = AgentSession.objects.filter(project=access.project)
    if filters.status:
        qs = qs.filter(status=filters.status)
    if filters.source:
        qs = qs.filter(source=filters.source)
    if filters.q:
        qs = qs.filter(Q(title__icontains=filters.q) | Q(external_id__icontains=filters.q))
    if filters.active_after:
        qs = qs.filter(last_active_at__gte=filters.active_after)
    if filters.active_before:
        qs = qs.filter(last_active_at__lt=filters.active_before)
    return qs.select_related("created_by_user").order_by("-last_active_at", "-id")


def session_by_ref(*, project: Project, ref: str) -> AgentSession:
    """A session of the project by its public id or the agent's external id (no access check:
    callers have made theirs)."""
    qs = AgentSession.objects.select_related("project", "created_by_user").filter(project=project)
    session = None
    with contextlib.suppress(ValueError):  # not a UUID: an external id
        session = qs.filter(public_id=uuid.UUID(ref)).first()
    session = session or qs.filter(external_id=ref).first()
    if session is None:
        raise Http404("Session not found.")
    return session


def session_get(*, access: ProjectAccess, ref: str, write: bool = False) -> AgentSession:
    """A session by its id or the agent's external id.

    With write=True the caller must have created the session or be a maintainer.
    """
    session = session_by_ref(project=access.project, ref=ref)
    if write and not (
        access.at_least(Role.MAINTAINER)
        or session.created_by_user_id == getattr(access.actor.user, "pk", None)
    ):
        raise PermissionDenied("Only the session's author or a maintainer can change it.")
    return session


def records_page(
    *, session: AgentSession, after: int | None, types: tuple[str, ...]
) -> QuerySet[SessionRecord]:
    qs = SessionRecord.objects.filter(session=session)
    if after is not None:
        qs = qs.filter(index__gt=after)
    if types:
        qs = qs.filter(type__in=types)
    return qs.order_by("index")


def tool_result_artifact(*, session: AgentSession, tool_use_id: str) -> str:
    decision = (
        ToolResultDecision.objects.filter(session=session, tool_use_id=tool_use_id)
        .exclude(artifact="")
        .first()
    )
    if decision is None:
        raise Http404("No stored output for this tool result.")
    return decision.artifact
