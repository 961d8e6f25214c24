"""Reachability checks for /healthz: database, broker and the most recent worker heartbeat."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from memoryhub.celery import app as celery_app
from memoryhub.core.selectors import worker_status

logger = logging.getLogger(__name__)


def _failure(part: str, exc: Exception) -> str:
    """The error's kind for the unauthenticated answer; its text (hosts, ports, users) goes to
    the log only."""
    logger.warning("healthz: %s unreachable: %s: %s", part, type(exc).__name__, exc)
    return type(exc).__name__


def _check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "unreachable"
        return {"ok": False, "error": _failure("database", exc)}
    return {"ok": True, "vendor": connection.vendor}


def _check_broker() -> dict[str, Any]:
    transport = settings.CELERY_BROKER_URL.split("://", 1)[0]
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # kombu raises many types for "cannot connect"
        return {"ok": False, "transport": transport, "error": _failure("broker", exc)}
    return {"ok": True, "transport": transport}


@require_safe  # GET and HEAD: load balancers probe with either
def healthz(request: HttpRequest) -> JsonResponse:
    database = _check_database()
    broker = _check_broker()
    worker = worker_status() if database["ok"] else {"seen": False}
    healthy = database["ok"] and broker["ok"]
    body = {
        "status": "ok" if healthy else "unavailable",
        "database": database,
        "broker": broker,
        "worker": worker,
    }
    return JsonResponse(body, status=200 if healthy else 503)
