"""A server that is down never breaks the agent: every hook prints nothing, exits 0 and logs
why, ended by the time budget. No live Django server here: the servers are sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_cli.conftest import FIXTURES, Agent, hook_input, make_agent

SID = "5d1e0c4b-3a2f-4e19-8d7c-6b5a4f3e2d1c"
HOOKS = [
    ("session-start", "SessionStart", {"source": "startup"}),
    ("prompt", "UserPromptSubmit", {"prompt": "Why does prune_stock delete everything?"}),
    ("push", "Stop", {"stop_hook_active": False}),
    ("pre-compact", "PreCompact", {"trigger": "manual", "custom_instructions": ""}),
    ("end", "SessionEnd", {"reason": "logout"}),
]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections (the kernel's backlog does) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


@pytest.fixture
def trickling_server() -> Iterator[int]:
    """Answers one byte every 0.2 s, forever: no single read ever times out, so only the
    command's overall budget can end it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    def trickle(conn: socket.socket) -> None:
        with conn:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 1000:
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        sock.close()


def agent_for(tmp_path: Path, port: int) -> Agent:
    return make_agent(
        tmp_path, url=f"http://127.0.0.1:{port}", token="mh_rw_x", project="alpha", timeout="1"
    )


@pytest.mark.parametrize(("command", "event", "fields"), HOOKS)
def test_a_closed_port_prints_nothing_and_exits_0(
    tmp_path: Path, command: str, event: str, fields: dict[str, object]
) -> None:
    agent = agent_for(tmp_path, closed_port())
    transcript = FIXTURES / "claude_code_session.jsonl"

    result = agent.run(command, payload=hook_input(event, SID, transcript, **fields))

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    log = agent.log_text()
    assert f"{command} session={SID}" in log
    assert "Connection refused" in log


@pytest.mark.parametrize(("command", "event", "fields"), HOOKS)
def test_a_server_that_never_answers_times_out_silently(
    tmp_path: Path, silent_server: int, command: str, event: str, fields: dict[str, object]
) -> None:
    agent = agent_for(tmp_path, silent_server)
    transcript = FIXTURES / "claude_code_session.jsonl"

    result = agent.run(command, payload=hook_input(event, SID, transcript, **fields))

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    log = agent.log_text()
    # The socket timeout (the budget left) normally ends it; on a loaded machine the
    # watchdog (the budget + 0.25 s) may come first. Either way the budget did.
    assert "timed out" in log or f"{command} session={SID}: gave up after 1.25 s" in log, log


def test_a_server_that_trickles_is_cut_off_by_the_budget(
    tmp_path: Path, trickling_server: int
) -> None:
    agent = agent_for(tmp_path, trickling_server)
    payload = hook_input("SessionStart", SID, tmp_path / "t.jsonl", source="startup")

    result = agent.run("session-start", payload=payload)

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert f"session-start session={SID}: gave up after 1.25 s" in agent.log_text()


def test_an_unconfigured_agent_logs_how_to_configure_it(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    result = agent.run("session-start", payload={"session_id": SID, "source": "startup"})
    assert (result.returncode, result.stdout) == (0, "")
    assert "run `memoryhub-agent login`" in agent.log_text()
    assert "MEMORYHUB_URL" in agent.log_text()


def test_the_plain_commands_say_what_went_wrong(tmp_path: Path) -> None:
    agent = agent_for(tmp_path, closed_port())
    result = agent.run("search", "prune")
    assert result.returncode == 1
    assert "Connection refused" in result.stderr
