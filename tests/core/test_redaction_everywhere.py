"""One redaction policy on every ingestion path: secrets sent through the REST API are never
stored — not in the row written, not in its audit trail, not in what the API answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.secrets_corpus import PROSE_IS_PASSWORD, PROSE_ZH_PASSWORD, SLACK_BOT, fake

P = "/api/v1/projects/alpha/"
OPENAI_KEY_VALUE = "sk" + "-proj-" + fake("everywhere-openai", "abcdefghijk0123456789", 48)
STAGING_PASSWORD = "Xy7!kq2Lm9"
# One line of each form a new user tried: a Slack bot token, an OPENAI_API_KEY line, and
# passwords stated in prose, in English and in Chinese.
SECRETS = [SLACK_BOT, OPENAI_KEY_VALUE, STAGING_PASSWORD, PROSE_IS_PASSWORD, PROSE_ZH_PASSWORD]
LEAKY = (
    f"slack bot {SLACK_BOT}\n"
    f"OPENAI_API_KEY={OPENAI_KEY_VALUE}\n"
    f"The password for staging is {STAGING_PASSWORD}\n"
    f"The staging admin password is {PROSE_IS_PASSWORD}\n"
    f"测试环境的密码是 {PROSE_ZH_PASSWORD}，别外传。\n"
)


def stored() -> str:
    """Every row of every table, as dumpdata writes it."""
    out = StringIO()
    call_command("dumpdata", exclude=["contenttypes", "auth.permission", "sessions"], stdout=out)
    return json.dumps(json.loads(out.getvalue()), ensure_ascii=False)  # \uXXXX → text


def assert_nothing_kept(*responses: object) -> None:
    text = stored() + "".join(getattr(r, "content", b"").decode() for r in responses)
    leaked = [secret for secret in SECRETS if secret in text]
    assert leaked == []


def ok(response: object) -> object:
    status = getattr(response, "status_code", 0)
    assert 200 <= status < 300, getattr(response, "content", b"")[:500]
    return response


def test_the_probe_finds_a_secret_that_is_stored(alice_client: APIClient) -> None:
    # The check itself can fail: a secret that no rule knows stays, and the probe sees it.
    unknown = "plain-" + fake("probe", "abcdefghij", 20)
    ok(alice_client.post(P + "memories/", {"kind": "fact", "content": unknown}, format="json"))
    assert unknown in stored()


def test_session_title_and_metadata(alice_client: APIClient) -> None:
    created = ok(
        alice_client.post(
            P + "sessions/",
            {"external_id": "leaky", "title": LEAKY[:200], "metadata": {"env": LEAKY}},
            format="json",
        )
    )
    assert_nothing_kept(created)


def test_session_records_and_their_metadata(alice_client: APIClient) -> None:
    ok(alice_client.post(P + "sessions/", {"external_id": "s1"}, format="json"))
    appended = ok(
        alice_client.post(
            P + "sessions/s1/records/",
            [{"type": "user", "content": LEAKY, "metadata": {"cwd": LEAKY}}],
            format="json",
        )
    )
    assert_nothing_kept(appended, alice_client.get(P + "sessions/s1/records/"))


def test_imports_with_a_meta_file(alice_client: APIClient) -> None:
    meta = {
        "id": "m1",
        "title": LEAKY[:120],
        "summary": LEAKY,
        "message_count": 1,
        "total_tokens": 1,
        "created_at": "2026-01-01T00:00:00",
        "last_active": "2026-01-01T00:00:00",
    }
    transcript = json.dumps({"type": "user", "content": LEAKY}).encode()
    imported = ok(
        alice_client.post(
            P + "sessions/import/",
            {
                "transcript": SimpleUploadedFile("m1.jsonl", transcript),
                "meta": SimpleUploadedFile("m1.meta", json.dumps(meta).encode()),
            },
            format="multipart",
        )
    )
    assert_nothing_kept(imported)


def test_memory_create_update_and_bulk(alice_client: APIClient) -> None:
    body = {
        "kind": "fact",
        "content": LEAKY,
        "title": LEAKY[:150],
        "keywords": [SLACK_BOT, "staging"],
        "metadata": {"note": LEAKY},
    }
    created = ok(alice_client.post(P + "memories/", body, format="json"))
    memory_id = created.json()["id"]  # type: ignore[attr-defined]
    edited = ok(
        alice_client.patch(
            P + f"memories/{memory_id}/",
            {"content": "Edited. " + LEAKY, "metadata": {"again": LEAKY}},
            format="json",
        )
    )
    bulk = ok(
        alice_client.post(
            P + "memories/bulk/",
            {"items": [body | {"content": "Bulk. " + LEAKY}]},
            format="json",
        )
    )
    history = alice_client.get(P + f"memories/{memory_id}/history/")
    assert_nothing_kept(created, edited, bulk, history)


def test_recall_files_put_and_sync(alice_client: APIClient) -> None:
    content = f"---\nname: staging\ndescription: how to reach staging\ntype: project\n---\n{LEAKY}"
    put = ok(
        alice_client.put(P + "recall-files/project/staging.md", {"content": content}, format="json")
    )
    synced = ok(
        alice_client.post(
            P + "recall-files/sync/",
            {"scope": "user", "files": [{"path": "mine.md", "content": content}]},
            format="json",
        )
    )
    assert_nothing_kept(put, synced, alice_client.get(P + "recall-files/project/staging.md"))


@pytest.mark.parametrize("how", ["file", "tree", "user"])
def test_instructions(alice_client: APIClient, how: str) -> None:
    put: Callable[[], object] = {
        "file": lambda: alice_client.put(
            P + "instructions/files/MEWCODE.md", {"content": LEAKY}, format="json"
        ),
        "tree": lambda: alice_client.post(
            P + "instructions/tree/", {"files": {"MEWCODE.md": LEAKY}}, format="json"
        ),
        "user": lambda: alice_client.put(
            P + "instructions/user/", {"content": LEAKY}, format="json"
        ),
    }[how]
    written = ok(put())
    assert_nothing_kept(written, alice_client.get(P + "instructions/"))


def test_artifacts(alice_client: APIClient) -> None:
    written = ok(
        alice_client.put(P + "artifacts/notes/staging.md", {"content": LEAKY}, format="json")
    )
    assert_nothing_kept(written, alice_client.get(P + "artifacts/notes/staging.md"))
