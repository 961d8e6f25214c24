from __future__ import annotations

from rest_framework.test import APIClient

from memoryhub.core.models import WorkerHeartbeat
from memoryhub.core.tasks import worker_heartbeat
from tests.worker import Worker, wait_for


def test_a_real_worker_runs_tasks_and_healthz_sees_it(celery_worker: Worker) -> None:
    assert APIClient().get("/healthz").json()["worker"] == {"seen": False}
    celery_worker.start()
    worker_heartbeat.delay()
    assert wait_for(
        lambda: WorkerHeartbeat.objects.filter(hostname__startswith=celery_worker.queue).exists()
    ), "the worker never ran the task"
    health = APIClient().get("/healthz").json()
    assert health["worker"]["alive"] is True
    assert health["worker"]["hostname"].startswith(celery_worker.queue)
