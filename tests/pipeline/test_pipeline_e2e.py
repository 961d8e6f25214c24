"""The pipeline end to end with a real worker process: a session goes in, memories and
artifacts come out, and a rebuild reproduces them."""

from __future__ import annotations

import threading
from typing import Any

from django.db import connection
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.memories.models import BankArtifact, Memory
from memoryhub.pipeline import dispatch, jobs, services, tasks
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.worker import Worker, wait_for

S = "/api/v1/projects/alpha/sessions/"

TRANSCRIPT: list[dict[str, Any]] = [
    {
        "type": "user",
        "content": "I prefer type hints on every function. We use PostgreSQL 15 "
        "for the main database.",
    },
    {
        "type": "assistant",
        "content": [
            {"type": "text", "text": "Let me run the tests."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x"}},
        ],
    },
    {"type": "tool_result", "tool_use_id": "t1", "content": "42 passed in 3.1s"},
    {"type": "assistant", "content": "All 42 tests pass."},
    {"type": "user", "content": "Never force-push to main."},
    {"type": "assistant", "content": "Understood."},
]


def push_session(client: APIClient, external_id: str) -> None:
    assert client.post(S, {"external_id": external_id}, format="json").status_code == 201
    response = client.post(f"{S}{external_id}/records/", TRANSCRIPT, format="json")
    assert response.status_code == 201, response.content
    assert client.post(f"{S}{external_id}/end/").status_code == 200


def derived(project: Project) -> list[tuple[str, str]]:
    return sorted(
        Memory.objects.filter(project=project, created_via="pipeline").values_list(
            "kind", "content"
        )
    )


def artifacts(project: Project) -> dict[str, str]:
    return dict(BankArtifact.objects.filter(project=project).values_list("path", "content"))


def test_a_session_becomes_memories_and_artifacts_and_a_rebuild_reproduces_them(
    celery_worker: Worker,
    alice_client: APIClient,
    project: Project,
) -> None:
    push_session(alice_client, "mew-1")
    celery_worker.start()
    sent = dispatch.scan_project(project)  # what beat does every PIPELINE_SCAN_SECONDS
    assert sent["stage1"] == 1
    assert wait_for(lambda: "MEMORY.md" in artifacts(project), timeout=90), Job.objects.values(
        "kind", "status", "last_error"
    )
    memories = list(Memory.objects.filter(project=project, created_via="pipeline"))
    assert memories and all(m.status == Memory.Status.ACTIVE for m in memories)
    assert all(m.source_session == "mew-1" and m.source_record_start is not None for m in memories)
    contents = " ".join(m.content for m in memories).lower()
    assert "force-push" in contents
    before = (derived(project), artifacts(project))

    response = alice_client.post(
        "/api/v1/projects/alpha/bank/rebuild/", {"confirm": "alpha"}, format="json"
    )
    assert response.status_code == 202, response.content
    assert wait_for(
        lambda: alice_client.get("/api/v1/projects/alpha/bank/rebuild/").json()["status"] == "done",
        timeout=120,
    )
    progress = alice_client.get("/api/v1/projects/alpha/bank/rebuild/").json()
    assert progress["progress"] == 100 and progress["detail"]["sessions"] == 1
    assert (derived(project), artifacts(project)) == before


def test_review_required_makes_pipeline_output_proposed(
    alice_client: APIClient,
    project: Project,
    alice: User,
) -> None:
    project.settings = {"review_required": True}
    project.save(update_fields=["settings"])
    push_session(alice_client, "mew-2")
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "done"
    statuses = set(Memory.objects.filter(project=project).values_list("status", flat=True))
    assert statuses == {Memory.Status.PROPOSED}


def test_the_same_session_extracted_twice_makes_no_duplicates(
    alice_client: APIClient,
    project: Project,
) -> None:
    push_session(alice_client, "mew-3")
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "done"
    first = derived(project)
    Job.objects.filter(pk=job_id).update(success_watermark=0)  # as if the output was lost
    assert services.stage1_run(job_id=job_id) == "done"
    assert derived(project) == first


def test_two_consolidations_of_one_project_run_once(
    transactional_db: None,
    alice_client: APIClient,
    project: Project,
) -> None:
    push_session(alice_client, "mew-4")
    (job_id,) = services.stage1_enqueue_due(project=project)
    services.stage1_run(job_id=job_id)
    consolidation = services.stage2_due(project=project)
    assert consolidation is not None
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        barrier.wait()
        try:
            outcomes.append(services.stage2_run(job_id=consolidation))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["done", "skipped"]
    assert BankArtifact.objects.filter(project=project, path="MEMORY.md").get().version == 1


def test_a_killed_worker_loses_its_lease_and_another_finishes_once(
    celery_worker: Worker,
    alice_client: APIClient,
    project: Project,
    fake_llm: Any,
    settings: Any,
) -> None:
    """A worker dies in the middle of an extraction (its LLM call hangs); once the lease
    expires, a second worker claims the job and finishes it exactly once."""
    project.settings = {"pipeline": {"stage1_lease_seconds": 5}}
    project.save(update_fields=["settings"])
    push_session(alice_client, "mew-5")
    llm_env = {
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": fake_llm.url,
        "LLM_MODEL": "fake",
        "LLM_API_KEY": "test-key",
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT_SECONDS": "60",
    }
    celery_worker.env |= llm_env
    fake_llm.delay(60, '{"memories": []}')  # the first worker's call never returns in time
    first = celery_worker.start()
    dispatch.scan_project(project)
    (job,) = Job.objects.filter(kind=Job.Kind.STAGE1)
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.RUNNING)
    assert wait_for(lambda: len(fake_llm.requests) == 1)
    celery_worker.kill(first)
    memory = (
        '{"memories": [{"kind": "rule", "content": "Never force-push to main.", '
        '"title": "No force-push", "keywords": ["git", "force-push", "main", "branch", '
        '"history", "push", "rewrite", "protect"], "importance": 3, '
        '"record_start": 0, "record_end": 5}]}'
    )
    fake_llm.reply(memory)
    fake_llm.reply(
        '{"rollout_summary": "Set up tests.", "rollout_slug": "tests", '
        '"raw_memory": "Never force-push to main."}'
    )
    celery_worker.start()
    assert wait_for(lambda: Job.objects.filter(jobs.claimable(), pk=job.pk).exists(), timeout=30)
    dispatch.scan_project(project)  # beat's next scan finds the expired lease
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.DONE, timeout=60), (
        Job.objects.values("status", "last_error")
    )
    assert list(Memory.objects.filter(project=project).values_list("content", flat=True)) == [
        "Never force-push to main."
    ]


