"""Mental models with trigger.refresh_after_consolidation are refreshed after each successful
consolidation. The pipeline knows nothing of the Hindsight API (layers point down), so this
listens for its consolidation tasks finishing on the worker instead of being called by them."""

from __future__ import annotations

from typing import Any

from celery.signals import task_postrun

STAGE2_TASKS = (
    "memoryhub.pipeline.tasks.stage2_run",
    "memoryhub.pipeline.tasks.rebuild_run",
)


def after_task(sender: Any = None, args: Any = None, **_: Any) -> None:
    if getattr(sender, "name", "") not in STAGE2_TASKS or not args:
        return
    from memoryhub.core.models import AuditEvent
    from memoryhub.integrations.hindsight import selectors, services
    from memoryhub.pipeline.models import Job

    job = Job.objects.select_related("project").filter(pk=args[0], status=Job.Status.DONE).first()
    if job is None or job.finished_at is None:
        return
    # Only a consolidation newer than the last refresh: a skipped run (lease taken) must not
    # refresh again for the same consolidation.
    last = (
        AuditEvent.objects.filter(
            project=job.project, target_type="mental_model", verb=selectors.REFRESHED
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if last is None or job.finished_at > last:
        services.mental_models_after_consolidation(project=job.project)


def connect() -> None:
    task_postrun.connect(after_task, weak=False, dispatch_uid="hindsight-mental-models")
