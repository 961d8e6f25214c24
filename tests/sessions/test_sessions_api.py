from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project, ProjectMembership, Role

S = "/api/v1/projects/alpha/sessions/"


def new_session(client: APIClient, external_id: str = "sess-1") -> dict[str, Any]:
    response = client.post(S, {"external_id": external_id}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


def append(client: APIClient, ref: str, payload: Any, **kwargs: Any) -> Any:
    return client.post(f"{S}{ref}/records/", payload, format="json", **kwargs)


def test_create_is_get_or_create_by_external_id(alice_client: APIClient) -> None:
    first = alice_client.post(S, {"external_id": "abc", "metadata": {"cwd": "/src"}}, format="json")
    again = alice_client.post(S, {"external_id": "abc"}, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    generated = alice_client.post(S, {}, format="json").json()
    assert generated["external_id"].startswith("session_")
    assert AuditEvent.objects.filter(verb="session.created").count() == 2


def test_append_accepts_records_messages_and_ndjson(alice_client: APIClient) -> None:
    new_session(alice_client)
    records = [
        {"type": "system_prompt", "content": "You are helpful."},
        {"type": "user", "content": "Please add type hints to every function in utils"},
    ]
    assert append(alice_client, "sess-1", records).status_code == 201
    messages = {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "utils.py"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "def f(x): ..."}
                ],
            },
        ]
    }
    assert append(alice_client, "sess-1", messages).status_code == 201
    ndjson = "\n".join(
        json.dumps(r)
        for r in [{"type": "assistant", "content": "Done."}, {"type": "user", "content": "thanks"}]
    )
    response = alice_client.post(f"{S}sess-1/records/", ndjson, content_type="application/x-ndjson")
    assert response.status_code == 201, response.content
    session = response.json()["session"]
    assert session["record_count"] == 6
    assert session["message_count"] == 4  # user and assistant records
    assert session["title"] == "Please add type hints to every function in utils"[:50]
    listed = alice_client.get(f"{S}sess-1/records/", {"after": 1}).json()["results"]
    assert [r["index"] for r in listed] == [2, 3, 4, 5]
    assert listed[1]["type"] == "tool_result" and listed[1]["tool_use_id"] == "t1"
    only_users = alice_client.get(f"{S}sess-1/records/", {"type": "user"}).json()["results"]
    assert [r["content"] for r in only_users] == [records[1]["content"], "thanks"]


def test_append_is_all_or_nothing(alice_client: APIClient) -> None:
    new_session(alice_client)
    bad = [
        {"type": "user", "content": "fine"},
        {"type": "tool_result", "content": "x"},
        {"type": "nonsense", "content": "x"},
    ]
    response = append(alice_client, "sess-1", bad)
    assert response.status_code == 400
    assert set(response.json()["error"]["details"]["records"]) == {"1", "2"}
    assert SessionRecord.objects.count() == 0
    garbage = alice_client.post(
        f"{S}sess-1/records/", '{"type": "user"}\nnot json', content_type="application/x-ndjson"
    )
    assert garbage.status_code == 400 and "Line 2" in garbage.json()["error"]["message"]


def test_a_retried_append_is_idempotent_by_seq(alice_client: APIClient) -> None:
    new_session(alice_client)
    batch = [{"type": "user", "content": f"m{i}", "seq": i} for i in range(3)]
    assert append(alice_client, "sess-1", batch).json()["created"] == 3
    retry = append(alice_client, "sess-1", batch + [{"type": "user", "content": "m3", "seq": 3}])
    assert (retry.json()["created"], retry.json()["skipped"]) == (1, 3)
    assert list(SessionRecord.objects.order_by("index").values_list("content", flat=True)) == [
        "m0",
        "m1",
        "m2",
        "m3",
    ]
    dup = append(
        alice_client,
        "sess-1",
        [{"type": "user", "content": "a", "seq": 9}, {"type": "user", "content": "b", "seq": 9}],
    )
    assert dup.status_code == 400


def test_limits_answer_413_with_the_limit(alice_client: APIClient, settings: Any) -> None:
    new_session(alice_client)
    settings.SESSION_APPEND_MAX_RECORDS = 3
    settings.SESSION_RECORD_MAX_BYTES = 2048
    many = append(alice_client, "sess-1", [{"type": "user", "content": "x"}] * 4)
    assert many.status_code == 413 and "At most 3 records" in many.json()["error"]["message"]
    big = append(alice_client, "sess-1", [{"type": "user", "content": "x" * 3000}])
    assert big.status_code == 413 and "2048 bytes" in big.json()["error"]["message"]
    settings.API_MAX_BODY_BYTES = 4096
    body = append(alice_client, "sess-1", [{"type": "user", "content": "y" * 5000}])
    assert body.status_code == 413 and "4096" in body.json()["error"]["message"]
    assert SessionRecord.objects.count() == 0


def test_injected_blocks_are_flagged(alice_client: APIClient) -> None:
    new_session(alice_client)
    text = "<memoryhub-context>\n# autoMemory\n- use pytest\n</memoryhub-context>\nhi"
    append(
        alice_client,
        "sess-1",
        [{"type": "user", "content": text}, {"type": "user", "content": "real question"}],
    )
    flags = list(
        SessionRecord.objects.order_by("index").values_list("contains_injection", flat=True)
    )
    assert flags == [True, False]
    session = AgentSession.objects.get()
    assert session.injected_block_count == 1
    assert session.title == "real question"  # our own injected text never becomes the title


