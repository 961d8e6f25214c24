"""A real Celery worker process, on the configured broker (Redis in CI, the filesystem
transport on the embedded default) and the test database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memoryhub.core.models import WorkerHeartbeat
from memoryhub.core.tasks import worker_heartbeat

ROOT = Path(__file__).resolve().parents[2]


def _database_url_of_test_db() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.fixture
def worker_queue(transactional_db: None) -> Iterator[str]:
    """Start a worker consuming a queue of its own; yield the queue name; stop the worker."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = os.environ | {"DATABASE_URL": _database_url_of_test_db()}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryhub",
            "worker",
            "-Q",
            queue,
            "--concurrency=1",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            f"--hostname={queue}@%h",
            "--loglevel=WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield queue
    finally:
        proc.terminate()
        try:
            output, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        if proc.returncode not in (0, -15):
            print(output)


def _wait_for(predicate: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return False


@pytest.mark.worker
def test_a_real_worker_runs_tasks_and_healthz_sees_it(worker_queue: str) -> None:
    assert APIClient().get("/healthz").json()["worker"] == {"seen": False}
    worker_heartbeat.apply_async(queue=worker_queue)
    assert _wait_for(
        lambda: WorkerHeartbeat.objects.filter(hostname__startswith=worker_queue).exists()
    ), "the worker never ran the task"
    health = APIClient().get("/healthz").json()
    assert health["worker"]["alive"] is True
    assert health["worker"]["hostname"].startswith(worker_queue)
