"""Redis (the broker and the rate-limit store) stops while agents keep working: appends, reads
and writes still succeed, and the extraction they made due is not lost — once Redis is back,
the next scan (beat's, every PIPELINE_SCAN_SECONDS) sends it and a worker runs it once."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.memories.models import Memory
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.pipeline.test_pipeline_e2e import TRANSCRIPT
from tests.reliability.servers import ROOT, free_port, gunicorn, stop_group
from tests.worker import database_url_of_test_db, wait_for

REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS is None, reason="needs redis-server (CI installs it)")


class RedisServer:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS is not None
        self.proc = subprocess.Popen(  # noqa: S603 — fixed argv
            [
                REDIS,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert wait_for(self._answers, timeout=20), "redis-server did not start"

    def _answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # an outage, not a clean shutdown
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def worker(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(  # noqa: S603 — fixed argv
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryhub",
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=WARNING",
            f"--hostname=outage-{uuid.uuid4().hex[:6]}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        stop_group(proc)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_work_made_during_a_redis_outage_runs_once_redis_is_back(
    alice: User, project: Project, tmp_path: Path
) -> None:
    redis_server = RedisServer(tmp_path)
    redis_server.start()
    queue = f"outage-{uuid.uuid4().hex[:8]}"
    env = os.environ | {
        "DATABASE_URL": database_url_of_test_db(),
        "REDIS_URL": redis_server.url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "API_TOKEN_RATE_LIMIT": "1200/min",  # limits on: their store is down too
        "DEBUG": "false",
    }
    env.pop("CELERY_BROKER_URL", None)
    _, raw = token_create(user=alice, name="outage", actor=Actor.for_system("test"))
    p = f"/api/v1/projects/{project.slug}/"
    try:
        with (
            gunicorn(env, workers=2) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {raw}"}, timeout=30
            ) as http,
        ):
            assert http.post(p + "sessions/", json={"external_id": "s-out"}).status_code == 201
            redis_server.stop()

            records = [dict(r, seq=i) for i, r in enumerate(TRANSCRIPT, start=1)]
            assert http.post(p + "sessions/s-out/records/", json=records).status_code == 201
            assert http.get(p + "memories/search/", params={"q": "database"}).status_code == 200
            assert http.get(p + "injection/", params={"profile": "mewcode"}).status_code == 200
            made = http.post(p + "memories/", json={"kind": "fact", "content": "Redis was down."})
            assert made.status_code == 201
            assert http.post(p + "sessions/s-out/end/").status_code == 200
            # Beat's scan during the outage: the jobs are recorded, the sends are dropped.
            assert http.post(p + "bank/enqueue/").status_code == 202
            health = http.get("/healthz")
            assert health.status_code == 503 and health.json()["broker"]["ok"] is False
            assert Job.objects.filter(project=project, kind=Job.Kind.STAGE1).count() == 1

            redis_server.start()  # back, empty: every message sent before is gone
            with worker(env):
                assert http.post(p + "bank/enqueue/").status_code == 202  # the next scan
                done = wait_for(
                    lambda: Job.objects.filter(
                        project=project, kind=Job.Kind.STAGE1, status=Job.Status.DONE
                    ).exists(),
                    timeout=120,
                )
                assert done, list(Job.objects.values("kind", "status", "last_error"))
            assert http.get("/healthz").json()["broker"]["ok"] is True
    finally:
        redis_server.stop()
    learned = Memory.objects.filter(project=project, created_via="pipeline")
    # Extracted once: one memory of the rule, none duplicated by a resend.
    assert [m for m in learned if "force-push" in m.content.lower()][1:] == []
    assert any("force-push" in m.content.lower() for m in learned)
    job = Job.objects.get(project=project, kind=Job.Kind.STAGE1)
    assert job.last_error == "" and job.success_watermark == len(TRANSCRIPT)
