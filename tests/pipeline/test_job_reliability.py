"""Background jobs under trouble (from an exploratory round): a run slower than its lease keeps
it, a run that lost its job writes nothing, a job that kills its worker ends failed, lost
rebuild messages are sent again, and a bank clear is not refilled by an extraction in flight."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.actors import Actor
from memoryhub.memories.models import Memory
from memoryhub.pipeline import jobs, services, tasks
from memoryhub.pipeline.models import Job, Stage1Output
from projects.models import Project
from tests.fake_llm import FakeLlm
from tests.pipeline.test_knobs import EMPTY_STAGE1_OUTPUT, InThread, knobs, sessions
from tests.worker import wait_for

P = "/api/v1/projects/alpha/"
MEMORY = (
    '{"memories": [{"kind": "rule", "content": "Never force-push to main.", '
    '"title": "No force-push", "keywords": ["git", "force-push", "main", "branch", '
    '"history", "push", "rewrite", "protect"], "importance": 3, '
    '"record_start": 0, "record_end": 5}]}'
)
STAGE1_OUTPUT = (
    '{"rollout_summary": "Set up tests.", "rollout_slug": "tests", '
    '"raw_memory": "Never force-push to main."}'
)


@pytest.fixture
def llm(transactional_db: None, fake_llm: FakeLlm, settings: Any) -> FakeLlm:
    """The fake LLM for runs on their own threads (which see committed rows); its calls may
    take longer than a lease."""
    fake_llm.configure(settings, timeout=60, max_retries=0)
    return fake_llm


def expire_lease(job_id: int) -> None:
    Job.objects.filter(pk=job_id).update(lease_until=timezone.now() - timedelta(seconds=1))


def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, int]]:
    """What the services send to the workers (instead of the broker)."""
    messages: list[tuple[Any, int]] = []
    monkeypatch.setattr(
        tasks, "send_on_commit", lambda task, job_id: messages.append((task, job_id))
    )
    return messages


# --- 1. a lease outlived, a lease lost --------------------------------------------------------


def test_a_stage1_run_slower_than_its_lease_keeps_it(
    alice_client: APIClient, project: Project, llm: FakeLlm
) -> None:
    knobs(alice_client, project, stage1_lease_seconds=5)
    sessions(alice_client, 1)
    (job_id,) = services.stage1_enqueue_due(project=project)
    gate = llm.hold('{"memories": []}')
    llm.reply(EMPTY_STAGE1_OUTPUT)
    run = InThread(services.stage1_run, job_id=job_id)
    try:
        assert wait_for(lambda: len(llm.requests) == 1, 30)
        time.sleep(7)  # past the first lease: its heartbeat renewed it
        job = Job.objects.get(pk=job_id)
        assert job.lease_until is not None and job.lease_until > timezone.now()
        assert services.stage1_enqueue_due(project=project) == []  # no second worker
    finally:
        gate.set()
    assert run.join() == "done"
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.retries_remaining, job.last_error) == (Job.Status.DONE, 2, "")


def test_a_run_that_lost_its_lease_writes_nothing(
    alice_client: APIClient, project: Project, llm: FakeLlm
) -> None:
    sessions(alice_client, 1)
    (job_id,) = services.stage1_enqueue_due(project=project)
    gate = llm.hold(MEMORY)
    llm.reply(STAGE1_OUTPUT)
    run = InThread(services.stage1_run, job_id=job_id)
    try:
        assert wait_for(lambda: len(llm.requests) == 1, 30)
        expire_lease(job_id)  # the run stalled past its lease: another worker took the job
        successor = jobs.claim(job_id, lease_seconds=600)
        assert successor is not None
    finally:
        gate.set()
    assert run.join() == "skipped"
    assert not Memory.objects.filter(project=project).exists()
    assert not Stage1Output.objects.filter(project=project).exists()
    assert not Job.objects.filter(kind=Job.Kind.STAGE2).exists()
    job = Job.objects.get(pk=job_id)
    # Still the successor's: the old run neither finished nor failed it, nor moved its watermark.
    assert (job.status, job.owner_token, job.success_watermark) == (
        Job.Status.RUNNING,
        successor.token,
        0,
    )


def test_a_lost_claim_cannot_move_the_success_watermark(project: Project) -> None:
    job = jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, watermark=5)
    dead = jobs.claim(job.pk, lease_seconds=60)
    assert dead is not None
    expire_lease(job.pk)
    assert jobs.claim(job.pk, lease_seconds=60) is not None
    assert jobs.succeed(dead) is False
    assert jobs.fail(dead, "late", retry_delay_seconds=0) is None
    job.refresh_from_db()
    assert (job.status, job.success_watermark) == (Job.Status.RUNNING, 0)
    assert job.last_error.startswith("Interrupted: ")  # what the takeover says, not "late"


def test_a_repeated_extraction_stores_its_output_once(
    alice_client: APIClient, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions(alice_client, 1)
    (job_id,) = services.stage1_enqueue_due(project=project)
    real_succeed = jobs.succeed
    # The first run stores its output, then its job is taken over before it can finish.
    monkeypatch.setattr(jobs, "succeed", lambda claim, detail=None: False)
    services.stage1_run(job_id=job_id)
    first = Stage1Output.objects.get(project=project).raw_memory
    assert first
    monkeypatch.setattr(jobs, "succeed", real_succeed)
    expire_lease(job_id)
    assert services.stage1_run(job_id=job_id) == "done"  # the same records again
    assert Stage1Output.objects.get(project=project).raw_memory == first


# --- 2. a job that kills its worker -----------------------------------------------------------


def test_a_job_interrupted_on_every_attempt_ends_failed(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = sent(monkeypatch)
    job = jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, watermark=5, retries=3)
    for remaining in (2, 1, 0):
        assert jobs.claim(job.pk, lease_seconds=60) is not None  # then the worker is killed
        assert Job.objects.get(pk=job.pk).retries_remaining == remaining
        expire_lease(job.pk)
    assert jobs.claim(job.pk, lease_seconds=60) is None  # a redelivered message: no 4th try
    services.pipeline_scan_project(project=project)
    job.refresh_from_db()
    assert (job.status, job.interruptions, job.owner_token) == (Job.Status.FAILED, 3, "")
    assert job.last_error.startswith("Interrupted 3 times")
    assert job.pk not in [job_id for _, job_id in messages]


def test_a_failure_after_an_interruption_spends_one_attempt(project: Project) -> None:
    job = jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, watermark=5, retries=3)
    assert jobs.claim(job.pk, lease_seconds=60) is not None
    expire_lease(job.pk)  # killed
    claim = jobs.claim(job.pk, lease_seconds=60)
    assert claim is not None
    assert jobs.fail(claim, "LlmUnavailable: 503", retry_delay_seconds=0) == Job.Status.ERROR
    job.refresh_from_db()
    assert (job.retries_remaining, job.last_error) == (1, "LlmUnavailable: 503")
    claim = jobs.claim(job.pk, lease_seconds=60)
    assert claim is not None
    assert jobs.succeed(claim)
    job.refresh_from_db()
    assert (job.status, job.interruptions, job.success_watermark) == (Job.Status.DONE, 0, 5)


# --- 3. rebuilds whose message was lost --------------------------------------------------------


def test_the_scan_sends_a_lost_or_interrupted_rebuild_again(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = sent(monkeypatch)
    job = services.bank_rebuild_start(
        project=project, actor=Actor.for_system("cli"), confirm=project.slug
    )
    messages.clear()  # the broker was down: the send was dropped
    services.pipeline_scan_project(project=project)
    assert (tasks.rebuild_run, job.pk) in messages
    claim = jobs.claim(job.pk, lease_seconds=60)  # a worker took it, then was killed
    assert claim is not None
    messages.clear()
    services.pipeline_scan_project(project=project)
    assert (tasks.rebuild_run, job.pk) not in messages  # its lease is still live
    expire_lease(job.pk)
    services.pipeline_scan_project(project=project)
    assert (tasks.rebuild_run, job.pk) in messages


def test_a_rebuild_renews_its_lease_while_it_runs(
    alice_client: APIClient, project: Project, llm: FakeLlm
) -> None:
    knobs(alice_client, project, stage2_lease_seconds=5, stage2_heartbeat_seconds=1)
    sessions(alice_client, 1)
    job = services.bank_rebuild_start(
        project=project, actor=Actor.for_system("cli"), confirm=project.slug
    )
    gate = llm.hold('{"memories": []}')
    llm.reply(EMPTY_STAGE1_OUTPUT)
    llm.reply('{"memory_md": "# Memory", "memory_summary": "S.", "skills": []}')
    run = InThread(services.rebuild_run, job_id=job.pk)
    try:
        assert wait_for(lambda: len(llm.requests) == 1, 30)
        time.sleep(7)  # longer than the rebuild's lease
        job.refresh_from_db()
        assert job.lease_until is not None and job.lease_until > timezone.now()
    finally:
        gate.set()
    assert run.join() == "done"


# --- 4. a bank clear during an extraction ------------------------------------------------------


def test_a_bank_clear_during_an_extraction_is_not_refilled(
    alice_client: APIClient, project: Project, llm: FakeLlm
) -> None:
    sessions(alice_client, 1)
    (job_id,) = services.stage1_enqueue_due(project=project)
    gate = llm.hold(MEMORY)
    llm.reply(STAGE1_OUTPUT)
    run = InThread(services.stage1_run, job_id=job_id)
    try:
        assert wait_for(lambda: len(llm.requests) == 1, 30)
        services.bank_clear(project=project, actor=Actor.for_system("cli"), confirm=project.slug)
    finally:
        gate.set()
    assert run.join() == services.GONE
    assert not Memory.objects.filter(project=project, created_via="pipeline").exists()
    assert not Stage1Output.objects.filter(project=project).exists()
    assert not Job.objects.filter(project=project).exists()
    assert len(llm.requests) == 1  # it stopped at its first write


# --- 5. settings that would leave jobs stuck ---------------------------------------------------


@pytest.mark.parametrize(
    ("pipeline", "key"),
    [
        ({"retries": 0}, "pipeline.retries"),
        ({"stage1_lease_seconds": 0}, "pipeline.stage1_lease_seconds"),
        ({"stage2_lease_seconds": 1}, "pipeline.stage2_lease_seconds"),
        ({"stage2_heartbeat_seconds": 0}, "pipeline.stage2_heartbeat_seconds"),
        (
            {"stage2_lease_seconds": 60, "stage2_heartbeat_seconds": 60},
            "pipeline.stage2_heartbeat_seconds",
        ),
    ],
)
def test_settings_that_would_leave_jobs_stuck_are_refused(
    alice_client: APIClient, project: Project, pipeline: dict[str, int], key: str
) -> None:
    response = alice_client.patch(P, {"settings": {"pipeline": pipeline}}, format="json")
    assert response.status_code == 400
    assert key in response.content.decode()
    project.refresh_from_db()
    assert "pipeline" not in project.settings


def test_the_smallest_sensible_values_are_accepted(
    alice_client: APIClient, project: Project
) -> None:
    knobs(
        alice_client,
        project,
        retries=1,
        stage1_lease_seconds=5,
        stage2_lease_seconds=5,
        stage2_heartbeat_seconds=4,
    )
