from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.http import Http404

from memoryhub.memories.artifacts import artifact_list
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from projects.selectors import ProjectAccess


def _counts(qs: QuerySet[Any], field: str) -> dict[str, int]:
    return dict(qs.values_list(field).annotate(n=Count("id")).values_list(field, "n"))


def bank_stats(*, project: Project, access: ProjectAccess | None = None) -> dict[str, Any]:
    """Counts of the bank. Memories: those `access` may see (another member's user-scope
    memories are not even counted); every memory only for an operator (access None, the CLI)."""
    memories = (
        Memory.objects.filter(project=project) if access is None else memory_visible(access=access)
    )
    by_status = _counts(memories, "status")
    return {
        "memories": {
            "total": sum(by_status.values()),
            "by_status": by_status,
            "by_kind": _counts(memories, "kind"),
        },
        "sessions": AgentSession.objects.filter(project=project).count(),
        "records": SessionRecord.objects.filter(session__project=project).count(),
        "artifacts": artifact_list(project=project).count(),
        "jobs": _counts(Job.objects.filter(project=project), "status"),
    }


def job_overview(*, project: Project) -> dict[str, Any]:
    jobs = Job.objects.filter(project=project).select_related("session")
    return {
        "running": list(jobs.filter(status=Job.Status.RUNNING).order_by("lease_until")),
        "failing": list(
            jobs.filter(Q(status=Job.Status.ERROR) | Q(status=Job.Status.FAILED)).order_by(
                "-finished_at"
            )[:50]
        ),
        "recent": list(jobs.order_by("-finished_at", "-pk")[:20]),
    }


def rebuild_job(*, project: Project) -> Job:
    job = Job.objects.filter(project=project, kind=Job.Kind.REBUILD).first()
    if job is None:
        raise Http404("No rebuild has been started for this project.")
    return job


def stage1_jobs(*, project: Project, session_ids: list[str]) -> dict[str, Job]:
    """The stage-1 job of each session (by public id) that has one: one query for a page."""
    rows = Job.objects.filter(project=project, kind=Job.Kind.STAGE1, key__in=session_ids)
    return {job.key: job for job in rows}


def stage1_output_list(*, project: Project) -> list[Any]:
    """The project's stage-1 outputs (oh-my-pi rollouts) with their sessions, oldest first."""
    from memoryhub.pipeline.models import Stage1Output

    return list(
        Stage1Output.objects.filter(project=project)
        .select_related("session")
        .order_by("generated_at", "pk")
    )