def test_sessions_are_found_by_id_or_external_id_and_filtered(alice_client: APIClient) -> None:
    a = new_session(alice_client, "claude-1234")
    new_session(alice_client, "mew-1")
    assert alice_client.get(f"{S}{a['id']}/").json()["external_id"] == "claude-1234"
    assert alice_client.get(f"{S}claude-1234/").json()["id"] == a["id"]
    assert alice_client.get(f"{S}missing/").status_code == 404
    alice_client.post(f"{S}mew-1/end/")
    ended = alice_client.get(S, {"status": "ended"}).json()["results"]
    assert [s["external_id"] for s in ended] == ["mew-1"]
    assert [s["external_id"] for s in alice_client.get(S, {"q": "claude"}).json()["results"]] == [
        "claude-1234"
    ]


def test_only_the_author_adds_the_author_or_a_maintainer_ends_only_maintainers_delete(
    alice_client: APIClient, bob_client: APIClient, project: Project, bob: User
) -> None:
    new_session(alice_client)
    assert append(bob_client, "sess-1", [{"type": "user", "content": "x"}]).status_code == 403
    assert bob_client.get(f"{S}sess-1/resume/").status_code == 200
    assert bob_client.post(f"{S}sess-1/end/").status_code == 403
    assert bob_client.delete(f"{S}sess-1/").status_code == 403
    ProjectMembership.objects.filter(user=bob).update(role=Role.MAINTAINER)
    # Not even a maintainer writes words into alice's session: they would be extracted as
    # alice's (her private memories included).
    refused = append(bob_client, "sess-1", [{"type": "user", "content": "I prefer zebra."}])
    assert refused.status_code == 403
    assert "author" in refused.json()["error"]["message"]
    assert SessionRecord.objects.count() == 0
    assert bob_client.post(f"{S}sess-1/end/").status_code == 200
    assert bob_client.delete(f"{S}sess-1/").status_code == 204
    assert not AgentSession.objects.exists() and not SessionRecord.objects.exists()
    assert AuditEvent.objects.filter(verb="session.deleted").exists()


@pytest.mark.parametrize("redact", [True, False])
def test_secrets_are_redacted_before_storage_unless_disabled(
    alice_client: APIClient, project: Project, redact: bool
) -> None:
    project.settings = {"sessions": {"redact_secrets": redact}}
    project.save(update_fields=["settings"])
    new_session(alice_client)
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    append(alice_client, "sess-1", [{"type": "user", "content": f"my token is {secret}"}])
    stored = json.dumps(list(SessionRecord.objects.values_list("content", flat=True)))
    assert (secret in stored) is not redact
    assert AgentSession.objects.get().redaction_count == (1 if redact else 0)


def test_another_persons_session_id_is_a_conflict_not_theirs_to_take(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    new_session(alice_client)
    again = alice_client.post(S, {"external_id": "sess-1"}, format="json")
    assert again.status_code == 200  # idempotent for its author
    taken = bob_client.post(S, {"external_id": "sess-1"}, format="json")
    assert taken.status_code == 409
    assert taken.json()["error"]["details"] == {"external_id": ["belongs to another person"]}
    # Nor may bob's reads mark what alice's session was shown.
    for url in (
        "/api/v1/projects/alpha/memories/search/?q=x&session_id=sess-1",
        "/api/v1/projects/alpha/injection/?profile=default&session_id=sess-1",
    ):
        assert bob_client.get(url).status_code == 403, url
    assert (
        alice_client.get(
            "/api/v1/projects/alpha/injection/?profile=default&session_id=sess-1"
        ).status_code
        == 200
    )


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"])
def test_a_timestamp_outside_the_years_once_in_utc_is_refused(
    alice_client: APIClient, stamp: str
) -> None:
    new_session(alice_client)
    response = append(
        alice_client, "sess-1", [{"type": "user", "content": "x", "timestamp": stamp}]
    )
    assert response.status_code == 400, response.content
    assert (
        "out of range once converted to UTC"
        in response.json()["error"]["details"]["records"]["0"][0]
    )
    assert SessionRecord.objects.count() == 0
    # At the edge, in range: stored, and read back.
    edge = [{"type": "user", "content": "y", "timestamp": "9999-12-31T23:59:59+05:00"}]
    assert append(alice_client, "sess-1", edge).status_code == 201
    records = alice_client.get(f"{S}sess-1/records/")
    assert records.status_code == 200 and records.json()["results"][0]["content"] == "y"


def test_nul_in_a_transcript_record_is_kept_as_a_replacement_character(
    alice_client: APIClient,
) -> None:
    new_session(alice_client)
    records = [
        {"type": "user", "content": "show me the file"},
        {
            "type": "tool_result",
            "tool_use_id": "call\u00001",
            "content": "pasted binary \u0000\u0001 garbage",
            "metadata": {"note\u0000": "x\u0000y"},
        },
    ]
    response = append(alice_client, "sess-1", records)
    assert response.status_code == 201, response.content  # not the whole chunk refused
    stored = SessionRecord.objects.order_by("index").last()
    assert stored is not None
    assert stored.content == "pasted binary \ufffd\u0001 garbage"
    assert stored.tool_use_id == "call\ufffd1"
    assert stored.metadata == {"note\ufffd": "x\ufffdy"}
