from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.http import Http404

from memoryhub.pipeline.models import Job
from projects.models import Project


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
