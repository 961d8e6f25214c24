"""Transcripts exactly as oh-my-pi's Hindsight backend retains them (reference §2.3–2.5):
`full-session` mode, one item per session with document_id = the session id, context "omp",
metadata {session_id}, tags ["project:<repo>"], async, every message framed as
[role: …] / [timestamp: …] / text / [<role>:end] and messages joined by blank lines."""

from __future__ import annotations

from typing import Any

TURNS: list[tuple[str, str, str]] = [
    (
        "user",
        "2026-11-30T04:30:51.065Z",
        "Our CI runs the tests with pytest-xdist on four workers.",
    ),
    ("assistant", "2026-11-30T04:30:58.120Z", "Noted: pytest-xdist with -n 4 in CI."),
    ("user", "2026-11-30T04:31:20.500Z", "Never force-push to main; open a pull request instead."),
    ("assistant", "2026-11-30T04:31:25.010Z", "Understood, no force-push to main."),
    ("user", "2026-11-30T04:32:02.300Z", "The staging database is PostgreSQL 15 on port 55433."),
    ("assistant", "2026-11-30T04:32:09.900Z", "Got it: staging is PostgreSQL 15 on 55433."),
]
MORE_TURNS: list[tuple[str, str, str]] = [
    ("user", "2026-11-30T04:40:00.000Z", "I prefer small commits with imperative messages."),
    ("assistant", "2026-11-30T04:40:05.000Z", "Small commits, imperative messages: will do."),
    ("user", "2026-11-30T04:41:00.000Z", "Deploys go out with make deploy from the main branch."),
    ("assistant", "2026-11-30T04:41:04.000Z", "Deploys: make deploy from main."),
]


def frame(turns: list[tuple[str, str, str]]) -> str:
    return "\n\n".join(
        f"[role: {role}]\n[timestamp: {stamp}]\n{text}\n[{role}:end]" for role, stamp, text in turns
    )


def full_session_body(
    session_id: str, project: str, turns: list[tuple[str, str, str]]
) -> dict[str, Any]:
    """The JSON body oh-my-pi POSTs to /v1/default/banks/omp/memories (undefined keys pruned)."""
    return {
        "items": [
            {
                "content": frame(turns),
                "timestamp": "2026-11-30T04:30:50.304+00:00",
                "context": "omp",
                "metadata": {"session_id": session_id},
                "document_id": session_id,
                "tags": [f"project:{project}"],
            }
        ],
        "async": True,
    }
