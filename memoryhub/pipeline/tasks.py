"""Thin Celery adapters: each takes an id and calls an idempotent, leased service.

Retries of the work itself are counted on the Job row (visible in the bank's diagnose view);
Celery only retries when the database is briefly unreachable.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import OperationalError, transaction

logger = logging.getLogger(__name__)

# acks_late: a worker that dies mid-task leaves the message for another one; the job's lease
# decides whether the work is still due.
_transient = shared_task(
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
    acks_late=True,
    ignore_result=True,
)


def send_on_commit(task: Any, *args: Any) -> None:
    """Enqueue `task` when the surrounding transaction commits (at once outside one). The
    services call this for the work they make due.

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


@_transient
def pipeline_scan() -> None:
    """Beat: enqueue due stage-1, consolidation and dream work of every project."""
    from memoryhub.pipeline import dispatch

    dispatch.scan_all()


@_transient
def stage1_run(job_id: int) -> None:
    from memoryhub.pipeline import services

    services.stage1_run(job_id=job_id)


@_transient
def stage2_run(job_id: int) -> None:
    from memoryhub.pipeline import services

    services.stage2_run(job_id=job_id)


@_transient
def rebuild_run(job_id: int) -> None:
    from memoryhub.pipeline import services

    services.rebuild_run(job_id=job_id)


@_transient
def dream_run(job_id: int) -> None:
    from memoryhub.pipeline.dream import runner

    runner.dream_run(job_id=job_id)
