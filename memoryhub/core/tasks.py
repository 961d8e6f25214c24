from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from django.db import transaction

logger = logging.getLogger(__name__)


def send_on_commit(task: Any, *args: Any) -> None:
    """Enqueue `task` when the surrounding transaction commits (at once outside one). The
    services (pipeline, memories' embeddings) call this for the work they make due.

    The job row, not the message, is the record of the work: when the broker is down the send
    is logged and dropped, the request still succeeds, and beat's next scan (every
    PIPELINE_SCAN_SECONDS) sends every claimable job again once the broker is back
    (tests/reliability/test_redis_outage.py).
    """
    transaction.on_commit(lambda: _publish(task, args), robust=True)


def _publish(task: Any, args: tuple[Any, ...]) -> None:
    try:
        task.apply_async(args)
    except Exception as exc:  # kombu raises many types for "broker unreachable"
        logger.warning("Broker unavailable; %s%s waits for the next scan: %s", task.name, args, exc)


@shared_task(bind=True, ignore_result=True)
def worker_heartbeat(self: Task) -> None:
    from memoryhub.core import services

    services.worker_heartbeat_record(hostname=self.request.hostname or "unknown")
