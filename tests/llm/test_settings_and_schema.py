from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
# Start each subprocess from a clean LLM environment, whatever the test runner has set.
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}


def _start_django(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=CLEAN_ENV | {"DJANGO_SETTINGS_MODULE": "memoryhub.settings"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LLM_PROVIDER": "foo"}, "LLM_PROVIDER must be one of"),
        ({"LLM_TIMEOUT_SECONDS": "x"}, "LLM_TIMEOUT_SECONDS must be an integer"),
        ({"LLM_MAX_RETRIES": "-1"}, "LLM_MAX_RETRIES must be >= 0"),
        ({"LLM_DAILY_TOKEN_BUDGET": "lots"}, "LLM_DAILY_TOKEN_BUDGET must be an integer"),
        ({"LLM_PROVIDER": "openai"}, "LLM_MODEL is required when LLM_PROVIDER is 'openai'"),
        (
            {"LLM_PROVIDER": "anthropic", "LLM_MODEL": "claude"},
            "LLM_API_KEY (or LLM_API_KEY_FILE) is required",
        ),
        ({"LLM_BASE_URL": "localhost:11434"}, "take http(s)://host"),
        ({"LLM_API_KEY_FILE": "/nonexistent/key"}, "LLM_API_KEY_FILE='/nonexistent/key' cannot"),
    ],
)
def test_it_fails_loudly_on_malformed_llm_settings(env: dict[str, str], message: str) -> None:
    result = _start_django(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_it_starts_with_a_local_server_that_needs_no_key() -> None:
    result = _start_django(
        LLM_PROVIDER="openai",
        LLM_BASE_URL="http://localhost:11434/v1",
        LLM_MODEL="llama3.2",
        LLM_TIMEOUT_SECONDS="30",
    )
    assert result.returncode == 0, result.stderr


def test_it_reads_the_api_key_from_a_file(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-from-file\n")
    code = (
        "import django; django.setup(); from django.conf import settings as s; print(s.LLM_API_KEY)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=CLEAN_ENV
        | {
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
            "LLM_PROVIDER": "openai",
            "LLM_MODEL": "gpt",
            "LLM_API_KEY_FILE": str(key_file),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "sk-from-file"


def test_the_usage_endpoint_is_in_the_openapi_schema(db: None) -> None:
    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    schema = yaml.safe_load(out.getvalue())
    operation = schema["paths"]["/api/v1/projects/{slug}/llm/usage/"]["get"]
    assert operation["operationId"] == "llm_usage"
    usage = schema["components"]["schemas"]["LlmUsageOutput"]
    assert set(usage["required"]) >= {"provider", "models", "today", "state", "recent_calls"}
