"""A session belongs to the person who created it. When the server refuses the agent's session
to the hook's user (a viewer may not create one; the id is another person's), the hooks still
give the agent the project's memories, without a session, upload nothing, and say why in one
log line per command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession, SessionRecord
from memoryhub.sessions.services import session_get_or_create
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.agent_cli.claude_code import ClaudeCodeTranscript
from tests.agent_cli.conftest import Agent, hook_input, make_agent, raw_token
from tests.factories import UserFactory
from tests.recall.memories import add_memory

SID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
RULE = "Every migration needs a reverse step."
RECALLED = "prune_stock must log every deleted StockItem id."
PROMPT = "Make prune_stock log what it deletes"
SESSIONLESS = "memories are injected without a session, the transcript is not uploaded"


def add_memories(client: APIClient) -> None:
    add_memory(client, RULE, "rule", importance=3)
    add_memory(client, RECALLED, "rule", keywords=["prune_stock", "stockitem", "log"])


def run(agent: Agent, command: str, event: str, path: Path, **fields: Any) -> str:
    result = agent.run(command, payload=hook_input(event, SID, path, **fields))
    assert (result.returncode, result.stderr) == (0, ""), agent.log_text()
    return result.stdout


def refusals(agent: Agent, *commands: str) -> list[str]:
    """The log's lines: one explanation for each command, and nothing else."""
    lines = agent.log_text().splitlines()
    assert [line.split()[2] for line in lines] == list(commands), lines  # stamp pid command
    for line in lines:
        assert f"session={SID}: unusable session: " in line and line.endswith(SESSIONLESS), line
    return lines


def session_state(external_id: str) -> tuple[list[tuple[int, str]], str, int]:
    session = AgentSession.objects.get(external_id=external_id, project__slug="alpha")
    rows = SessionRecord.objects.filter(session=session).order_by("index")
    seen = RecallSeen.objects.filter(session=session).count()
    return [(r.index, r.type) for r in rows], session.status, seen


def test_a_viewer_gets_the_memories_and_creates_no_session(
    live_server: Any, alice: User, alice_client: APIClient, project: Project, tmp_path: Path
) -> None:
    add_memories(alice_client)
    dave = UserFactory.create(username="dave")
    membership_add(
        access=project_access(slug="alpha", actor=Actor(user=alice)), user=dave, role=Role.VIEWER
    )
    dave_agent = make_agent(
        tmp_path / "dave", url=live_server.url, token=raw_token(dave, project), project="alpha"
    )
    transcript = ClaudeCodeTranscript(tmp_path / f"{SID}.jsonl", SID)
    transcript.user(PROMPT)
    transcript.say("Done.")

    start = run(dave_agent, "session-start", "SessionStart", transcript.path, source="startup")
    first = run(dave_agent, "prompt", "UserPromptSubmit", transcript.path, prompt=PROMPT)
    again = run(dave_agent, "prompt", "UserPromptSubmit", transcript.path, prompt=PROMPT)
    pushed = run(dave_agent, "push", "Stop", transcript.path, stop_hook_active=False)
    ended = run(dave_agent, "end", "SessionEnd", transcript.path, reason="other")

    assert start.startswith("<memoryhub-context>")
    assert RULE in start
    assert RECALLED in first
    assert RECALLED in again  # no session: nothing was marked as shown
    assert pushed == ended == ""
    assert not AgentSession.objects.filter(external_id=SID).exists()
    for line in refusals(dave_agent, "session-start", "prompt", "prompt", "push", "end"):
        assert "unusable session: you may not create sessions here" in line
        assert "HTTP 403 permission_denied" in line and "viewer" in line


def test_another_persons_session_id_gives_memories_and_leaves_their_session_alone(
    alice_agent: Agent, bob_agent: Agent, alice_client: APIClient, tmp_path: Path
) -> None:
    add_memories(alice_client)
    bobs = ClaudeCodeTranscript(tmp_path / "bob" / f"{SID}.jsonl", SID)
    run(bob_agent, "session-start", "SessionStart", bobs.path, source="startup")
    assert RECALLED in run(bob_agent, "prompt", "UserPromptSubmit", bobs.path, prompt=PROMPT)
    bobs.user(PROMPT)
    bobs.say("Added the log line.")
    run(bob_agent, "push", "Stop", bobs.path, stop_hook_active=False)
    before = session_state(SID)
    assert before[0] and before[1] == "active" and before[2] > 0
    # alice's agent comes up with the same session id (a copied transcript, a shared machine).
    hers = ClaudeCodeTranscript(tmp_path / "alice" / f"{SID}.jsonl", SID)
    for turn in range(3):
        hers.user(f"Step {turn}: something else entirely.")
        hers.say(f"Answer {turn}.")

    start = run(alice_agent, "session-start", "SessionStart", hers.path, source="resume")
    recalled = run(alice_agent, "prompt", "UserPromptSubmit", hers.path, prompt=PROMPT)
    quiet = [
        run(alice_agent, "push", "Stop", hers.path, stop_hook_active=False),
        run(alice_agent, "pre-compact", "PreCompact", hers.path, trigger="auto"),
        run(alice_agent, "end", "SessionEnd", hers.path, reason="other"),
    ]

    assert RULE in start
    assert RECALLED in recalled  # though bob's session was already shown it
    assert quiet == ["", "", ""]
    assert session_state(SID) == before  # no record, no boundary, not ended, nothing seen
    assert AgentSession.objects.filter(external_id=SID).count() == 1
    lines = refusals(alice_agent, "session-start", "prompt", "push", "pre-compact", "end")
    assert all("unusable session: it belongs to another person" in line for line in lines)
    # The server refuses another person's id when creating (409); recall, which names the
    # session without creating it, is refused with 403.
    assert "HTTP 409 conflict" in lines[0]
    assert "HTTP 403 permission_denied" in lines[1]
    # bob's own agent carries on with his session as before.
    assert RECALLED not in run(bob_agent, "prompt", "UserPromptSubmit", bobs.path, prompt=PROMPT)


def test_a_session_nobody_authored_is_nobodys_to_take_over(
    alice_agent: Agent, alice_client: APIClient, project: Project, tmp_path: Path
) -> None:
    """A session with no author (made by a process, or its creator's account deleted): POST
    /sessions/ answers 409 and recall into it 403, as for another person's."""
    add_memories(alice_client)
    session_get_or_create(project=project, actor=Actor.for_system("import"), external_id=SID)
    transcript = ClaudeCodeTranscript(tmp_path / f"{SID}.jsonl", SID)
    transcript.user(PROMPT)
    transcript.say("Done.")

    start = run(alice_agent, "session-start", "SessionStart", transcript.path, source="startup")
    recalled = run(alice_agent, "prompt", "UserPromptSubmit", transcript.path, prompt=PROMPT)
    pushed = run(alice_agent, "push", "Stop", transcript.path, stop_hook_active=False)
    ended = run(alice_agent, "end", "SessionEnd", transcript.path, reason="other")

    assert RULE in start
    assert RECALLED in recalled
    assert pushed == ended == ""
    assert session_state(SID) == ([], "active", 0)
    lines = refusals(alice_agent, "session-start", "prompt", "push", "end")
    assert all("unusable session: it belongs to another person" in line for line in lines)
    assert "HTTP 409 conflict" in lines[0]
    assert "HTTP 403 permission_denied: This is another person's session" in lines[1]
