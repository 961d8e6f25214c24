"""Reads of core's own tables."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from memoryhub.core.models import WorkerHeartbeat


def worker_status() -> dict[str, Any]:
    beat = WorkerHeartbeat.objects.order_by("-last_seen").first()
    if beat is None:
        return {"seen": False}
    age = (timezone.now() - beat.last_seen).total_seconds()
    # Three missed heartbeats in a row means no worker is consuming.
    return {
        "seen": True,
        "hostname": beat.hostname,
        "seconds_since_heartbeat": round(age, 1),
        "alive": age <= 3 * settings.WORKER_HEARTBEAT_SECONDS,
    }
