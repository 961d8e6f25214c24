"""Every documented pipeline knob takes effect (issue 9): each test changes one setting and
shows the pipeline behaving differently. Settings are saved through the API, so they are also
accepted by the check on save."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from memoryhub.pipeline import services
from memoryhub.pipeline.models import Job, Stage1Output
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from tests.fake_llm import FakeLlm
from tests.pipeline.test_pipeline_e2e import TRANSCRIPT, push_session
from tests.recall.memories import add_memory
from tests.worker import wait_for

P = "/api/v1/projects/alpha/"
S = P + "sessions/"
EMPTY_STAGE1_OUTPUT = '{"rollout_summary": "", "rollout_slug": null, "raw_memory": ""}'


def knobs(client: APIClient, project: Project, **pipeline: Any) -> None:
    response = client.patch(P, {"settings": {"pipeline": pipeline}}, format="json")
    assert response.status_code == 200, response.content
    project.refresh_from_db()


def sessions(client: APIClient, n: int, *, ended: bool = True) -> list[str]:
    ids = [f"knob-{i}" for i in range(n)]
    for external_id in ids:
        if ended:
            push_session(client, external_id)
        else:
            assert client.post(S, {"external_id": external_id}, format="json").status_code == 201
            response = client.post(f"{S}{external_id}/records/", TRANSCRIPT, format="json")
            assert response.status_code == 201
    return ids


def test_max_rollouts_per_scan(alice_client: APIClient, project: Project) -> None:
    sessions(alice_client, 3)
    assert len(services.stage1_enqueue_due(project=project)) == 3
    knobs(alice_client, project, stage1_max_sessions_per_scan=2)
    assert len(services.stage1_enqueue_due(project=project)) == 2


def test_stage1_concurrency(alice_client: APIClient, project: Project) -> None:
    sessions(alice_client, 3)
    knobs(alice_client, project, stage1_concurrency=2)
    due = services.stage1_enqueue_due(project=project)
    assert len(due) == 2
    # One extraction holds a live lease: only one more may start.
    Job.objects.filter(pk=due[0]).update(
        status=Job.Status.RUNNING, lease_until=timezone.now() + timedelta(minutes=5)
    )
    assert len(services.stage1_enqueue_due(project=project)) == 1
    knobs(alice_client, project, stage1_concurrency=1)
    assert services.stage1_enqueue_due(project=project) == []


def test_max_rollout_age_days(alice_client: APIClient, project: Project) -> None:
    sessions(alice_client, 1)
    AgentSession.objects.update(last_active_at=timezone.now() - timedelta(days=10))
    assert len(services.stage1_enqueue_due(project=project)) == 1  # default: 30 days
    Job.objects.all().delete()
    knobs(alice_client, project, stage1_max_session_age_days=5)
    assert services.stage1_enqueue_due(project=project) == []


def test_min_rollout_idle_hours(alice_client: APIClient, project: Project) -> None:
    sessions(alice_client, 1, ended=False)
    AgentSession.objects.update(last_active_at=timezone.now() - timedelta(hours=2))
    assert services.stage1_enqueue_due(project=project) == []  # default: idle 12 hours
    knobs(alice_client, project, stage1_min_session_idle_hours=1)
    assert len(services.stage1_enqueue_due(project=project)) == 1


def test_thread_scan_limit(alice_client: APIClient, project: Project) -> None:
    sessions(alice_client, 3)
    knobs(alice_client, project, session_scan_limit=1)
    services.stage1_enqueue_due(project=project)
    assert Job.objects.filter(kind=Job.Kind.STAGE1).count() == 1


def test_max_raw_memories_for_global(alice_client: APIClient, project: Project) -> None:
    for external_id in sessions(alice_client, 3):
        session = AgentSession.objects.get(external_id=external_id)
        Stage1Output.objects.create(
            session=session, project=project, raw_memory=f"raw of {external_id}"
        )
    add_memory(alice_client, "We deploy with fly.io.", "fact")
    assert services.stage2_build(project=project)["inputs"] == 3
    knobs(alice_client, project, stage2_max_raw_memories=1)
    assert services.stage2_build(project=project)["inputs"] == 1


def test_retries_and_stage1_retry_delay_seconds(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)  # every call fails: nothing is scripted
    sessions(alice_client, 1)
    knobs(alice_client, project, retries=2, stage1_retry_delay_seconds=600)
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "error"
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.ERROR and job.retries_remaining == 1
    assert job.retry_at is not None and job.finished_at is not None
    assert job.retry_at - job.finished_at == timedelta(seconds=600)
    Job.objects.filter(pk=job_id).update(retry_at=timezone.now())  # the delay has passed
    assert services.stage1_run(job_id=job_id) == "error"
    assert Job.objects.get(pk=job_id).status == Job.Status.FAILED  # 2 tries, not 3


def test_stage2_retry_delay_seconds(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)
    knobs(alice_client, project, stage2_retry_delay_seconds=900)
    session = AgentSession.objects.get(external_id=sessions(alice_client, 1)[0])
    Stage1Output.objects.create(session=session, project=project, raw_memory="raw")
    job = services.stage2_mark_dirty(project=project)
    assert services.stage2_run(job_id=job.pk) == "error"
    job.refresh_from_db()
    assert job.retry_at is not None and job.finished_at is not None
    assert job.retry_at - job.finished_at == timedelta(seconds=900)


class InThread:
    """A job run on its own thread and connection, as a worker runs it, so that the test can
    read the job's row (committed) while the run waits on its held LLM call."""

    def __init__(self, run: Callable[..., str], **kwargs: Any) -> None:
        self.outcome: str | None = None

        def target() -> None:
            try:
                self.outcome = run(**kwargs)
            finally:
                connection.close()

        self.thread = threading.Thread(target=target)
        self.thread.start()

    def join(self) -> str | None:
        self.thread.join(timeout=60)
        return self.outcome


