"""login writes the settings for the user only; status, search and remember use them."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from accounts.models import User
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.agent_cli.conftest import Agent, hook_input, make_agent, raw_token

SID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"


def test_login_saves_a_config_only_its_owner_can_read(
    live_server: Any, alice: User, project: Project, tmp_path: Path
) -> None:
    agent = make_agent(tmp_path)  # nothing in the environment
    token = raw_token(alice, project)

    # The token on stdin, not on the command line (where shell history would keep it).
    result = agent.run("login", "--url", live_server.url, "--project", "alpha", stdin=token)

    assert result.returncode == 0, result.stderr
    assert "as alice (project alpha)" in result.stdout
    path = agent.home / "config" / "memoryhub" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {
        "project": "alpha",
        "token": token,
        "url": live_server.url,
    }
    status = agent.run("status")
    assert status.returncode == 0, status.stderr
    assert "user:        alice" in status.stdout
    assert token not in status.stdout  # only its prefix
    start = agent.run("session-start", payload=hook_input("SessionStart", SID, tmp_path / "x"))
    assert (start.returncode, agent.log_text()) == (0, "")


def test_login_with_a_bad_token_saves_nothing(
    live_server: Any, project: Project, tmp_path: Path
) -> None:
    agent = make_agent(tmp_path)
    result = agent.run(
        "login", "--url", live_server.url, "--project", "alpha", "--token", "mh_rw_nope"
    )
    assert result.returncode == 1
    assert "HTTP 401" in result.stderr
    assert not (agent.home / "config" / "memoryhub" / "config.json").exists()


def test_login_to_a_project_you_cannot_see_saves_nothing(
    live_server: Any, charlie: User, project: Project, tmp_path: Path
) -> None:
    agent = make_agent(tmp_path)
    token = raw_token(charlie)
    result = agent.run("login", "--url", live_server.url, "--project", "alpha", "--token", token)
    assert result.returncode == 1
    assert "HTTP 404" in result.stderr
    assert not (agent.home / "config" / "memoryhub" / "config.json").exists()


def test_the_environment_overrides_the_config_file(
    live_server: Any, alice: User, project: Project, tmp_path: Path
) -> None:
    agent = make_agent(tmp_path)
    agent.run("login", "--url", live_server.url, "--project", "alpha", stdin=raw_token(alice))
    agent.env["MEMORYHUB_PROJECT"] = "no-such-project"
    result = agent.run("status")
    assert result.returncode == 1
    assert "project:     no-such-project" in result.stdout
    assert "HTTP 404" in result.stderr


def test_remember_then_search(alice_agent: Agent, project: Project) -> None:
    remembered = alice_agent.run(
        "remember",
        "The",
        "billing",
        "service",
        "retries",
        "webhooks",
        "five",
        "times.",
        "--kind",
        "fact",
        "--keywords",
        "billing,webhook,retry",
        "--importance",
        "3",
    )
    assert remembered.returncode == 0, remembered.stderr
    memory = Memory.objects.get(project=project)
    assert (memory.content, memory.kind, memory.importance) == (
        "The billing service retries webhooks five times.",
        "fact",
        3,
    )
    assert memory.keywords == ["billing", "webhook", "retry"]
    assert str(memory.public_id) in remembered.stdout

    found = alice_agent.run("search", "webhook", "retries", "--json")
    assert found.returncode == 0, found.stderr
    (row,) = json.loads(found.stdout)
    assert row["id"] == str(memory.public_id)
    listed = alice_agent.run("search", "billing")
    assert listed.stdout.startswith("- [fact] The billing service retries webhooks five times.")
