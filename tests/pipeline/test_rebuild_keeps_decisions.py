"""A rebuild keeps people's decisions (issue 9): re-extracted memories are matched to the ones
they replace and keep their id, status, reason, edits and history; the rebuild says so."""

from __future__ import annotations

from rest_framework.test import APIClient

from accounts.actors import Actor
from memoryhub.memories.models import Memory
from memoryhub.memories.services import MemoryInput, memory_create
from memoryhub.pipeline import services
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.pipeline.test_pipeline_e2e import push_session

P = "/api/v1/projects/alpha/"
M = P + "memories/"


def extract(client: APIClient, project: Project) -> None:
    push_session(client, "mew-rebuild")
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "done"


def rebuild(client: APIClient, project: Project) -> dict[str, object]:
    response = client.post(P + "bank/rebuild/", {"confirm": "alpha"}, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(project=project, kind=Job.Kind.REBUILD)
    assert services.rebuild_run(job_id=job.pk) == "done"  # what the worker runs
    job.refresh_from_db()
    return job.detail


def derived(project: Project) -> list[Memory]:
    return list(Memory.objects.filter(project=project, created_via="pipeline").order_by("pk"))


def test_rebuild_keeps_archived_stale_and_edited_memories_with_their_ids_and_history(
    alice_client: APIClient, project: Project
) -> None:
    extract(alice_client, project)
    memories = derived(project)
    assert len(memories) >= 4, [m.content for m in memories]
    archived, stale, edited, untouched = (str(m.public_id) for m in memories[:4])
    assert alice_client.post(f"{M}{archived}/archive/", {}, format="json").status_code == 200
    response = alice_client.post(f"{M}{stale}/stale/", {"reason": "we moved on"}, format="json")
    assert response.status_code == 200
    response = alice_client.patch(f"{M}{edited}/", {"content": "Edited by alice."}, format="json")
    assert response.status_code == 200
    history = {
        pid: alice_client.get(f"{M}{pid}/history/").json() for pid in (archived, stale, edited)
    }
    before = {(m.kind, m.content) for m in derived(project)}

    detail = rebuild(alice_client, project)

    assert detail["memories_kept"] == len(memories)  # every one found again, same id
    assert detail["memories_removed"] == 0
    for pid, status in ((archived, "archived"), (stale, "stale"), (edited, "active")):
        response = alice_client.get(f"{M}{pid}/")
        assert response.status_code == 200, pid  # the same id, not a new one
        assert response.json()["status"] == status
        assert alice_client.get(f"{M}{pid}/history/").json() == history[pid]
    assert alice_client.get(f"{M}{stale}/").json()["status_reason"] == "we moved on"
    assert alice_client.get(f"{M}{edited}/").json()["content"] == "Edited by alice."
    after = derived(project)
    # Nothing came back as a second, active copy; the untouched memory was extracted again.
    assert {(m.kind, m.content) for m in after} == before
    assert not any(m.status == "active" and str(m.public_id) in (archived, stale) for m in after)
    assert untouched in {str(m.public_id) for m in after}
    assert {m.pk for m in after} == {m.pk for m in memories}


def test_rebuild_removes_what_the_sessions_no_longer_yield_unless_a_person_decided(
    alice_client: APIClient, project: Project
) -> None:
    extract(alice_client, project)
    pipeline = Actor.for_system("pipeline")
    gone, decided = (
        memory_create(
            project=project,
            actor=pipeline,
            data=MemoryInput(content=text, kind="fact", source_session="deleted-session"),
        )
        for text in ("An old extractor's mistake.", "Kept because alice approved of it.")
    )
    response = alice_client.patch(f"{M}{decided.public_id}/", {"importance": 3}, format="json")
    assert response.status_code == 200

    detail = rebuild(alice_client, project)

    assert detail["memories_removed"] == 1 and detail["memories_kept_by_decision"] == 1
    assert not Memory.objects.filter(pk=gone.pk).exists()
    assert Memory.objects.get(pk=decided.pk).importance == 3


def test_bank_clear_reports_memories_cleared_not_cascaded_rows(
    alice_client: APIClient, project: Project
) -> None:
    extract(alice_client, project)
    n = len(derived(project))
    response = alice_client.post(P + "bank/clear/", {"confirm": "alpha"}, format="json")
    assert response.status_code == 200, response.content
    # Each memory took its events and index postings with it; only memories are counted.
    assert response.json()["deleted"]["memories"] == n
    assert derived(project) == []