def test_extractions_that_finish_during_a_consolidation_get_another_one_without_beat(
    celery_worker: Worker,
    alice_client: APIClient,
    project: Project,
    fake_llm: Any,
) -> None:
    """A second session is extracted while the worker's consolidation waits on its LLM call:
    that run cannot see the new output, so the worker consolidates again as soon as it is done
    (no beat scan in this test)."""
    push_session(alice_client, "mew-6")
    (first,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=first) == "done"  # offline, in this process
    consolidation = services.stage2_due(project=project)
    assert consolidation is not None
    answer = '{"memory_md": "# Memory\\n%s", "memory_summary": "Summary.", "skills": []}'
    fake_llm.delay(3, answer % "first run")
    fake_llm.reply(answer % "second run")
    celery_worker.env |= {
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": fake_llm.url,
        "LLM_MODEL": "fake",
        "LLM_API_KEY": "test-key",
        "LLM_MAX_RETRIES": "0",
    }
    celery_worker.start()
    dispatch.send(tasks.stage2_run, consolidation)
    assert wait_for(lambda: len(fake_llm.requests) == 1)  # the worker is consolidating
    push_session(alice_client, "mew-7")
    (second,) = services.stage1_enqueue_due(project=project)
    # Marks the bank dirty again and sends a consolidation on commit, which is skipped: the
    # worker's run holds the lease (the service sends it now; callers no longer do).
    assert services.stage1_run(job_id=second) == "done"

    def settled() -> bool:
        job = Job.objects.get(pk=consolidation)
        return job.status == Job.Status.DONE and job.success_watermark == job.input_watermark

    assert wait_for(settled, timeout=60), Job.objects.values("kind", "status", "last_error")
    assert len(fake_llm.requests) == 2
    assert artifacts(project)["MEMORY.md"].endswith("second run")
