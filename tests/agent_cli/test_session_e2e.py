"""Whole Claude Code sessions played through the hooks against a live server and a real Celery
worker (offline LLM provider): what one session teaches, the next one starts with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rest_framework.test import APIClient

from memoryhub.memories.models import Memory
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.agent_cli.claude_code import ClaudeCodeTranscript
from tests.agent_cli.conftest import Agent, hook_input
from tests.worker import Worker, wait_for

ALICE_1 = "2c1b0a9f-8e7d-4c6b-9a5f-4e3d2c1b0a9f"
ALICE_2 = "7f6e5d4c-3b2a-4918-8f7e-6d5c4b3a2918"
BOB_1 = "4e5f6a7b-8c9d-4eaf-8b1c-2d3e4f5a6b7c"
PADDING = " The prune command walks every warehouse and checks each item's expiry date." * 30


def hook(agent: Agent, command: str, event: str, sid: str, path: Path, **fields: Any) -> str:
    result = agent.run(command, payload=hook_input(event, sid, path, **fields))
    assert (result.returncode, result.stderr) == (0, ""), agent.log_text()
    return result.stdout


def pipeline_memories(project: Project, session: str) -> list[Memory]:
    return list(Memory.objects.filter(project=project, source_session=session))


def test_end_starts_the_extraction_of_the_pushed_transcript(
    celery_worker: Worker, alice_agent: Agent, project: Project, tmp_path: Path
) -> None:
    transcript = ClaudeCodeTranscript(tmp_path / f"{ALICE_1}.jsonl", ALICE_1)
    hook(alice_agent, "session-start", "SessionStart", ALICE_1, transcript.path, source="startup")
    transcript.user("We use PostgreSQL 15 for the main database. Add an index on expires_at.")
    transcript.bash("python manage.py makemigrations stock", "Migrations for 'stock': 0007")
    transcript.say("Added the index in migration 0007.")
    hook(alice_agent, "push", "Stop", ALICE_1, transcript.path, stop_hook_active=False)
    celery_worker.start()

    hook(alice_agent, "end", "SessionEnd", ALICE_1, transcript.path, reason="prompt_input_exit")

    # No beat and no scan here: the end hook itself queued the session's extraction.
    assert wait_for(lambda: bool(pipeline_memories(project, ALICE_1)), timeout=90), list(
        Job.objects.values("kind", "status", "last_error")
    )
    contents = [m.content for m in pipeline_memories(project, ALICE_1)]
    assert any("PostgreSQL 15" in c for c in contents), contents
    assert all(m.created_via == "pipeline" for m in pipeline_memories(project, ALICE_1))


def test_a_whole_session_through_the_hooks_and_the_next_one_starts_with_its_memories(
    celery_worker: Worker,
    alice_agent: Agent,
    bob_agent: Agent,
    project: Project,
    tmp_path: Path,
    charlie_client: APIClient,
) -> None:
    celery_worker.start()
    # The team already knows one thing: bob told it.
    told = bob_agent.run(
        "remember",
        "Deploys of inventory-api go through `make release`, never by hand.",
        "--kind",
        "rule",
        "--keywords",
        "deploy,release,inventory-api",
        "--importance",
        "3",
    )
    assert told.returncode == 0, told.stderr

    # Alice's session: start, two turns, a compaction, one more turn, the end.
    t = ClaudeCodeTranscript(tmp_path / "projects" / f"{ALICE_1}.jsonl", ALICE_1)
    start = hook(alice_agent, "session-start", "SessionStart", ALICE_1, t.path, source="startup")
    assert "make release" in start

    prompt = "How do we deploy inventory-api after this change?"
    recalled = hook(alice_agent, "prompt", "UserPromptSubmit", ALICE_1, t.path, prompt=prompt)
    assert recalled == ""  # the session-start payload already showed it: not repeated
    t.snapshot()
    t.user(prompt + PADDING)
    t.say("With `make release`, as the team rule says." + PADDING)
    hook(alice_agent, "push", "Stop", ALICE_1, t.path, stop_hook_active=False)

    prompt = "We use PostgreSQL 15 for the main database. Never force-push to main."
    assert hook(alice_agent, "prompt", "UserPromptSubmit", ALICE_1, t.path, prompt=prompt) == ""
    t.user(prompt + PADDING)
    t.bash("pytest -x stock", "42 passed in 3.10s")
    t.say("Noted; the tests pass." + PADDING)
    for n in range(4):
        t.user(f"Now tidy module {n} of the pruning code." + PADDING)
        t.say(f"Tidied module {n}." + PADDING)
    hook(alice_agent, "push", "Stop", ALICE_1, t.path, stop_hook_active=False)

    hook(alice_agent, "pre-compact", "PreCompact", ALICE_1, t.path, trigger="auto")
    t.compacted("1. Request: tidy the pruning code. 2. PostgreSQL 15; never force-push.")
    after = hook(alice_agent, "session-start", "SessionStart", ALICE_1, t.path, source="compact")
    assert "make release" in after  # re-injected after the compaction

    t.user("Last thing: add a changelog entry.")
    t.say("Added it.")
    hook(alice_agent, "end", "SessionEnd", ALICE_1, t.path, reason="prompt_input_exit")

    # The transcript is on the server: what the file holds, plus the boundary the
    # pre-compact hook recorded, and nothing twice.
    session = AgentSession.objects.get(project=project, external_id=ALICE_1)
    stored = list(SessionRecord.objects.filter(session=session).order_by("index"))
    ours = [r for r in stored if r.seq is None]
    assert [r.type for r in ours] == ["compact_boundary"]
    imported = charlie_client.post(
        "/api/v1/projects/charlie-lab/sessions/import/",
        t.path.read_bytes(),
        content_type="application/x-ndjson",
    )
    assert imported.status_code == 201, imported.content
    whole = SessionRecord.objects.filter(session__project__slug="charlie-lab").order_by("index")

    def shape(rows: Any) -> list[tuple[str, str]]:
        return [(r.type, json.dumps(r.content, sort_keys=True)) for r in rows]

    assert shape(r for r in stored if r.seq is not None) == shape(whole)
    assert session.status == "ended"

    # The worker learns from it…
    assert wait_for(
        lambda: any("PostgreSQL 15" in m.content for m in pipeline_memories(project, ALICE_1)),
        timeout=90,
    ), list(Job.objects.values("kind", "status", "last_error"))

    # …and the next sessions start with it: bob's (the team's project memories) and alice's.
    bob_start = hook(bob_agent, "session-start", "SessionStart", BOB_1, t.path, source="startup")
    assert "PostgreSQL 15" in bob_start
    assert "make release" in bob_start
    alice_next = hook(
        alice_agent, "session-start", "SessionStart", ALICE_2, t.path, source="startup"
    )
    assert "PostgreSQL 15" in alice_next
    assert "force-push" in alice_next
