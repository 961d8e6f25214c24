"""A real Celery worker process for tests, on the configured broker (Redis in CI, the
filesystem transport on the embedded default) and the test database, consuming a queue of its
own so nothing else can take its tasks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from memoryhub.celery import app

ROOT = Path(__file__).resolve().parents[1]


def database_url_of_test_db() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@dataclass
class Worker:
    queue: str
    env: dict[str, str]
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def start(self, concurrency: int = 1) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryhub",
                "worker",
                "-Q",
                self.queue,
                f"--concurrency={concurrency}",
                "--pool=prefork",
                "--without-gossip",
                "--without-mingle",
                f"--hostname={self.queue}-{len(self.procs)}@%h",
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[str]) -> None:
        """SIGKILL the worker and its pool children: a crash, not a shutdown."""
        os.killpg(proc.pid, 9)
        proc.wait(timeout=20)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()


@pytest.fixture
def celery_worker(transactional_db: None, settings: Any) -> Iterator[Worker]:
    """Start workers with `.start()`; tasks sent by the test go to their queue."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = os.environ | {
        "DATABASE_URL": database_url_of_test_db(),
        "CELERY_TASK_DEFAULT_QUEUE": queue,
    }
    original = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    worker = Worker(queue=queue, env=env)
    try:
        yield worker
    finally:
        app.conf.task_default_queue = original
        worker.stop_all()


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses a real worker is marked `worker`: `make test-fast` leaves them out."""
    for item in items:
        if "celery_worker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.worker)
