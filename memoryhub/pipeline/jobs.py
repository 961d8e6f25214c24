"""Leases on Job rows (seed 003): claim by conditional UPDATE, heartbeat, finish, fail.

Every transition is guarded by the owner token, so a worker whose lease expired and was taken
over cannot overwrite the new owner's result.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from memoryhub.pipeline.models import Job
from projects.models import Project

ERROR_MAX_CHARS = 4000


@dataclass(frozen=True)
class Claim:
    job_id: int
    token: str
    watermark: int  # the input watermark this run must bring success up to


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
            input_watermark=F("input_watermark") + 1, retries_remaining=retries
        )
    elif watermark is not None:
        Job.objects.filter(pk=job.pk, input_watermark__lt=watermark).update(
            input_watermark=watermark, retries_remaining=retries
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


def claim(job_id: int, *, lease_seconds: int) -> Claim | None:
    """Take the job if it is claimable; None when another worker has it or nothing is due."""
    now = timezone.now()
    token = uuid.uuid4().hex
    job = Job.objects.filter(pk=job_id).values("input_watermark").first()
    if job is None:
        return None
    taken = Job.objects.filter(claimable(), pk=job_id).update(
        status=Job.Status.RUNNING,
        owner_token=token,
        lease_until=now + timedelta(seconds=lease_seconds),
        heartbeat_at=now,
        started_at=now,
        claimed_watermark=job["input_watermark"],
    )
    if taken != 1:
        return None
    return Claim(job_id=job_id, token=token, watermark=job["input_watermark"])


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
        finished_at=timezone.now(),
        progress=100,
        detail=detail or {},
    )
    Job.objects.filter(pk=claim.job_id, success_watermark__lt=claim.watermark).update(
        success_watermark=claim.watermark
    )
    return updated == 1


def fail(
    claim: Claim, error: str, *, retry_delay_seconds: int, permanent: bool = False
) -> str | None:
    """An error: retried after the delay while retries remain, then visibly failed.
    `permanent`: retrying cannot help (the input is bad), so it fails at once. The status the
    job is left in; None when the claim was lost."""
    now = timezone.now()
    job = Job.objects.filter(pk=claim.job_id, owner_token=claim.token).first()
    if job is None:
        return None
    remaining = 0 if permanent else max(job.retries_remaining - 1, 0)
    Job.objects.filter(pk=claim.job_id, owner_token=claim.token).update(
        status=Job.Status.ERROR if remaining else Job.Status.FAILED,
        retries_remaining=remaining,
        owner_token="",
        lease_until=None,
        retry_at=now + timedelta(seconds=retry_delay_seconds) if remaining else None,
        last_error=error[:ERROR_MAX_CHARS],
        finished_at=now,
    )
    return Job.Status.ERROR if remaining else Job.Status.FAILED
