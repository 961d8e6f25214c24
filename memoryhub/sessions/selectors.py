from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Q, QuerySet
from django.http import Http404

from accounts.models import User
from memoryhub.core import rows
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
    public_id = None
    with contextlib.suppress(ValueError):  # not a UUID: an external id
        public_id = uuid.UUID(ref)
    if connection.vendor == "postgresql":
        session = _session_by_ref_sql(project, public_id, ref)
    else:
        qs = AgentSession.objects.select_related("project", "created_by_user")
        qs = qs.filter(project=project)
        session = qs.filter(public_id=public_id).first() if public_id is not None else None
        session = session or qs.filter(external_id=ref).first()
    if session is None:
        raise Http404("Session not found.")
    return session


def _session_by_ref_sql(
    project: Project, public_id: uuid.UUID | None, ref: str
) -> AgentSession | None:
    """session_by_ref in one hand-written statement: recall and injection name a session on
    every request, and compiling the queryset cost more than the read. A public-id match wins
    over an external-id match, as it did."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(AgentSession, 's')}, {rows.columns(User, 'u')}"  # noqa: S608
            f" FROM {AgentSession._meta.db_table} s"
            " LEFT JOIN accounts_user u ON u.id = s.created_by_user_id"
            " WHERE s.project_id = %s AND (s.public_id = %s OR s.external_id = %s)"
            " ORDER BY s.public_id IS NOT DISTINCT FROM %s DESC, s.id LIMIT 1",
            [project.pk, public_id, ref, public_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    n = rows.width(AgentSession)
    session = rows.build(AgentSession, row[:n])
    session.project = project
    session.created_by_user = rows.build(User, row[n:]) if row[n] is not None else None
    return session


def session_get(
    *, access: ProjectAccess, ref: str, write: bool = False, author_only: bool = False
) -> AgentSession:
    """A session by its id or the agent's external id.

    With write=True (end it, compact it, extract it) the caller must have created the session
    or be a maintainer. With author_only=True only its author may: adding records (what a
    session says is extracted as its author's, private memories included) and the reads that
    mark what the session has been shown (recall, injection, search with a session).
    """
    session = session_by_ref(project=access.project, ref=ref)
    author = session.created_by_user_id == getattr(access.actor.user, "pk", None)
    if author_only and not author:
        raise PermissionDenied(
            "This is another person's session: only its author adds to it or recalls into it."
        )
    if write and not (author or access.at_least(Role.MAINTAINER)):
        raise PermissionDenied("Only the session's author or a maintainer can change it.")
    return session


def own_session(*, access: ProjectAccess, ref: str | None) -> AgentSession | None:
    """The session a read names (`session_id`), which must be the caller's own: what the read
    returns is marked as shown to it. None when the read names none."""
    return session_get(access=access, ref=ref, author_only=True) if ref else None


def check_citable(*, access: ProjectAccess, refs: Iterable[str]) -> None:
    """A person cites as a memory's source only sessions of their own: a cited session lends
    the memory its provenance and its tags (tag-scoped recall). A name no session of the
    project has is provenance from elsewhere (an import) and passes. One query for any number."""
    if access.actor.user is None:
        return
    names = {ref for ref in refs if ref}
    if not names:
        return
    public_ids = []
    for ref in names:
        with contextlib.suppress(ValueError):
            public_ids.append(uuid.UUID(ref))
    foreign = (
        AgentSession.objects.filter(project=access.project)
        .filter(Q(external_id__in=names) | Q(public_id__in=public_ids))
        .exclude(created_by_user=access.actor.user)
        .values_list("external_id", flat=True)[:5]
    )
    if foreign:
        raise PermissionDenied(
            "A memory's source must be a session of your own; "
            f"{', '.join(sorted(foreign))} is another person's."
        )


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
