"""Each hook command of the installed CLI against a live server, fed the JSON Claude Code gives
its hooks on stdin, with Claude Code transcript files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rest_framework.test import APIClient

from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.agent_cli.claude_code import ClaudeCodeTranscript
from tests.agent_cli.conftest import FIXTURES, Agent, hook_input
from tests.recall.memories import add_memory

SID = "0b9c1f7e-4d2a-4c3b-9e8f-1a2b3c4d5e6f"
FIXTURE = FIXTURES / "claude_code_session.jsonl"
FIXTURE_SID = "3f9c2a1e-7b4d-4e8a-9c61-0d2e5f8a7b13"
SESSIONS = "/api/v1/projects/alpha/sessions/"


def records(external_id: str, project: str = "alpha") -> list[SessionRecord]:
    rows = SessionRecord.objects.filter(
        session__external_id=external_id, session__project__slug=project
    )
    return list(rows.order_by("index"))


def comparable(rows: list[SessionRecord]) -> list[tuple[object, ...]]:
    return [(r.type, json.dumps(r.content, sort_keys=True), r.tool_use_id) for r in rows]


def test_session_start_prints_the_first_turn_payload(
    alice_agent: Agent, alice_client: APIClient, tmp_path: Path
) -> None:
    add_memory(alice_client, "Every migration needs a reverse step.", "rule", importance=3)
    add_memory(alice_client, "The stock service is deployed with `make release`.", "fact")
    transcript = tmp_path / "t.jsonl"
    payload = hook_input("SessionStart", SID, transcript, source="startup", model="claude")

    result = alice_agent.run("session-start", payload=payload)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<memoryhub-context>")
    assert "Every migration needs a reverse step." in result.stdout
    assert "make release" in result.stdout
    session = AgentSession.objects.get(external_id=SID)
    assert session.metadata["cwd"] == "/home/dev/src/inventory-api"
    # The same payload the server builds for the default profile (what --json wraps too).
    as_json = alice_agent.run("session-start", "--json", payload=payload)
    context = json.loads(as_json.stdout)["hookSpecificOutput"]
    assert context == {"hookEventName": "SessionStart", "additionalContext": result.stdout[:-1]}


def test_prompt_prints_recall_once_per_session(
    alice_agent: Agent, alice_client: APIClient, tmp_path: Path
) -> None:
    add_memory(
        alice_client,
        "prune_stock must log every deleted StockItem id.",
        "rule",
        keywords=["prune_stock", "stockitem", "log"],
    )
    add_memory(alice_client, "Invoices are generated nightly.", "fact", keywords=["invoice"])
    transcript = tmp_path / "t.jsonl"
    prompt = hook_input(
        "UserPromptSubmit", SID, transcript, prompt="Make prune_stock log what it deletes"
    )

    first = alice_agent.run("prompt", payload=prompt)
    again = alice_agent.run("prompt", payload=prompt)
    other_session = alice_agent.run("prompt", payload=prompt | {"session_id": "another"})

    assert first.returncode == again.returncode == 0
    assert "prune_stock must log every deleted StockItem id." in first.stdout
    assert "Invoices" not in first.stdout
    assert "prune_stock must log" not in again.stdout  # seen-tracking: not repeated
    assert "prune_stock must log" in other_session.stdout  # a new session sees it again
    assert alice_agent.log_text() == ""


def test_push_uploads_only_the_records_the_server_does_not_have(
    alice_agent: Agent, alice_client: APIClient, charlie_client: APIClient, tmp_path: Path
) -> None:
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "projects" / "-home-dev-src-inventory-api" / f"{FIXTURE_SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    # Claude Code is mid-message: line 5 opens assistant message msg_01FqA, lines 6-7
    # continue it, and the 8th line is still being written (no newline yet).
    transcript.write_bytes(b"".join(lines[:7]) + lines[7].rstrip(b"\n")[:40])
    stop = hook_input("Stop", FIXTURE_SID, transcript, stop_hook_active=False)

    assert alice_agent.run("push", payload=stop).returncode == 0
    first = records(FIXTURE_SID)
    assert [r.type for r in first] == ["user"]  # msg_01FqA may continue: held back

    transcript.write_bytes(b"".join(lines))
    assert alice_agent.run("push", payload=stop).returncode == 0
    assert alice_agent.run("push", payload=stop).returncode == 0  # nothing new: adds nothing
    pushed = records(FIXTURE_SID)

    # The whole file imported at once gives the same records (charlie's own project).
    imported = charlie_client.post(
        "/api/v1/projects/charlie-lab/sessions/import/",
        FIXTURE.read_bytes(),
        content_type="application/x-ndjson",
    )
    assert imported.status_code == 201, imported.content
    whole = records(FIXTURE_SID, project="charlie-lab")
    # Everything but the last assistant message, which may still grow until the session ends.
    assert comparable(pushed) == comparable(whole[:-1])
    assert whole[-1].type == "assistant"
    assert len({r.seq for r in pushed}) == len(pushed)
    assert pushed[0].pk == first[0].pk  # the first push's record was kept, not re-created
    session = AgentSession.objects.get(external_id=FIXTURE_SID, project__slug="alpha")
    assert session.source == "claude_code"
    assert session.metadata["transcript"] == {"format": "claude_code", "next_line": 21}

    end = hook_input("SessionEnd", FIXTURE_SID, transcript, reason="other")
    assert alice_agent.run("end", payload=end).returncode == 0
    assert comparable(records(FIXTURE_SID)) == comparable(whole)
    session.refresh_from_db()
    assert session.metadata["transcript"]["next_line"] == 22
    assert alice_agent.log_text().count("push session=") == 3


def test_a_retried_push_after_a_lost_answer_adds_nothing(
    alice_agent: Agent, alice_client: APIClient
) -> None:
    """The server stored a push but the answer never reached the hook: the same lines again
    (from the line the hook had) are skipped."""
    alice_client.post(SESSIONS, {"external_id": FIXTURE_SID}, format="json")
    url = f"{SESSIONS}{FIXTURE_SID}/transcript/?first_line=1&final=true"
    body = FIXTURE.read_bytes()
    first = alice_client.post(url, body, content_type="application/x-ndjson")
    retry = alice_client.post(url, body, content_type="application/x-ndjson")
    assert first.status_code == retry.status_code == 201
    assert first.json()["created"] == len(records(FIXTURE_SID)) > 0
    assert retry.json()["created"] == 0
    gap = alice_client.post(
        f"{SESSIONS}{FIXTURE_SID}/transcript/?first_line=40",
        b'{"type": "summary", "summary": "x"}\n',
        content_type="application/x-ndjson",
    )
    assert gap.status_code == 409
    assert gap.json()["error"]["details"] == {"next_line": 22}


def test_pre_compact_pushes_and_records_a_boundary(
    alice_agent: Agent, project: Project, tmp_path: Path
) -> None:
    transcript = ClaudeCodeTranscript(tmp_path / f"{SID}.jsonl", SID)
    for turn in range(12):
        transcript.user(f"Step {turn}: " + "explain the stock pruning rules in detail. " * 40)
        transcript.say(f"Answer {turn}: " + "the pruning keeps items under warranty. " * 40)
    payload = hook_input("PreCompact", SID, transcript.path, trigger="auto", custom_instructions="")

    result = alice_agent.run("pre-compact", payload=payload)

    assert result.returncode == 0 and result.stdout == ""
    rows = records(SID)
    assert [r.type for r in rows].count("user") == 12
    boundary = rows[-1]
    assert boundary.type == "compact_boundary"
    assert "Step 0" in boundary.content["summary"]  # the offline summary quotes the user
    assert "compacted=True" in alice_agent.log_text()


def test_end_pushes_the_rest_and_ends_the_session(alice_agent: Agent, tmp_path: Path) -> None:
    transcript = ClaudeCodeTranscript(tmp_path / f"{SID}.jsonl", SID)
    transcript.user("Add a dry-run flag.")
    transcript.say("Done.")  # the last message: a non-final push would hold it back
    payload = hook_input("SessionEnd", SID, transcript.path, reason="prompt_input_exit")

    result = alice_agent.run("end", payload=payload)

    assert result.returncode == 0 and result.stdout == ""
    assert [r.type for r in records(SID)] == ["user", "assistant"]
    assert AgentSession.objects.get(external_id=SID).status == "ended"
    assert "extraction queued (job " in alice_agent.log_text()


def test_flags_stand_in_for_stdin_for_other_agents(
    alice_agent: Agent, alice_client: APIClient, tmp_path: Path
) -> None:
    add_memory(alice_client, "Releases are tagged vX.Y.Z.", "rule", keywords=["release", "tag"])
    shutil.copy(FIXTURE, tmp_path / "mine.jsonl")

    recall = alice_agent.run("prompt", "--session-id", "shell-1", "--prompt", "tag the release")
    push = alice_agent.run(
        "push", "--session-id", "shell-1", "--transcript", str(tmp_path / "mine.jsonl")
    )

    assert "Releases are tagged vX.Y.Z." in recall.stdout
    assert push.returncode == 0
    assert len(records("shell-1")) > 0


def test_a_mistyped_hook_never_exits_2(alice_agent: Agent, tmp_path: Path) -> None:
    """Exit 2 from a UserPromptSubmit hook would erase the user's prompt."""
    result = alice_agent.run("prompt", "--no-such-flag", payload={"prompt": "hi"})
    assert (result.returncode, result.stdout) == (0, "")
    assert "unrecognized arguments: --no-such-flag" in alice_agent.log_text()
    garbage = alice_agent.run("prompt", stdin="{not json")
    assert (garbage.returncode, garbage.stdout) == (0, "")
    assert "not JSON" in alice_agent.log_text()
