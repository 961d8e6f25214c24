"""Security settings from the environment: the deploy check is clean with production-like
values, every answer carries the protective headers, and /healthz answers probes' HEAD."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.test import Client

ROOT = Path(__file__).resolve().parents[2]

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(60),
    "ALLOWED_HOSTS": "memory.example.com",
    "BEHIND_TLS_PROXY": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_COOKIES": "true",
}


def _clean(environ: Any) -> dict[str, str]:
    # Browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; no deployment has it.
    return {k: v for k, v in environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}


def _deploy_check(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 — fixed argv
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_clean(os.environ) | {"MEMORYHUB_VAR_DIR": str(tmp_path)} | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_deploy_check_is_clean_with_production_settings(tmp_path: Path) -> None:
    result = _deploy_check(PRODUCTION, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_deploy_check_flags_plain_http_cookies(tmp_path: Path) -> None:
    # The check is real: without secure cookies it fails.
    result = _deploy_check(PRODUCTION | {"SECURE_COOKIES": "false"}, tmp_path)
    assert result.returncode != 0
    assert "security.W012" in result.stdout + result.stderr


def test_answers_carry_protective_headers(db: None, client: Client) -> None:
    for path in ("/healthz", "/api/v1/projects/", "/"):
        response = client.get(path)
        assert response["X-Content-Type-Options"] == "nosniff", path
        assert response["Referrer-Policy"] == "same-origin", path
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert "script-src 'self'" in page["Content-Security-Policy"]


def test_healthz_answers_head(db: None, client: Client) -> None:
    response = client.head("/healthz")
    assert response.status_code in (200, 503)
    assert response["Content-Type"] == "application/json"
    assert client.post("/healthz").status_code == 405


def test_pages_may_not_be_framed(db: None, client: Client) -> None:
    assert client.get("/")["X-Frame-Options"] == "DENY"
