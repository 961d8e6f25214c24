"""POST …/sessions/{id}/extract/: extract a session now, with a real worker."""

from __future__ import annotations

from rest_framework.test import APIClient

from memoryhub.core.models import AuditEvent
from memoryhub.memories.models import Memory
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.pipeline.test_pipeline_e2e import TRANSCRIPT, S
from tests.worker import Worker, wait_for


def _active_session(client: APIClient, external_id: str) -> None:
    """A session still active (not idle, not ended): beat's scan would not extract it yet."""
    assert client.post(S, {"external_id": external_id}, format="json").status_code == 201
    response = client.post(f"{S}{external_id}/records/", TRANSCRIPT, format="json")
    assert response.status_code == 201, response.content


def test_it_extracts_an_active_session_now(
    celery_worker: Worker, alice_client: APIClient, project: Project
) -> None:
    _active_session(alice_client, "live-1")
    celery_worker.start()
    response = alice_client.post(f"{S}live-1/extract/")
    assert response.status_code == 202, response.content
    assert response.json()["kind"] == "stage1"
    assert wait_for(
        lambda: Memory.objects.filter(project=project, source_session="live-1").exists(), 90
    ), list(Job.objects.values("kind", "status", "last_error"))
    assert AuditEvent.objects.filter(verb="session.extract_requested").count() == 1
    assert wait_for(lambda: Job.objects.get(kind="stage1").success_watermark == len(TRANSCRIPT), 30)
    again = alice_client.post(f"{S}live-1/extract/")
    assert again.status_code == 400
    assert "nothing new" in again.json()["error"]["message"]


def test_it_refuses_others_sessions_to_members_and_hides_from_outsiders(
    alice_client: APIClient, bob_client: APIClient, charlie_client: APIClient, project: Project
) -> None:
    _active_session(alice_client, "alices")
    assert bob_client.post(f"{S}alices/extract/").status_code == 403  # not the author
    assert charlie_client.post(f"{S}alices/extract/").status_code == 404
    assert alice_client.post(f"{S}missing/extract/").status_code == 404
    assert not Job.objects.exists()
