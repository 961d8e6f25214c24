"""Which due work goes to the broker. Enqueueing is always on commit, and a job id sent twice
is harmless: the second run finds the lease taken or nothing past the watermark."""

from __future__ import annotations

from typing import Any

from memoryhub.pipeline import services, tasks
from memoryhub.pipeline.models import Job
from projects.models import Project


def send(task: Any, job_id: int) -> None:
    """Enqueue when the surrounding transaction commits (celery-types lacks the method)."""
    task.delay_on_commit(job_id)


def scan_project(project: Project) -> dict[str, int]:
    stage1 = services.stage1_enqueue_due(project=project)
    for job_id in stage1:
        send(tasks.stage1_run, job_id)
    consolidate = services.consolidation_due(project=project)
    if consolidate is not None:
        send(tasks.consolidate_run, consolidate)
    return {"stage1": len(stage1), "consolidate": int(consolidate is not None)}


def scan_all() -> None:
    for project in Project.objects.order_by("pk").iterator():
        scan_project(project)


def after_stage1(job_id: int) -> None:
    """A finished extraction made consolidation due: run it without waiting for the scan."""
    project = Job.objects.select_related("project").get(pk=job_id).project
    consolidate = services.consolidation_due(project=project)
    if consolidate is not None:
        send(tasks.consolidate_run, consolidate)