@pytest.fixture
def threaded_llm(transactional_db: None, fake_llm: FakeLlm, settings: Any) -> FakeLlm:
    """The fake LLM, no retries, for runs on their own threads (which see committed rows)."""
    fake_llm.configure(settings, max_retries=0)
    return fake_llm


def lease_of(job_id: int) -> timedelta:
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.RUNNING and job.lease_until and job.heartbeat_at
    return job.lease_until - job.heartbeat_at


def test_stage1_lease_seconds(
    alice_client: APIClient, project: Project, threaded_llm: FakeLlm
) -> None:
    fake_llm = threaded_llm
    knobs(alice_client, project, stage1_lease_seconds=900)  # default 120
    sessions(alice_client, 1)
    (job_id,) = services.stage1_enqueue_due(project=project)
    gate = fake_llm.hold('{"memories": []}')
    fake_llm.reply(EMPTY_STAGE1_OUTPUT)
    run = InThread(services.stage1_run, job_id=job_id)
    try:
        assert wait_for(lambda: len(fake_llm.requests) == 1, 30)  # the run holds the job
        assert lease_of(job_id) == timedelta(seconds=900)
        # The lease is what keeps a second worker out until it runs out (moved, not waited for).
        assert services.stage1_enqueue_due(project=project) == []
        Job.objects.filter(pk=job_id).update(lease_until=timezone.now() - timedelta(seconds=1))
        assert services.stage1_enqueue_due(project=project) == [job_id]
        Job.objects.filter(pk=job_id).update(lease_until=timezone.now() + timedelta(seconds=900))
    finally:
        gate.set()
    assert run.join() == "done"


def test_stage2_lease_and_heartbeat_seconds(
    alice_client: APIClient, project: Project, threaded_llm: FakeLlm
) -> None:
    fake_llm = threaded_llm
    knobs(alice_client, project, stage2_lease_seconds=90, stage2_heartbeat_seconds=1)
    session = AgentSession.objects.get(external_id=sessions(alice_client, 1)[0])
    Stage1Output.objects.create(session=session, project=project, raw_memory="raw")
    job = services.stage2_mark_dirty(project=project)
    gate = fake_llm.hold('{"memory_md": "# Memory", "memory_summary": "S.", "skills": []}')
    run = InThread(services.stage2_run, job_id=job.pk)
    try:
        assert wait_for(lambda: len(fake_llm.requests) == 1, 30)
        assert lease_of(job.pk) == timedelta(seconds=90)  # default 180
        started = Job.objects.get(pk=job.pk).started_at
        # Every heartbeat (each second here, 30 by default) renews the lease from its beat.
        assert wait_for(lambda: Job.objects.get(pk=job.pk).heartbeat_at != started, 30)
        assert lease_of(job.pk) == timedelta(seconds=90)
    finally:
        gate.set()
    assert run.join() == "done"


def stage1_requests(
    client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any, **pipeline: Any
) -> tuple[Any, Any]:
    """The (typed extraction, rollout) requests stage 1 sends for a long session."""
    fake_llm.configure(settings, max_retries=0)
    if pipeline:
        knobs(client, project, **pipeline)
    external_id = f"long-{len(fake_llm.requests)}"
    assert client.post(S, {"external_id": external_id}, format="json").status_code == 201
    long = [{"type": "user", "content": f"Step {i}: " + "lorem ipsum " * 200} for i in range(30)]
    assert client.post(f"{S}{external_id}/records/", long, format="json").status_code == 201
    assert client.post(f"{S}{external_id}/end/").status_code == 200
    first = len(fake_llm.requests)
    fake_llm.reply('{"memories": []}')
    fake_llm.reply(EMPTY_STAGE1_OUTPUT)
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "done"
    typed, rollout = fake_llm.requests[first : first + 2]
    return typed, rollout


def _user_chars(request: Any) -> int:
    return len(request.messages[-1]["content"])


def test_stage1_input_token_limit(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    _, default = stage1_requests(alice_client, project, fake_llm, settings)
    _, small = stage1_requests(
        alice_client, project, fake_llm, settings, stage1_input_token_limit=100
    )
    assert _user_chars(small) < _user_chars(default) - 10_000
    assert "...[truncated]..." in small.messages[-1]["content"]


def test_rollout_payload_percent_and_context_window(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    _, wide = stage1_requests(
        alice_client, project, fake_llm, settings, context_window=2_000, stage1_payload_percent=1
    )
    _, narrow = stage1_requests(
        alice_client,
        project,
        fake_llm,
        settings,
        context_window=2_000,
        stage1_payload_percent=0.1,
    )
    # 2,000 vs 200 tokens of session JSON at 4 characters a token.
    assert _user_chars(wide) - _user_chars(narrow) > 6_000
    assert wide.body["max_tokens"] == narrow.body["max_tokens"] == 1_024  # 0.2 × 2,000 → floor


def test_fallback_token_limit(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    typed_default, _ = stage1_requests(alice_client, project, fake_llm, settings)
    typed_small, rollout = stage1_requests(
        alice_client, project, fake_llm, settings, fallback_token_limit=500, context_window=0
    )
    # The typed extraction's session JSON is cut to the fallback limit (16,000 → 500 tokens).
    assert _user_chars(typed_small) < _user_chars(typed_default) - 20_000
    # With no known window the rollout counts one of fallback_token_limit tokens.
    assert rollout.body["max_tokens"] == 1_024
