"""Property-based fuzzing of our OpenAPI documents with schemathesis, over real HTTP: /api/schema/
and the Hindsight-compatible routes' own /v1/openapi.json.

Every operation gets schema examples, the coverage phase (boundary and invalid
values) and random fuzzing against a live server holding a real project, memory, session and
token, so that path parameters reach real rows. The checks: no 5xx, every status code and
content type documented, every body conforms to its documented schema. The number of examples
per operation is bounded (FUZZ_EXAMPLES, default 8) so the run fits CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create

ST = Path(sys.executable).parent / "st"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
    ]
)


def _config(tmp_path: Path, **path_params: str) -> Path:
    lines = ["[generation]", "with-security-parameters = false", "", "[parameters]"]
    lines += [f'"path.{name}" = "{value}"' for name, value in path_params.items()]
    config = tmp_path / "schemathesis.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


@pytest.mark.django_db(transaction=True)
def test_every_operation_survives_fuzzing(
    live_server: Any, alice: User, bob: User, project: Any, tmp_path: Path
) -> None:
    _, raw = token_create(user=alice, name="fuzz", actor=Actor.for_system("test"))
    # The rows the path parameters name are made through the API itself.
    headers = {"Authorization": f"Bearer {raw}"}
    with httpx.Client(base_url=f"{live_server.url}/api/v1/", headers=headers) as http:
        base = f"projects/{project.slug}/"
        memory = http.post(
            base + "memories/",
            json={"kind": "project", "content": "Deploy with make deploy after the tests pass."},
        )
        assert memory.status_code == 201, memory.text
        session = http.post(base + "sessions/", json={"external_id": "fuzz-session"})
        assert session.status_code in (200, 201), session.text
        spare = http.post("tokens/", json={"name": "spare"})
        assert spare.status_code == 201, spare.text
    config = _config(
        tmp_path,
        slug=project.slug,
        memory_id=memory.json()["id"],
        ref="fuzz-session",
        token_id=spare.json()["id"],
        username=bob.username,
        scope="project",
        path="notes/fuzz.md",
    )
    run_schemathesis(f"{live_server.url}/api/schema/", raw, config)


@pytest.mark.django_db(transaction=True)
def test_every_hindsight_operation_survives_fuzzing(
    live_server: Any, alice: User, project: Any, tmp_path: Path
) -> None:
    """The Hindsight-compatible routes, from their own document (/v1/openapi.json), on a bank
    holding a retained document, a memory and a mental model."""
    _, raw = token_create(user=alice, name="fuzz", actor=Actor.for_system("test"))
    headers = {"Authorization": f"Bearer {raw}"}
    bank = f"{live_server.url}/v1/default/banks/{project.slug}"
    with httpx.Client(headers=headers) as http:
        retained = http.post(
            bank + "/memories",
            json={"items": [{"content": "Deploy with make deploy.", "document_id": "fuzz-doc"}]},
        )
        assert retained.status_code == 200, retained.text
        model = http.post(
            bank + "/mental-models",
            json={"id": "fuzz-model", "name": "Deploys", "source_query": "deploy"},
        )
        assert model.status_code == 200, model.text
        memory = http.post(
            f"{live_server.url}/api/v1/projects/{project.slug}/memories/",
            json={"kind": "project", "content": "Deploy with make deploy after the tests pass."},
        )
        assert memory.status_code == 201, memory.text
    config = _config(
        tmp_path,
        bank_id=project.slug,
        memory_id=memory.json()["id"],
        document_id="fuzz-doc",
        model_id="fuzz-model",
        operation_id=retained.json()["operation_id"],
    )
    run_schemathesis(f"{live_server.url}/v1/openapi.json", raw, config)


def run_schemathesis(schema_url: str, token: str, config: Path) -> None:
    """`st run` over the document at schema_url; fails the test with its report."""
    done = subprocess.run(  # noqa: S603 — fixed argv
        [
            str(ST),
            "--config-file",
            str(config),
            "run",
            schema_url,
            "--header",
            f"Authorization: Bearer {token}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            str(EXAMPLES),
            "--generation-deterministic",
            "--suppress-health-check",
            "all",
            "--workers",
            "1",
            "--request-timeout",
            "30",
        ],
        env=os.environ
        | {"SCHEMATHESIS_HOOKS": str(Path(__file__).with_name("schemathesis_hooks.py"))},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert "API Operations" in output, output[-5000:]
    assert done.returncode == 0, output[-20000:]
