"""Which due work goes to the broker. Enqueueing is always on commit, and a job id sent twice
is harmless: the second run finds the lease taken or nothing past the watermark."""

from __future__ import annotations

from memoryhub.pipeline import services, tasks
from memoryhub.pipeline.models import Job
from projects.models import Project


def scan_project(project: Project) -> dict[str, int]:
    stage1 = services.stage1_enqueue_due(project=project)
    for job_id in stage1:
        tasks.stage1_run.delay_on_commit(job_id)
    consolidate = services.consolidation_due(project=project)
    if consolidate is not None:
        tasks.consolidate_run.delay_on_commit(consolidate)
    return {"stage1": len(stage1), "consolidate": int(consolidate is not None)}


def scan_all() -> None:
    for project in Project.objects.order_by("pk").iterator():
        scan_project(project)


def after_stage1(job_id: int) -> None:
    """A finished extraction made consolidation due: run it without waiting for the scan."""
    project = Job.objects.select_related("project").get(pk=job_id).project
    consolidate = services.consolidation_due(project=project)
    if consolidate is not None:
        tasks.consolidate_run.delay_on_commit(consolidate)
