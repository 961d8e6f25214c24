"""Thin Celery adapters: each takes an id and calls an idempotent, leased service.

Retries of the work itself are counted on the Job row (visible in the bank's diagnose view);
Celery only retries when the database is briefly unreachable.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError

from memoryhub.core.tasks import send_on_commit

logger = logging.getLogger(__name__)
__all__ = ["send_on_commit"]  # the services' on-commit send lives in core (memories uses it too)

# acks_late: a worker that dies mid-task leaves the message for another one; the job's lease
# decides whether the work is still due.
_transient = shared_task(
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
    acks_late=True,
    ignore_result=True,
)


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


@_transient
def session_import_run(job_id: int) -> None:
    from memoryhub.pipeline import session_imports

    session_imports.import_run(job_id=job_id)
