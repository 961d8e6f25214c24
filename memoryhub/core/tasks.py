from __future__ import annotations

from celery import Task, shared_task


@shared_task(bind=True, ignore_result=True)
def worker_heartbeat(self: Task) -> None:
    from memoryhub.core import services

    services.worker_heartbeat_record(hostname=self.request.hostname or "unknown")
