from __future__ import annotations

import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from accounts.models import ApiToken, User
from memoryhub.core.models import AuditEvent
from projects.models import ProjectMembership
from tests.conftest import bearer_client


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_project_create_makes_the_owner_when_missing(db: None) -> None:
    out, err = run("project_create", "web-app", "--name", "Web App", "--owner", "erin")
    assert "Created project web-app owned by erin" in out
    assert "password" in err
    assert ProjectMembership.objects.get(project__slug="web-app").user.username == "erin"
    assert AuditEvent.objects.filter(verb="project.created", actor_label="cli").exists()
    with pytest.raises(CommandError, match="not available"):
        run("project_create", "web-app", "--owner", "erin")
    with pytest.raises(CommandError):
        run("project_create", "Bad Slug!")


def test_token_create_prints_only_the_token(db: None) -> None:
    run("project_create", "web-app", "--owner", "erin")
    out, _ = run(
        "token_create", "--user", "erin", "--project", "web-app", "--read-only", "--name", "ci-bot"
    )
    raw = out.strip()
    assert "\n" not in raw and raw.startswith("mh_ro_")
    token = ApiToken.objects.get(name="ci-bot")
    assert token.read_only and token.project is not None
    client: APIClient = bearer_client(raw)
    assert client.get("/api/v1/projects/web-app/memories/").status_code == 200
    assert client.post("/api/v1/projects/web-app/memories/", {}, format="json").status_code == 403
    with pytest.raises(CommandError, match="No user"):
        run("token_create", "--user", "nobody")
    User.objects.create_user("frank")
    with pytest.raises(CommandError, match="not a member"):
        run("token_create", "--user", "frank", "--project", "web-app")


def test_demo_setup_runs_once(db: None) -> None:
    out, _ = run("demo_setup")
    assert "token:    mh_rw_" in out
    again, _ = run("demo_setup")
    assert "exists" in again and "mh_rw_" not in again


def test_demo_setup_prints_the_address_the_server_listens_on(db: None, settings: Any) -> None:
    settings.SITE_URL = "http://0.0.0.0:9123"  # what `make run HOST=0.0.0.0 PORT=9123` passes
    out, _ = run("demo_setup")
    assert "http://0.0.0.0:9123/api/v1/projects/demo/memories/" in out
    assert ":8000" not in out


def test_make_run_passes_its_host_and_port_as_site_url() -> None:
    root = Path(__file__).resolve().parents[2]
    plan = subprocess.run(
        ["make", "-n", "run", "HOST=0.0.0.0", "PORT=9123"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    demo = next(line for line in plan.splitlines() if "demo_setup" in line)
    server = next(line for line in plan.splitlines() if "trap" in line)
    assert "SITE_URL=http://0.0.0.0:9123" in demo and "SITE_URL=http://0.0.0.0:9123" in server
