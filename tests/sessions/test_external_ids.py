"""A session's external id names it in URLs (…/sessions/{id}/), so it cannot contain "/":
Django decodes %2F before routing, and a session created as "a/b" could never be reached by
that id. Every way of creating a session refuses it, except a Hindsight retain: Hindsight takes
any document id, and its clients must work unmodified."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.integrations.mcp import operations as mcp
from memoryhub.integrations.mcp.caller import Caller
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from tests.interchange.helpers import tree_files, upload, zip_bytes

S = "/api/v1/projects/alpha/sessions/"
FIXTURES = Path(__file__).parent / "fixtures"
MEW = "session_20260314_101502_k3p9"


def claude_code_transcript(session_id: str) -> bytes:
    raw = (FIXTURES / "claude_code_session.jsonl").read_bytes()
    return raw.replace(b"3f9c2a1e-7b4d-4e8a-9c61-0d2e5f8a7b13", session_id.encode())


def assert_refused_external_id(response: object) -> None:
    assert response.status_code == 400, response.content  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["code"] == "validation_error"
    assert 'cannot contain "/"' in error["details"]["external_id"][0]


def test_creating_a_session_refuses_a_slash(alice_client: APIClient) -> None:
    response = alice_client.post(S, {"external_id": "feature/login"}, format="json")
    assert_refused_external_id(response)
    assert not AgentSession.objects.exists()
    # What the id would have been reached by: nothing, before and after.
    for path in ("feature/login/", "feature%2Flogin/"):
        assert alice_client.get(S + path).status_code == 404


def test_a_session_stored_with_a_slash_before_the_rule_is_still_found(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    older = AgentSession.objects.create(
        project=project, external_id="feature/login", created_by_user=alice
    )
    again = alice_client.post(S, {"external_id": "feature/login"}, format="json")
    assert again.status_code == 200, again.content
    assert again.json()["id"] == str(older.public_id)
    assert alice_client.get(f"{S}{older.public_id}/").status_code == 200


def test_an_import_refuses_a_slash_in_its_external_id(
    alice_client: APIClient, settings: object
) -> None:
    raw = claude_code_transcript("3f9c2a1e")
    direct = alice_client.post(
        S + "import/?external_id=a/b", raw, content_type="application/x-ndjson"
    )
    assert_refused_external_id(direct)
    # A large upload is refused too, before it is staged for the worker.
    settings.SESSION_IMPORT_SYNC_MAX_BYTES = 1  # type: ignore[attr-defined]
    staged = alice_client.post(
        S + "import/?external_id=a/b", raw, content_type="application/x-ndjson"
    )
    assert_refused_external_id(staged)
    assert not AgentSession.objects.exists() and not Job.objects.exists()


def test_a_transcripts_own_session_id_with_a_slash_needs_another_external_id(
    alice_client: APIClient,
) -> None:
    raw = claude_code_transcript("team/3f9c2a1e")
    response = alice_client.post(S + "import/", raw, content_type="application/x-ndjson")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert "'team/3f9c2a1e' contains \"/\"" in error["message"]
    assert "another external_id" in error["message"]
    assert not AgentSession.objects.exists()

    renamed = alice_client.post(
        S + "import/?external_id=team-3f9c2a1e", raw, content_type="application/x-ndjson"
    )
    assert renamed.status_code == 201, renamed.content
    assert alice_client.get(S + "team-3f9c2a1e/").status_code == 200


def test_a_mewcode_meta_id_with_a_slash_is_refused(alice_client: APIClient) -> None:
    meta = (FIXTURES / f"{MEW}.meta").read_bytes().replace(MEW.encode(), b"team/" + MEW.encode())
    response = alice_client.post(
        S + "import/",
        {
            "transcript": SimpleUploadedFile(
                f"{MEW}.jsonl", (FIXTURES / f"{MEW}.jsonl").read_bytes()
            ),
            "meta": SimpleUploadedFile(f"{MEW}.meta", meta),
        },
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert f"'team/{MEW}' contains" in response.json()["error"]["message"]
    assert not AgentSession.objects.exists()


def test_a_workspace_import_names_the_session_file_whose_id_has_a_slash(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("mewcode")
    meta = f".mewcode/sessions/{MEW}.meta"
    files[meta] = files[meta].replace(MEW.encode(), b"team/" + MEW.encode())
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert response.status_code == 400, response.content
    [error] = response.json()["error"]["details"]["errors"]
    assert error["file"] == f".mewcode/sessions/{MEW}.jsonl"
    assert 'contains "/"' in error["message"]
    assert not AgentSession.objects.exists()


def test_hindsight_keeps_a_document_id_with_a_slash(alice_client: APIClient) -> None:
    # Hindsight accepts any document id: its clients must work unmodified. REST names such a
    # session by its public id.
    body = {"items": [{"content": "user: hello", "document_id": "notes/today"}]}
    response = alice_client.post("/v1/default/banks/alpha/memories", body, format="json")
    assert response.status_code == 200, response.content
    session = AgentSession.objects.get(external_id="notes/today")
    fetched = alice_client.get(f"/api/v1/projects/alpha/sessions/{session.public_id}/")
    assert fetched.status_code == 200 and fetched.json()["external_id"] == "notes/today"


def test_mcp_refuses_to_create_a_session_with_a_slash(alice: User, project: Project) -> None:
    caller = Caller(actor=Actor(user=alice), project="alpha")
    with pytest.raises(ValidationError) as refused:
        mcp.session_append(
            caller,
            None,
            "feature/login",
            records=[{"type": "user", "content": "hello"}],
            messages=None,
            title="",
        )
    assert 'cannot contain "/"' in refused.value.message_dict["external_id"][0]
    assert not AgentSession.objects.exists()
