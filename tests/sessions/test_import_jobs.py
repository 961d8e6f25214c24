"""Large transcript imports as jobs: above SESSION_IMPORT_SYNC_MAX_BYTES the upload is staged in
PostgreSQL and a real Celery worker imports it; the client polls the job."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.pipeline import jobs, session_imports
from memoryhub.pipeline.models import Job, StagedChunk
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.worker import Worker, wait_for

S = "/api/v1/projects/alpha/sessions/"
THRESHOLD = 64 * 1024  # tests send ~2.5 MiB: three staged chunks, lines split across them


def mewcode_lines(records: int) -> list[bytes]:
    """A MewCode transcript with varied line lengths (so chunk edges fall inside lines)."""
    lines = []
    for i in range(records):
        if i % 2 == 0:
            record: dict[str, Any] = {
                "type": "user",
                "content": f"question {i}: " + "why " * (i % 97),
            }
        else:
            record = {
                "type": "assistant",
                "content": [{"type": "text", "text": f"answer {i} " + "because " * (i % 211)}],
            }
        record["timestamp"] = f"2026-03-14T10:{i // 3600 % 60:02d}:{i % 60:02d}"
        lines.append(json.dumps(record).encode() + b"\n")
    return lines


def big_transcript(bad_line: int | None = None) -> bytes:
    lines = mewcode_lines(5000)
    if bad_line is not None:
        lines[bad_line - 1] = b'{"type": "user", "content": "cut off\n'
    body = b"".join(lines)
    assert len(body) > 2 * session_imports.CHUNK_BYTES
    return body


def poll(client: APIClient, location: str, timeout: float = 120) -> dict[str, Any]:
    """GET the job until it is finished; its last answer."""
    seen: dict[str, Any] = {}

    def finished() -> bool:
        response = client.get(location)
        assert response.status_code == 200, response.content
        seen.update(response.json())
        return seen["status"] in ("succeeded", "failed")

    assert wait_for(finished, timeout=timeout), seen
    return seen


def test_a_big_import_runs_as_a_job_and_matches_the_synchronous_import(
    celery_worker: Worker, alice_client: APIClient, settings: Any
) -> None:
    body = big_transcript()
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = 10 * len(body)
    direct = alice_client.post(
        S + "import/?external_id=direct", body, content_type="application/x-ndjson"
    )
    assert direct.status_code == 201, direct.content

    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    celery_worker.start()
    queued = alice_client.post(
        S + "import/?external_id=queued",
        {"transcript": SimpleUploadedFile("big.jsonl", body)},
        format="multipart",
    )
    assert queued.status_code == 202, queued.content
    job = queued.json()
    assert job["status"] in ("queued", "running") and job["session"] is None
    assert job["bytes"] == len(body)
    location = queued["Location"]
    assert location.endswith(f"{S}import/jobs/{job['id']}/")

    done = poll(alice_client, location)
    assert done["status"] == "succeeded", done
    assert done["error"] is None
    assert done["session"]["external_id"] == "queued"
    assert done["session"]["record_count"] == 5000

    def records(external_id: str) -> list[tuple[str, str, Any]]:
        rows = SessionRecord.objects.filter(session__external_id=external_id).order_by("index")
        return [(r.type, json.dumps(r.content), r.metadata.get("line")) for r in rows]

    assert records("queued") == records("direct")
    assert not StagedChunk.objects.exists()  # removed with the job's success
    assert AuditEvent.objects.filter(verb="session.import_queued").count() == 1
    assert AuditEvent.objects.filter(verb="session.imported").count() == 2

    # Idempotent: the same job sent again (a redelivered message) imports nothing more.
    assert session_imports.import_run(job_id=Job.objects.get(key=job["id"]).pk) == "skipped"
    assert AgentSession.objects.filter(external_id="queued").count() == 1


def test_a_malformed_line_in_a_big_import_fails_the_job_with_its_number(
    celery_worker: Worker, alice: User, alice_client: APIClient, settings: Any
) -> None:
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    celery_worker.start()
    body = big_transcript(bad_line=4321)
    queued = alice_client.post(S + "import/", body, content_type="application/x-ndjson")
    assert queued.status_code == 202, queued.content
    assert StagedChunk.objects.count() == 3  # staged, committed, waiting for the worker

    failed = poll(alice_client, queued["Location"])
    assert failed["status"] == "failed", failed
    assert failed["session"] is None
    error = failed["error"]
    assert error["code"] == "validation_error"
    assert error["details"]["line"] == 4321
    assert "line 4321" in error["message"]
    # All or nothing: the 4,320 good lines before it were not kept; no retry for bad input.
    assert not AgentSession.objects.exists() and not SessionRecord.objects.exists()
    assert not StagedChunk.objects.exists()
    job = Job.objects.get(key=failed["id"])
    assert job.status == Job.Status.FAILED and job.retries_remaining == 0

    # Visible where the project's jobs are: the diagnose API and the bank page.
    diagnose = alice_client.get("/api/v1/projects/alpha/bank/diagnose/").json()
    assert [(j["kind"], j["status"]) for j in diagnose["failing"]] == [("import", "failed")]
    assert "line 4321" in diagnose["failing"][0]["last_error"]
    browser = Client()
    browser.force_login(alice)
    page = browser.get("/p/alpha/bank/").content.decode()
    assert "line 4321" in page


def test_a_small_upload_is_still_imported_in_the_request(
    alice_client: APIClient, settings: Any
) -> None:
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    body = b"".join(mewcode_lines(40))
    assert len(body) < THRESHOLD
    response = alice_client.post(S + "import/", body, content_type="application/x-ndjson")
    assert response.status_code == 201, response.content
    assert response.json()["record_count"] == 40
    # No import job; only the extraction of what was imported.
    assert list(Job.objects.values_list("kind", flat=True)) == [Job.Kind.STAGE1]


def test_an_upload_over_the_limit_stages_nothing(alice_client: APIClient, settings: Any) -> None:
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    settings.SESSION_IMPORT_MAX_BYTES = session_imports.CHUNK_BYTES + 1000
    response = alice_client.post(
        S + "import/",
        {"transcript": SimpleUploadedFile("big.jsonl", big_transcript())},
        format="multipart",
    )
    assert response.status_code == 413, response.content
    assert response.json()["error"]["details"]["limit_bytes"] == settings.SESSION_IMPORT_MAX_BYTES
    assert not Job.objects.exists() and not StagedChunk.objects.exists()
    assert not AuditEvent.objects.filter(verb="session.import_queued").exists()


def test_an_existing_external_id_is_refused_before_staging(
    alice_client: APIClient, settings: Any
) -> None:
    assert alice_client.post(S, {"external_id": "taken"}, format="json").status_code == 201
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    response = alice_client.post(
        S + "import/?external_id=taken", big_transcript(), content_type="application/x-ndjson"
    )
    assert response.status_code == 409, response.content
    assert not StagedChunk.objects.exists()


def test_only_the_projects_members_can_poll_its_import_jobs(
    alice_client: APIClient,
    bob_client: APIClient,
    charlie_client: APIClient,
    charlies_project: Project,
    settings: Any,
) -> None:
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    queued = alice_client.post(S + "import/", big_transcript(), content_type="application/x-ndjson")
    assert queued.status_code == 202, queued.content
    job_id = queued.json()["id"]
    url = f"{S}import/jobs/{job_id}/"
    assert bob_client.get(url).status_code == 200  # a member of alpha
    # charlie is an outsider: the same 404 as a project that does not exist.
    outsider = charlie_client.get(url)
    missing = charlie_client.get(url.replace("/alpha/", "/no-such-project/"))
    assert outsider.status_code == missing.status_code == 404
    assert outsider.content == missing.content
    # Nor under his own project's name: the job belongs to alpha.
    own = charlie_client.get(url.replace("/alpha/", "/charlie-lab/"))
    assert own.status_code == 404


def test_a_leased_import_is_left_to_its_owner(alice_client: APIClient, settings: Any) -> None:
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = THRESHOLD
    queued = alice_client.post(S + "import/", big_transcript(), content_type="application/x-ndjson")
    job = Job.objects.get(key=queued.json()["id"])
    claim = jobs.claim(job.pk, lease_seconds=60)  # another worker has it
    assert claim is not None
    assert session_imports.import_run(job_id=job.pk) == "skipped"
    assert not AgentSession.objects.exists()
    assert alice_client.get(queued["Location"]).json()["status"] == "running"
