"""The endpoint the CLI added: a transcript pushed by line, as the agent writes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rest_framework.test import APIClient

from memoryhub.sessions.models import AgentSession, SessionRecord
from tests.agent_cli.claude_code import ClaudeCodeTranscript
from tests.agent_cli.conftest import FIXTURES

S = "/api/v1/projects/alpha/sessions/"
NDJSON = "application/x-ndjson"
CLAUDE = (FIXTURES / "claude_code_session.jsonl").read_bytes().splitlines(keepends=True)
MEWCODE = (FIXTURES / "session_20260314_101502_k3p9.jsonl").read_bytes().splitlines(keepends=True)


def push(client: APIClient, ref: str, lines: list[bytes], first_line: int, **params: str) -> Any:
    query = "&".join([f"first_line={first_line}", *(f"{k}={v}" for k, v in params.items())])
    return client.post(f"{S}{ref}/transcript/?{query}", b"".join(lines), content_type=NDJSON)


def test_a_malformed_line_is_reported_with_its_line_in_the_file(alice_client: APIClient) -> None:
    alice_client.post(S, {"external_id": "cc"}, format="json")
    assert push(alice_client, "cc", CLAUDE[:4], 1).status_code == 201
    bad = [CLAUDE[4], b'{"type": "user", "message": \n', CLAUDE[6]]

    response = push(alice_client, "cc", bad, 5)

    assert response.status_code == 400
    assert response.json()["error"]["details"]["line"] == 6
    assert "line 6: not valid JSON" in response.json()["error"]["message"]
    # Nothing of the refused push was kept, and the session still continues at line 5.
    assert SessionRecord.objects.filter(session__external_id="cc").count() == 1
    assert AgentSession.objects.get(external_id="cc").metadata["transcript"]["next_line"] == 5


def test_a_mewcode_transcript_is_pushed_in_pieces(alice_client: APIClient) -> None:
    alice_client.post(S, {"external_id": "mew"}, format="json")
    first = push(alice_client, "mew", MEWCODE[:3], 1)
    rest = push(alice_client, "mew", MEWCODE[2:], 3)  # overlaps line 3: it is skipped

    assert first.status_code == rest.status_code == 201, rest.content
    assert first.json()["held_back"] is False  # every MewCode line is a whole record
    rows = list(SessionRecord.objects.filter(session__external_id="mew").order_by("index"))
    assert [r.seq for r in rows] == [n * 1000 for n in range(1, len(MEWCODE) + 1)]
    assert [r.metadata["line"] for r in rows] == list(range(1, len(MEWCODE) + 1))
    assert AgentSession.objects.get(external_id="mew").source == "mewcode"


def test_only_the_author_or_a_maintainer_pushes(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    alice_client.post(S, {"external_id": "cc"}, format="json")
    response = push(bob_client, "cc", CLAUDE, 1)
    assert response.status_code == 403
    assert SessionRecord.objects.count() == 0


def test_plain_text_lines_are_accepted_too(alice_client: APIClient) -> None:
    alice_client.post(S, {"external_id": "cc"}, format="json")
    url = f"{S}cc/transcript/?first_line=1&final=true"
    response = alice_client.post(url, b"".join(CLAUDE), content_type="text/plain")
    assert response.status_code == 201, response.content
    assert response.json()["next_line"] == len(CLAUDE) + 1


def test_a_push_needs_ndjson(alice_client: APIClient) -> None:
    alice_client.post(S, {"external_id": "cc"}, format="json")
    response = alice_client.post(f"{S}cc/transcript/?first_line=1", {"type": "user"}, format="json")
    assert response.status_code == 400
    assert "application/x-ndjson" in str(response.json()["error"]["details"])


def test_an_oversized_record_is_cut_down_so_the_transcript_keeps_flowing(
    alice_client: APIClient, tmp_path: Path, settings: Any
) -> None:
    """A pasted screenshot or a huge Write must not stop every later push of the session."""
    settings.SESSION_RECORD_MAX_BYTES = 5_000
    t = ClaudeCodeTranscript(tmp_path / "t.jsonl", "big")
    screenshot = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 2_000}
    t.write(
        t._envelope(
            "user",
            message={
                "role": "user",
                "content": [
                    {"type": "text", "text": "Why is this chart empty?"},
                    {"type": "image", "source": screenshot},
                ],
            },
        )
    )
    t.assistant(
        {"type": "tool_use", "id": "toolu_w", "name": "Write", "input": {"content": "x" * 9_000}}
    )
    t.write(
        t._envelope(
            "user",
            message={
                "role": "user",
                "content": [{"tool_use_id": "toolu_w", "type": "tool_result", "content": "ok"}],
            },
        )
    )
    t.bash("cat build.log", "y" * 9_000)
    t.user("Thanks, that fixed it.")
    alice_client.post(S, {"external_id": "big"}, format="json")

    response = push(alice_client, "big", t.path.read_bytes().splitlines(keepends=True), 1)

    assert response.status_code == 201, response.content
    rows = list(SessionRecord.objects.filter(session__external_id="big").order_by("index"))
    types = ["user", "assistant", "tool_result", "assistant", "tool_result", "user"]
    assert [r.type for r in rows] == types
    image_note, tool_use = rows[0].content[1], rows[1].content[0]
    assert image_note["type"] == "text"
    assert "MemoryHub left out" in image_note["text"]
    assert rows[0].content[0] == {"type": "text", "text": "Why is this chart empty?"}
    assert rows[0].metadata["oversized_bytes"] > 5_000
    assert (tool_use["type"], tool_use["id"], tool_use["name"]) == ("tool_use", "toolu_w", "Write")
    assert "MemoryHub left out" in tool_use["input"]["omitted"]
    log = rows[4].content
    assert log.startswith("yyy") and "MemoryHub left out" in log
    assert len(json.dumps(log).encode()) <= 5_000
    assert rows[5].content == "Thanks, that fixed it."
