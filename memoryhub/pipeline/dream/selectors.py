"""Reads of the dream for the API and the `bank_dream` command."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import F
from django.http import Http404
from django.utils import timezone

from memoryhub.pipeline.conf import pipeline_config
from memoryhub.pipeline.dream.schedule import suppression
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession
from memoryhub.sessions.selectors import session_by_ref
from projects.models import Project


def window_get(*, project: Project, ref: str) -> AgentSession:
    """A session of the project by its public id or external id (for the command)."""
    return session_by_ref(project=project, ref=ref)


def latest_window(*, project: Project) -> AgentSession:
    """The manual trigger's default window: the project's most recently active session."""
    session = AgentSession.objects.filter(project=project).order_by("-last_active_at").first()
    if session is None:
        raise Http404("This project has no session to dream about.")
    return session


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
