"""Leases on the job table: one owner at a time, expiry, retries, watermarks."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memoryhub.pipeline import jobs
from memoryhub.pipeline.models import Job
from projects.models import Project


def expire_lease(job: Job) -> None:
    """The lease ran out (moved into the past rather than waited for)."""
    Job.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))


def make_job(project: Project, watermark: int = 5) -> Job:
    return jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, watermark=watermark)


def test_only_one_worker_claims_a_job(project: Project) -> None:
    job = make_job(project)
    first = jobs.claim(job.pk, lease_seconds=60)
    assert first is not None and first.watermark == 5
    assert jobs.claim(job.pk, lease_seconds=60) is None
    job.refresh_from_db()
    assert (job.status, job.owner_token) == (Job.Status.RUNNING, first.token)


def test_an_expired_lease_can_be_taken_over_and_the_old_owner_is_ignored(
    project: Project,
) -> None:
    job = make_job(project)
    dead = jobs.claim(job.pk, lease_seconds=60)
    assert dead is not None
    expire_lease(job)
    alive = jobs.claim(job.pk, lease_seconds=60)
    assert alive is not None and alive.token != dead.token
    assert jobs.heartbeat(dead, lease_seconds=60) is False
    assert jobs.succeed(dead) is False  # the old owner cannot finish the new owner's run
    assert jobs.succeed(alive) is True
    job.refresh_from_db()
    assert (job.status, job.success_watermark) == (Job.Status.DONE, 5)
    assert jobs.claim(job.pk, lease_seconds=60) is None  # nothing past the watermark


def test_heartbeats_extend_the_lease(project: Project) -> None:
    job = make_job(project)
    claim = jobs.claim(job.pk, lease_seconds=1)
    assert claim is not None
    assert jobs.heartbeat(claim, lease_seconds=120, progress=40)
    job.refresh_from_db()
    # The heartbeat moved the lease from 1 s to 2 minutes ahead: past the first lease's end it
    # is still held.
    assert job.lease_until is not None and job.lease_until > timezone.now() + timedelta(seconds=90)
    assert job.progress == 40
    assert jobs.claim(job.pk, lease_seconds=60) is None


def test_failures_retry_after_a_delay_then_fail_visibly(project: Project) -> None:
    job = make_job(project)
    for remaining in (2, 1):
        claim = jobs.claim(job.pk, lease_seconds=60)
        assert claim is not None
        jobs.fail(claim, "LlmUnavailable: 503", retry_delay_seconds=0)
        job.refresh_from_db()
        assert (job.status, job.retries_remaining) == (Job.Status.ERROR, remaining)
        assert job.last_error == "LlmUnavailable: 503"
    claim = jobs.claim(job.pk, lease_seconds=60)
    assert claim is not None
    jobs.fail(claim, "LlmUnavailable: 503 again", retry_delay_seconds=0)
    job.refresh_from_db()
    assert (job.status, job.retries_remaining, job.retry_at) == (Job.Status.FAILED, 0, None)
    assert jobs.claim(job.pk, lease_seconds=60) is None
    # New input (a longer session) refills the retries.
    jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, watermark=9)
    assert jobs.claim(job.pk, lease_seconds=60) is not None


def test_a_delayed_retry_waits(project: Project) -> None:
    job = make_job(project)
    claim = jobs.claim(job.pk, lease_seconds=60)
    assert claim is not None
    jobs.fail(claim, "boom", retry_delay_seconds=120)
    assert jobs.claim(job.pk, lease_seconds=60) is None


def test_watermarks_never_move_backwards(project: Project) -> None:
    job = make_job(project, watermark=10)
    jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, watermark=3)
    job.refresh_from_db()
    assert job.input_watermark == 10
    dirty = jobs.ensure(kind=Job.Kind.STAGE2, key="p", project=project, bump=True)
    jobs.ensure(kind=Job.Kind.STAGE2, key="p", project=project, bump=True)
    dirty.refresh_from_db()
    assert dirty.input_watermark == 2
