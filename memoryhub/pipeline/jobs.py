"""Leases on Job rows (seed 003): claim by conditional UPDATE, heartbeat, finish, fail.

Every transition is guarded by the owner token, so a worker whose lease expired and was taken
over cannot overwrite the new owner's result. Each claim spends one of the job's retries: a run
that never reports back (its worker was killed, ran out of memory, hung) counts too, so a job
that kills its worker ends failed instead of being claimed forever.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import (
    BigIntegerField,
    Case,
    F,
    IntegerField,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast, Concat, Greatest
from django.utils import timezone

from memoryhub.pipeline.models import Job
from projects.models import Project

ERROR_MAX_CHARS = 4000
INTERRUPTED = (
    "the run stopped before it finished (its worker was killed or ran out of memory, "
    "or it stopped renewing its lease)"
)


class LeaseLost(Exception):
    """The job was deleted (a bank clear) or taken over: this run must not write anything."""


@dataclass(frozen=True)
class Claim:
    job_id: int
    token: str
    watermark: int  # the input watermark this run must bring success up to
    project_id: int


def fresh_attempts(retries: int) -> dict[str, int]:
    """The update that gives a job all its attempts again (new input, a person asking): the
    retries, and the count of interrupted runs that feeds "Interrupted N times"."""
    return {"retries_remaining": retries, "interruptions": 0}


def ensure(
    *,
    kind: str,
    key: str,
    project: Project,
    watermark: int | None = None,
    bump: bool = False,
    session_id: int | None = None,
    retries: int = 3,
) -> Job:
    """The (kind, key) job, created when missing, with its input watermark raised to
    `watermark` (never lowered) or bumped by one. A rising watermark refills the retries."""
    job = Job.objects.filter(kind=kind, key=key).first()
    if job is None:
        try:
            with transaction.atomic():
                job = Job.objects.create(
                    kind=kind,
                    key=key,
                    project=project,
                    session_id=session_id,
                    retries_remaining=retries,
                )
        except IntegrityError:  # created concurrently
            job = Job.objects.get(kind=kind, key=key)
    if bump:
        Job.objects.filter(pk=job.pk).update(
            input_watermark=F("input_watermark") + 1, **fresh_attempts(retries)
        )
    elif watermark is not None:
        Job.objects.filter(pk=job.pk, input_watermark__lt=watermark).update(
            input_watermark=watermark, **fresh_attempts(retries)
        )
    job.refresh_from_db()
    return job


def find(job_id: int) -> Job | None:
    """The job with its project; None once it is gone: a bank clear or a project deletion
    deletes jobs whose messages may still be queued, and a message for such a job is a no-op."""
    return Job.objects.select_related("project", "session").filter(pk=job_id).first()


def claimable() -> Q:
    """Due, not owned by a live lease, and allowed to (re)try now."""
    now = timezone.now()
    return (
        Q(input_watermark__gt=F("success_watermark"))
        & (~Q(status=Job.Status.RUNNING) | Q(lease_until__lt=now))
        & Q(retries_remaining__gt=0)
        & (Q(retry_at__isnull=True) | Q(retry_at__lte=now))
    )


def fail_interrupted(jobs: QuerySet[Job]) -> int:
    """Fail, visibly, the jobs among `jobs` whose last attempt was interrupted (running, lease
    run out, no retries left): nothing would ever claim them again. Returns how many."""
    count = F("interruptions") + 1
    return jobs.filter(
        status=Job.Status.RUNNING, lease_until__lt=timezone.now(), retries_remaining=0
    ).update(
        status=Job.Status.FAILED,
        owner_token="",
        lease_until=None,
        retry_at=None,
        interruptions=count,
        last_error=Concat(
            Value("Interrupted "),
            Cast(count, TextField()),
            Value(f" times, no attempts left: {INTERRUPTED}."),
            output_field=TextField(),
        ),
        finished_at=timezone.now(),
    )


def claim(job_id: int, *, lease_seconds: int) -> Claim | None:
    """Take the job if it is claimable, spending one retry; None when another worker has it or
    nothing is due."""
    now = timezone.now()
    token = uuid.uuid4().hex
    job = Job.objects.filter(pk=job_id).values("input_watermark", "project_id").first()
    if job is None:
        return None
    fail_interrupted(Job.objects.filter(pk=job_id))  # a message redelivered after the last try
    # Still running when claimed = its lease ran out: the previous run was interrupted.
    interrupted = Q(status=Job.Status.RUNNING)
    taken = Job.objects.filter(claimable(), pk=job_id).update(
        status=Job.Status.RUNNING,
        owner_token=token,
        lease_until=now + timedelta(seconds=lease_seconds),
        heartbeat_at=now,
        started_at=now,
        claimed_watermark=job["input_watermark"],
        retries_remaining=F("retries_remaining") - 1,
        interruptions=Case(
            When(interrupted, then=F("interruptions") + 1),
            default=F("interruptions"),
            output_field=IntegerField(),
        ),
        last_error=Case(
            When(interrupted, then=Value(f"Interrupted: {INTERRUPTED}; retried.")),
            default=F("last_error"),
            output_field=TextField(),
        ),
    )
    if taken != 1:
        return None
    return Claim(
        job_id=job_id, token=token, watermark=job["input_watermark"], project_id=job["project_id"]
    )


def heartbeat(claim: Claim, *, lease_seconds: int, progress: int | None = None) -> bool:
    """Extend the lease; False when ownership was lost (the run must stop)."""
    now = timezone.now()
    fields: dict[str, object] = {
        "heartbeat_at": now,
        "lease_until": now + timedelta(seconds=lease_seconds),
    }
    if progress is not None:
        fields["progress"] = progress
    return (
        Job.objects.filter(
            pk=claim.job_id, owner_token=claim.token, status=Job.Status.RUNNING
        ).update(**fields)
        == 1
    )


@contextmanager
def held(claim: Claim) -> Iterator[None]:
    """A transaction whose writes commit only while this run still owns its job: it locks the
    project row (first, as memory_remember and the bank clear do: no deadlock) and then the
    job row. Raises LeaseLost when the job is gone (a bank clear) or was taken over."""
    with transaction.atomic():
        Project.objects.select_for_update(no_key=True).filter(pk=claim.project_id).first()
        owned = Job.objects.select_for_update().filter(
            pk=claim.job_id, owner_token=claim.token, status=Job.Status.RUNNING
        )
        if owned.values_list("pk", flat=True).first() is None:
            raise LeaseLost(f"job {claim.job_id} was deleted or taken over; its run stops")
        yield


def succeed(claim: Claim, *, detail: dict[str, object] | None = None) -> bool:
    """Success moves success_watermark up to the claimed input (never backwards)."""
    updated = Job.objects.filter(
        pk=claim.job_id, owner_token=claim.token, status=Job.Status.RUNNING
    ).update(
        status=Job.Status.DONE,
        owner_token="",
        lease_until=None,
        retry_at=None,
        last_error="",
        interruptions=0,
        finished_at=timezone.now(),
        progress=100,
        detail=detail or {},
        success_watermark=Greatest(
            F("success_watermark"), Value(claim.watermark, output_field=BigIntegerField())
        ),
    )
    return updated == 1


def fail(
    claim: Claim, error: str, *, retry_delay_seconds: int, permanent: bool = False
) -> str | None:
    """An error: retried after the delay while retries remain (the claim spent one), then
    visibly failed. `permanent`: retrying cannot help (the input is bad), so it fails at once.
    The status the job is left in; None when the claim was lost (its new owner decides)."""
    now = timezone.now()
    retry_at = now + timedelta(seconds=retry_delay_seconds)
    left = Q(retries_remaining__gt=0)
    outcome: dict[str, Any] = (
        {"status": Job.Status.FAILED, "retries_remaining": 0, "retry_at": None}
        if permanent
        else {
            "status": Case(
                When(left, then=Value(Job.Status.ERROR)), default=Value(Job.Status.FAILED)
            ),
            "retry_at": Case(When(left, then=Value(retry_at)), default=None),
        }
    )
    updated = Job.objects.filter(
        pk=claim.job_id, owner_token=claim.token, status=Job.Status.RUNNING
    ).update(
        **outcome,
        owner_token="",
        lease_until=None,
        last_error=error[:ERROR_MAX_CHARS],
        finished_at=now,
    )
    if updated != 1:
        return None
    return Job.objects.filter(pk=claim.job_id).values_list("status", flat=True).first()
