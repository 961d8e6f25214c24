from __future__ import annotations

import functools
import operator
from typing import Any

from django.db.models import Count
from django.http import HttpRequest
from django.template.response import TemplateResponse

from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession
from memoryhub.web.access import actor_for
from projects.models import ProjectMembership, Role
from projects.selectors import ProjectAccess


def _project_rows(request: HttpRequest) -> list[dict[str, Any]]:
    """The person's projects with counts, in a fixed number of queries whatever their number."""
    actor = actor_for(request)
    memberships = list(
        ProjectMembership.objects.filter(user=actor.user)
        .select_related("project")
        .order_by("project__slug")
    )
    if not memberships:
        return []
    accesses = [
        ProjectAccess(project=m.project, role=Role(m.role), actor=actor) for m in memberships
    ]
    # One query over every project, each side of the OR being that project's visibility rule.
    visible = functools.reduce(operator.or_, (memory_visible(access=a) for a in accesses))
    memory_counts: dict[tuple[int, str], int] = {
        (row["project_id"], row["status"]): row["n"]
        for row in visible.order_by().values("project_id", "status").annotate(n=Count("id"))
    }
    project_ids = [m.project_id for m in memberships]
    session_counts = dict(
        AgentSession.objects.filter(project_id__in=project_ids)
        .order_by()
        .values_list("project_id")
        .annotate(n=Count("id"))
        .values_list("project_id", "n")
    )
    failed_counts = dict(
        Job.objects.filter(project_id__in=project_ids, status=Job.Status.FAILED)
        .order_by()
        .values_list("project_id")
        .annotate(n=Count("id"))
        .values_list("project_id", "n")
    )
    return [
        {
            "project": m.project,
            "role": m.role,
            "active": memory_counts.get((m.project_id, Memory.Status.ACTIVE), 0),
            "proposed": memory_counts.get((m.project_id, Memory.Status.PROPOSED), 0),
            "stale": memory_counts.get((m.project_id, Memory.Status.STALE), 0),
            "sessions": session_counts.get(m.project_id, 0),
            "failed_jobs": failed_counts.get(m.project_id, 0),
        }
        for m in memberships
    ]


def home(request: HttpRequest) -> TemplateResponse:
    """Signed in: the projects list with counts. Otherwise: what MemoryHub is, and sign in."""
    rows = _project_rows(request) if request.user.is_authenticated else []
    return TemplateResponse(request, "web/home.html", {"rows": rows})
