"""Which due work goes to the broker. Enqueueing is always on commit, and a job id sent twice
is harmless: the second run finds the lease taken or nothing past the watermark."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from memoryhub.core.exceptions import ApplicationError
from memoryhub.pipeline import services, tasks
from memoryhub.pipeline.dream import schedule
from memoryhub.pipeline.models import Job
from projects.models import Project

logger = logging.getLogger(__name__)


def send(task: Any, job_id: int) -> None:
    """Enqueue when the surrounding transaction commits.

    The job row, not the message, is the record of the work: when the broker is down the
    send is logged and dropped, the request still succeeds, and beat's next scan (every
    PIPELINE_SCAN_SECONDS) sends every claimable job again once the broker is back.
    """
    transaction.on_commit(lambda: _publish(task, job_id), robust=True)


def _publish(task: Any, job_id: int) -> None:
    try:
        task.apply_async((job_id,))
    except Exception as exc:  # kombu raises many types for "broker unreachable"
        logger.warning(
            "Broker unavailable; %s of job %s waits for the next scan: %s", task.name, job_id, exc
        )


def scan_project(project: Project) -> dict[str, int]:
    stage1 = services.stage1_enqueue_due(project=project)
    for job_id in stage1:
        send(tasks.stage1_run, job_id)
    consolidate = services.consolidation_due(project=project)
    if consolidate is not None:
        send(tasks.consolidate_run, consolidate)
    # At most one window per project per scan (meow starts one per tick).
    window = schedule.dream_enqueue_due(project=project)
    if window is not None:
        send(tasks.dream_run, window)
    return {
        "stage1": len(stage1),
        "consolidate": int(consolidate is not None),
        "dream": int(window is not None),
    }


def scan_all() -> None:
    for project in Project.objects.order_by("pk").iterator():
        try:
            scan_project(project)
        except ApplicationError:
            # A project whose pipeline settings are invalid must not stop the others' work.
            logger.exception("Pipeline scan of project %s skipped", project.slug)


def after_stage1(job_id: int) -> None:
    """A finished extraction made consolidation due: run it without waiting for the scan."""
    project = Job.objects.select_related("project").get(pk=job_id).project
    consolidate = services.consolidation_due(project=project)
    if consolidate is not None:
        send(tasks.consolidate_run, consolidate)


def after_consolidation(job_id: int) -> None:
    """Extractions finished while the consolidation ran (they could not start another one):
    the bank is dirty again, so consolidate once more now rather than at the next scan."""
    project = Job.objects.select_related("project").get(pk=job_id).project
    if services.consolidation_due(project=project) == job_id:
        send(tasks.consolidate_run, job_id)
