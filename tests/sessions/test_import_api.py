from __future__ import annotations

from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Max
from rest_framework.test import APIClient

from memoryhub.core.models import AuditEvent
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project

S = "/api/v1/projects/alpha/sessions/"
FIXTURES = Path(__file__).parent / "fixtures"
MEW = "session_20260314_101502_k3p9"


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FIXTURES / name).read_bytes())


def test_it_imports_a_mewcode_session_with_its_meta(alice_client: APIClient) -> None:
    response = alice_client.post(
        S + "import/",
        {"transcript": upload(f"{MEW}.jsonl"), "meta": upload(f"{MEW}.meta")},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["external_id"] == MEW and body["source"] == "mewcode"
    assert body["title"].startswith("把 utils/dates.py")
    assert body["created_at"].startswith("2026-03-14T10:15:02")
    # The session was last active when the .meta says, not when it was imported.
    assert body["last_active_at"].startswith("2026-03-14T10:41:37")
    lines = [line for line in (FIXTURES / f"{MEW}.jsonl").read_text().splitlines() if line]
    assert body["record_count"] == SessionRecord.objects.count() == len(lines)
    assert alice_client.get(f"{S}{MEW}/resume/").status_code == 200
    assert AuditEvent.objects.filter(verb="session.imported").count() == 1


def test_it_imports_a_claude_code_transcript_as_ndjson(alice_client: APIClient) -> None:
    raw = (FIXTURES / "claude_code_session.jsonl").read_bytes()
    response = alice_client.post(S + "import/", raw, content_type="application/x-ndjson")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["source"] == "claude_code"
    assert body["title"] == "Add a dry-run flag to prune_stock"
    session = AgentSession.objects.get()
    types = list(session.records.order_by("index").values_list("type", flat=True))
    assert "compact_boundary" in types and "tool_result" in types
    assert body["metadata"]["skipped_lines"] > 0
    # Last active at its last record, not at the import.
    latest = session.records.aggregate(latest=Max("timestamp"))["latest"]
    assert latest is not None and session.last_active_at == latest
    again = alice_client.post(S + "import/", raw, content_type="application/x-ndjson")
    assert again.status_code == 409


def test_a_malformed_line_rejects_the_whole_import(alice_client: APIClient) -> None:
    for name in ("claude_code_bad_json_line7.jsonl", "mewcode_bad_json_line7.jsonl"):
        response = alice_client.post(
            S + "import/", {"transcript": upload(name)}, format="multipart"
        )
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert error["details"]["line"] == 7
        assert "line 7" in error["details"]["transcript"][0]
    assert not AgentSession.objects.exists() and not SessionRecord.objects.exists()


def test_import_needs_a_transcript(alice_client: APIClient) -> None:
    response = alice_client.post(S + "import/", {}, format="multipart")
    assert response.status_code == 400
    assert "transcript" in response.json()["error"]["details"]
    garbage = alice_client.post(S + "import/", b"hello\n", content_type="application/x-ndjson")
    assert garbage.status_code == 400


def test_the_format_parameter_is_the_imports_own(alice_client: APIClient) -> None:
    # DRF's ?format= renderer override used to answer 404 for any value but "json".
    lines = b'{"type": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00Z"}\n'
    upload = SimpleUploadedFile("s.jsonl", lines)
    forced = alice_client.post(
        "/api/v1/projects/alpha/sessions/import/?format=mewcode",
        {"transcript": upload},
        format="multipart",
    )
    assert forced.status_code == 201, forced.content
    assert forced.json()["source"] == "mewcode"
    unknown = alice_client.post(
        "/api/v1/projects/alpha/sessions/import/?format=zip",
        {"transcript": SimpleUploadedFile("s.jsonl", lines)},
        format="multipart",
    )
    assert unknown.status_code == 400, unknown.content
    assert unknown.json()["error"]["code"] == "validation_error"
    assert "format" in unknown.json()["error"]["details"]


def test_an_imported_transcript_is_extracted_however_old(
    alice_client: APIClient, project: Project
) -> None:
    # The scan looks at sessions active in the last 30 days; this one ended in March.
    response = alice_client.post(
        S + "import/",
        {"transcript": upload(f"{MEW}.jsonl"), "meta": upload(f"{MEW}.meta")},
        format="multipart",
    )
    assert response.status_code == 201
    due = pipeline_services.stage1_enqueue_due(project=project)
    job = Job.objects.select_related("session").get(pk__in=due)
    assert job.session is not None and job.session.external_id == MEW
