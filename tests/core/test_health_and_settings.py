from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]


def test_healthz_reports_database_and_broker(db: None) -> None:
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    expected = "redis" if django_settings.CELERY_BROKER_URL.startswith("redis") else "filesystem"
    assert body["broker"] == {"ok": True, "transport": expected}


def test_healthz_fails_when_the_broker_is_unreachable(db: None, settings: Any) -> None:
    from memoryhub.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # type: ignore[misc]  # nothing listens on port 1
    try:
        response = APIClient().get("/healthz")
    finally:
        app.conf.broker_url = original  # type: ignore[misc]
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["broker"]["ok"] is False


def _start_django(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG must be a boolean"),
        ("API_MAX_BODY_BYTES", "lots", "API_MAX_BODY_BYTES must be an integer"),
        ("API_PAGE_SIZE", "0", "API_PAGE_SIZE must be >= 1"),
        ("DATABASE_URL", "mysql://x@y/z", "DATABASE_URL must be postgres"),
        ("CELERY_BROKER_URL", "amqp://guest@localhost//", "must be redis"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL must be one of"),
        ("SECRET_KEY_FILE", "/nonexistent/secret", "cannot be read"),
    ],
)
def test_malformed_configuration_fails_loudly_at_start(name: str, value: str, message: str) -> None:
    result = _start_django(**{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_well_formed_configuration_starts() -> None:
    result = _start_django(DEBUG="yes", API_PAGE_SIZE="10")
    assert result.returncode == 0, result.stderr
