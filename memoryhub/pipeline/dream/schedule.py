"""When a window is dreamed: dream_enqueue_due (from every pipeline scan) and the manual
dream_request. Knobs are in conf.PipelineConfig, per project.

A window is due when:
  * its last event (AgentSession.last_active_at) is ≥ dream_idle_minutes old and at most 24 h
    old, and it has records;
  * it was not dreamed since: the job's input watermark is the newest of the last event and of
    the newest memory the window produced outside a dream (stage 1 usually runs after the
    dream's idle time, so its output makes the window due again), in epoch milliseconds, and
    success_watermark records what the last successful dream covered;
  * the project-local time (Project.timezone) is outside every dream_suppress_windows range and
    the dream_lead_minutes before each;
  * its last attempt started ≥ dream_cooldown_hours ago, its retry time has come and attempts
    remain (dream_max_attempts, refilled when the watermark rises);
  * no dream of the project holds a live lease, and only one window per project is sent per scan
    (the one whose last event is oldest, so none ages past 24 h while others go first).
dream_request (POST …/bank/dream/, `bank_dream`) bypasses idle time, suppression, cooldown and
spent attempts, but not a live lease.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.actors import Actor
from memoryhub.core.exceptions import Conflict
from memoryhub.core.services import audit_record
from memoryhub.memories.models import Memory
from memoryhub.pipeline import jobs, tasks
from memoryhub.pipeline.conf import MINUTES_PER_DAY, PipelineConfig, parse_window, pipeline_config
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession
from projects.models import Project

RECENT_HOURS = 24  # meow: only windows whose last event is within a day


def window_key(session: AgentSession) -> str:
    return f"session:{session.public_id}"


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def suppression(*, now: datetime, tz: str, config: PipelineConfig) -> str | None:
    """The suppression window (as configured) that `now` falls in, counting the lead time
    before each, in the project's timezone; None when a dream may start."""
    local = now.astimezone(ZoneInfo(tz))
    minute = local.hour * 60 + local.minute + local.second / 60
    for window in config.dream_suppress_windows:
        start, end = parse_window(window)
        # Minutes since the lead time began, against the window's length plus the lead: one
        # comparison whether or not the window (or its lead) wraps midnight.
        span = (end - start) % MINUTES_PER_DAY + config.dream_lead_minutes
        if (minute - start + config.dream_lead_minutes) % MINUTES_PER_DAY < span:
            return window
    return None


def _newest_outputs(
    project: Project, sessions: Sequence[AgentSession], since: datetime
) -> dict[str, datetime]:
    """external id → creation time of the newest memory the session produced outside a dream
    after `since` (only such memories can move a window's watermark past its last event)."""
    rows = (
        Memory.objects.filter(
            project=project,
            # updated_at ≥ created_at: the indexed column narrows, created_at decides.
            updated_at__gte=since,
            created_at__gte=since,
            source_session__in=[s.external_id for s in sessions],
        )
        .exclude(created_via=Memory.Via.DREAM)
        .values("source_session")
        .annotate(newest=Max("created_at"))
    )
    return {row["source_session"]: row["newest"] for row in rows}


def _watermark(session: AgentSession, newest_output: datetime | None) -> int:
    last = session.last_active_at
    return _ms(max(last, newest_output) if newest_output else last)


def _due(job: Job | None, watermark: int, now: datetime, config: PipelineConfig) -> bool:
    if job is None:
        return True
    if job.success_watermark >= watermark:
        return False  # dreamed since the window's last change
    if job.status == Job.Status.RUNNING and job.lease_until and job.lease_until > now:
        return False
    if job.started_at and job.started_at + timedelta(hours=config.dream_cooldown_hours) > now:
        return False
    if job.retry_at and job.retry_at > now:
        return False
    # Attempts are refilled by a rising watermark (jobs.ensure), not by waiting.
    return job.retries_remaining > 0 or watermark > job.input_watermark


def dream_enqueue_due(*, project: Project, now: datetime | None = None) -> int | None:
    """The id of the one window of the project that should be dreamed now, or None.

    Ensure-style and cheap when nothing is due: one job row is written, for the chosen window.
    """
    now = now or timezone.now()
    config = pipeline_config(project.settings)
    if suppression(now=now, tz=project.timezone, config=config):
        return None
    if Job.objects.filter(
        project=project, kind=Job.Kind.DREAM, status=Job.Status.RUNNING, lease_until__gt=now
    ).exists():
        return None  # one dream at a time per bank
    recent = now - timedelta(hours=RECENT_HOURS)
    sessions = list(
        AgentSession.objects.filter(
            project=project,
            record_count__gt=0,
            last_active_at__gte=recent,
            last_active_at__lte=now - timedelta(minutes=config.dream_idle_minutes),
        ).order_by("last_active_at", "pk")[: config.session_scan_limit]
    )
    if not sessions:
        return None
    newest = _newest_outputs(project, sessions, recent)
    existing = {
        job.key: job
        for job in Job.objects.filter(
            kind=Job.Kind.DREAM, key__in=[window_key(s) for s in sessions]
        )
    }
    for session in sessions:
        watermark = _watermark(session, newest.get(session.external_id))
        if not _due(existing.get(window_key(session)), watermark, now, config):
            continue
        job = jobs.ensure(
            kind=Job.Kind.DREAM,
            key=window_key(session),
            project=project,
            watermark=watermark,
            session_id=session.pk,
            retries=config.dream_max_attempts,
        )
        if Job.objects.filter(jobs.claimable(), pk=job.pk).exists():
            return job.pk
    return None


@transaction.atomic
def dream_request(
    *, project: Project, session: AgentSession, actor: Actor, enqueue: bool = True
) -> Job:
    """The manual trigger: make the window's dream claimable now (bypassing idle time,
    suppression, cooldown and spent attempts) unless one holds a live lease (Conflict), and
    send it to a worker on commit (enqueue=False: the caller runs it here)."""
    config = pipeline_config(project.settings)
    now = timezone.now()
    newest = _newest_outputs(project, [session], session.created_at).get(session.external_id)
    job = jobs.ensure(
        kind=Job.Kind.DREAM,
        key=window_key(session),
        project=project,
        watermark=_watermark(session, newest),
        session_id=session.pk,
        retries=config.dream_max_attempts,
    )
    if job.status == Job.Status.RUNNING and job.lease_until and job.lease_until > now:
        raise Conflict("A dream of this window is already running.")
    requested = {"by": actor.label, "at": now.isoformat()}
    updates: dict[str, Any] = {
        **jobs.fresh_attempts(config.dream_max_attempts),
        "retry_at": None,
        "detail": {**job.detail, "requested": requested},
    }
    if job.input_watermark <= job.success_watermark:
        # Nothing new since the last dream: a manual request is new input of its own.
        updates["input_watermark"] = job.success_watermark + 1
    Job.objects.filter(pk=job.pk).update(**updates)
    audit_record(
        actor=actor,
        project=project,
        verb="bank.dream_requested",
        target_type="session",
        target_id=session.public_id,
    )
    job.refresh_from_db()
    if enqueue:
        tasks.send_on_commit(tasks.dream_run, job.pk)
    return job
