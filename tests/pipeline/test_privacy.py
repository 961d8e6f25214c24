"""A person's user-scope memories reach only that person (issue 9): not through the shared
consolidation artifacts (MEMORY.md, memory_summary.md, memory:// URIs), not through another
member's payloads, not even as a count in bank statistics."""

from __future__ import annotations

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services as memory_services
from memoryhub.memories.models import Memory
from memoryhub.pipeline import services
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.pipeline.test_pipeline_e2e import push_session
from tests.recall.memories import add_memory

P = "/api/v1/projects/alpha/"
BOBS_SECRET_HABIT = "Bob prefers tabs and hates pairing sessions on Fridays."
BOBS_CORRECTION = "Bob asked to stop summarising his diffs."


def consolidate_from_a_session(alice_client: APIClient, project: Project) -> None:
    push_session(alice_client, "mew-privacy")
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "done"
    services.stage2_build(project=project)


def test_consolidation_artifacts_hold_project_scope_memories_only(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    add_memory(bob_client, BOBS_SECRET_HABIT, "user", importance=3)
    add_memory(bob_client, BOBS_CORRECTION, "feedback", importance=3)
    add_memory(alice_client, "We deploy with fly.io from the main branch.", "fact", importance=3)
    consolidate_from_a_session(alice_client, project)
    for path in ("MEMORY.md", "memory_summary.md"):
        response = alice_client.get(P + "memory/", {"uri": f"memory://root/{path}"})
        assert response.status_code == 200, response.content
        body = response.content.decode()
        assert "fly.io" in body
        assert "Bob prefers tabs" not in body and "summarising his diffs" not in body
        # alice's own preference from her session is no shared knowledge either
        assert "type hints" not in body
        listed = alice_client.get(P + f"artifacts/{path}").json()["content"]
        assert "Bob prefers tabs" not in listed


def test_payloads_carry_user_scope_memories_to_their_owner_only(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    add_memory(bob_client, BOBS_SECRET_HABIT, "user", importance=3)
    add_memory(alice_client, "Use uv for every Python environment.", "lesson", importance=3)
    consolidate_from_a_session(alice_client, project)
    for profile in ("mewcode", "omp", "meow", "default"):
        text = alice_client.get(P + "injection/", {"profile": profile, "format": "text"})
        assert "Bob prefers tabs" not in text.content.decode(), profile
    for profile in ("mewcode", "meow", "default"):  # the profiles with a section about the user
        text = bob_client.get(P + "injection/", {"profile": profile, "format": "text"})
        assert BOBS_SECRET_HABIT in text.content.decode(), profile


def test_bank_stats_count_only_what_the_caller_may_see(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    add_memory(bob_client, BOBS_SECRET_HABIT, "user")
    add_memory(bob_client, BOBS_CORRECTION, "feedback")
    add_memory(alice_client, "We deploy with fly.io.", "fact")
    alice_stats = alice_client.get(P + "bank/stats/").json()["memories"]
    bob_stats = bob_client.get(P + "bank/stats/").json()["memories"]
    assert alice_stats["total"] == 1 and alice_stats["by_kind"] == {"fact": 1}
    assert bob_stats["total"] == 3
    assert bob_stats["by_kind"] == {"fact": 1, "user": 1, "feedback": 1}


def _extract_all(project: Project) -> None:
    for job_id in services.stage1_enqueue_due(project=project):
        assert services.stage1_run(job_id=job_id) == "done"


def _preferences(owner: User) -> list[Memory]:
    return list(Memory.objects.filter(kind="user", owner=owner, created_via="pipeline"))


def test_each_persons_extraction_keeps_their_own_memories(
    alice: User, bob: User, alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    # alice says it first; her memory is archived. bob says the same in his own session.
    push_session(alice_client, "alice-s")
    _extract_all(project)
    (hers,) = _preferences(alice)
    archived = alice_client.post(f"{P}memories/{hers.public_id}/archive/", {}, format="json")
    assert archived.status_code == 200
    push_session(bob_client, "bob-s")
    # A memory of alice's citing bob's session and records is no extraction of bob's. The API
    # refuses such a citation (403) since; written by the service, as an import would.
    decoy = memory_services.memory_create(
        project=project,
        actor=Actor(user=alice),
        data=memory_services.MemoryInput(
            content="alice's own words about bob's session",
            kind="user",
            source_session="bob-s",
            source_record_start=0,
            source_record_end=0,
        ),
    ).public_id
    _extract_all(project)
    (his,) = _preferences(bob)
    assert his.content == hers.content and his.status == "active"
    job = Job.objects.get(session__external_id="bob-s", kind=Job.Kind.STAGE1)
    assert job.detail["memory_ids"] and job.detail["kept"] == 0
    assert hers.pk not in job.detail["memory_ids"]
    assert Memory.objects.get(public_id=decoy).pk not in job.detail["memory_ids"]
