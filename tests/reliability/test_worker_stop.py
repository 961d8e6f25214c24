"""`make run`'s worker stops cleanly on SIGTERM, within a few seconds.

It is started with the Makefile's own command line on the embedded default (filesystem broker,
SQLite), in a process group of its own, and the whole group gets SIGTERM — as Ctrl-C's
`make run`'s trap (`kill 0`) and CI's smoke test send it. Before the fix the prefork pool's
children died on that signal and could leave the pool's queue lock taken, so the worker hung
until KILLed, and kombu's filesystem polling alone kept every stop waiting 4–6 s (6–8 s in
all). The bound is behaviour (a prompt, clean stop), generous for a busy machine: a stop takes
1–3 s, and the old transport fails it.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STOP_BOUND_SECONDS = 6
START_BOUND_SECONDS = 90


def run_worker_command() -> list[str]:
    out = subprocess.run(
        ["make", "-s", "run-worker-command"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return shlex.split(out.stdout.strip())


@pytest.mark.worker
def test_make_runs_worker_stops_on_sigterm(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "CELERY_BROKER_URL"}}
    env |= {"DATABASE_URL": "", "MEMORYHUB_VAR_DIR": str(tmp_path)}
    log = (tmp_path / "worker.log").open("w+")
    proc = subprocess.Popen(
        run_worker_command(),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_BOUND_SECONDS
        while "ready." not in (tmp_path / "worker.log").read_text():
            assert proc.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, "the worker never became ready"
            time.sleep(0.2)
        assert "filesystem://" in (tmp_path / "worker.log").read_text()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            code = proc.wait(timeout=STOP_BOUND_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {STOP_BOUND_SECONDS} s after SIGTERM")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    output = (tmp_path / "worker.log").read_text()
    assert code == 0, output
    assert "Warm shutdown" in output
    assert "Traceback" not in output
