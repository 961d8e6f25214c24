"""The secret corpus pushed through the real ingestion paths: nothing of any secret is stored."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from memoryhub.sessions.models import AgentSession, SessionRecord
from tests.secrets_corpus import SAMPLES

S = "/api/v1/projects/alpha/sessions/"


def stored_text() -> str:
    rows = SessionRecord.objects.values_list("content", "metadata")
    sessions = AgentSession.objects.values_list("title", "summary", "metadata")
    return json.dumps([list(rows), list(sessions)], ensure_ascii=False)


def test_the_corpus_has_at_least_25_kinds() -> None:
    assert len({sample.kind for sample in SAMPLES}) >= 25


def test_no_secret_survives_an_append(alice_client: APIClient) -> None:
    alice_client.post(S, {"external_id": "leaky"}, format="json")
    records: list[dict[str, Any]] = []
    for i, sample in enumerate(SAMPLES):
        records.append(
            {
                "type": "user",
                "content": sample.context_text,
                "metadata": {"note": sample.context_text},
            }
        )
        records.append(
            {
                "type": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{i}",
                        "name": "Bash",
                        "input": {"command": sample.context_text},
                    }
                ],
            }
        )
        records.append(
            {
                "type": "tool_result",
                "tool_use_id": f"t{i}",
                "content": [{"type": "text", "text": sample.context_text}],
            }
        )
    response = alice_client.post(f"{S}leaky/records/", records, format="json")
    assert response.status_code == 201, response.content
    stored = stored_text()
    leaked = [s.kind for s in SAMPLES if s.secret_value in stored]
    assert leaked == []
    assert AgentSession.objects.get().redaction_count >= 3 * len(SAMPLES)


def test_no_secret_survives_an_import(alice_client: APIClient) -> None:
    lines = [json.dumps({"type": "user", "content": s.context_text}) for s in SAMPLES]
    upload = SimpleUploadedFile("leaky.jsonl", "\n".join(lines).encode())
    response = alice_client.post(S + "import/", {"transcript": upload}, format="multipart")
    assert response.status_code == 201, response.content
    assert [s.kind for s in SAMPLES if s.secret_value in stored_text()] == []


def test_no_secret_survives_in_a_mewcode_meta_title(alice_client: APIClient) -> None:
    sample = SAMPLES[0]
    meta = {
        "id": "m1",
        "title": sample.context_text[:50] + sample.secret_value,
        "summary": sample.context_text,
        "message_count": 1,
        "total_tokens": 1,
        "created_at": "2026-01-01T00:00:00",
        "last_active": "2026-01-01T00:00:00",
    }
    transcript = json.dumps({"type": "user", "content": "hi"}).encode()
    response = alice_client.post(
        S + "import/",
        {
            "transcript": SimpleUploadedFile("m1.jsonl", transcript),
            "meta": SimpleUploadedFile("m1.meta", json.dumps(meta).encode()),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert sample.secret_value not in stored_text()
