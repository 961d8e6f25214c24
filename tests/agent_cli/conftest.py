"""The CLI as agents run it: the installed `memoryhub-agent` in a subprocess, against a live
server over real HTTP, with its own HOME, config and state directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from projects.models import Project

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SRC = ROOT / "clients" / "python"
FIXTURES = ROOT / "tests" / "sessions" / "fixtures"
# Generous: a CLI that hangs fails the test instead of hanging it. Timing itself is not
# asserted; the log says which budget ended a command.
HANG_SECONDS = 60


def cli_command() -> list[str]:
    """The console script `make install` puts next to the interpreter, or another install
    (MEMORYHUB_AGENT_CLI=/path/to/venv-py3.9/bin/memoryhub-agent checks an older Python)."""
    script = Path(
        os.environ.get("MEMORYHUB_AGENT_CLI") or Path(sys.executable).parent / "memoryhub-agent"
    )
    assert script.exists(), "memoryhub-agent is not installed: run `make install`"
    return [str(script)]


@dataclass
class Agent:
    """One developer's machine: a home directory, and the settings their hooks see."""

    home: Path
    env: dict[str, str]

    @property
    def log(self) -> Path:
        return self.home / "state" / "memoryhub" / "agent.log"

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def run(
        self, *args: str, payload: dict[str, Any] | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        text = json.dumps(payload) if payload is not None else (stdin or "")
        return subprocess.run(
            [*cli_command(), *args],
            input=text,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=HANG_SECONDS,
            check=False,
        )


def make_agent(tmp: Path, **settings: str) -> Agent:
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYHUB_")}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp / "home" / "config"),
        "XDG_STATE_HOME": str(tmp / "home" / "state"),
        **{f"MEMORYHUB_{k.upper()}": v for k, v in settings.items()},
    }
    return Agent(home=home, env=env)


def raw_token(user: User, project: Project | None = None) -> str:
    _, raw = token_create(
        user=user, name="laptop", project=project, read_only=False, actor=Actor.for_system("t")
    )
    return raw


def hook_input(event: str, session_id: str, transcript: Path, **fields: Any) -> dict[str, Any]:
    """The JSON Claude Code writes to a hook's stdin (code.claude.com/docs/en/hooks)."""
    data: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": "/home/dev/src/inventory-api",
        "hook_event_name": event,
    }
    if event in ("UserPromptSubmit", "PreToolUse", "Stop", "PreCompact"):
        data["permission_mode"] = "default"
    return data | fields


@pytest.fixture
def alice_agent(live_server: Any, alice: User, project: Project, tmp_path: Path) -> Agent:
    return make_agent(
        tmp_path / "alice",
        url=live_server.url,
        token=raw_token(alice, project),
        project="alpha",
    )


@pytest.fixture
def bob_agent(live_server: Any, bob: User, project: Project, tmp_path: Path) -> Agent:
    return make_agent(
        tmp_path / "bob", url=live_server.url, token=raw_token(bob, project), project="alpha"
    )
