"""The secret-leak audit: the whole secret corpus (tests/secrets_corpus.py) pushed through every
ingestion path, then looked for everywhere it could have gone — zero found.

Paths: session create, append and import; memory create, update and bulk; recall files (put and
sync); instructions (file, tree, personal); Hindsight retain; MCP `memory_remember` through the
official SDK client on a live server; seed-format imports (a MewCode workspace and an oh-my-pi
memory root); and the pipeline, extracting the transcript with a real Celery worker and
consolidating the bank.

Places: every row of every table (as dumpdata writes them: every text and JSON column,
artifacts included), every API answer of the run, injection payloads of each profile, search
and recall results, every export format and the project backup, and the logs (this process',
the worker's, the MCP server's). A canary — an ordinary string sent along with the secrets —
must be found in each place, so a place that stored or showed nothing cannot pass.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from mcp import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.core.test_redaction_everywhere import stored
from tests.integrations.mcp.conftest import HttpServer, mcp_http_server, over_http, raw_token
from tests.secrets_corpus import SAMPLES
from tests.worker import Worker, wait_for

__all__ = ["mcp_http_server"]  # the live MCP server fixture, used below

P = "/api/v1/projects/alpha/"
CANARY = "canary-pelican-7731"
SECRETS = sorted({s.secret_value for s in SAMPLES})
KINDS = sorted({s.kind for s in SAMPLES})
BLOCKS = [f"{CANARY} {s.kind}:\n{s.context_text}" for s in SAMPLES]
CORPUS = "\n\n".join(BLOCKS)
# One line per sample (the line holding its secret), for formats with one memory per line.
LINES = [
    f"{CANARY} {next(line for line in s.context_text.splitlines() if s.secret_value in line)}"
    for s in SAMPLES
    if any(s.secret_value in line for line in s.context_text.splitlines())
]


def chunks(size: int = 15_000) -> list[str]:
    """The corpus in parts of at most `size` characters, cut between samples only (a secret
    cut from its context would be a test artefact, not a leak)."""
    parts: list[str] = []
    for block in BLOCKS:
        if parts and len(parts[-1]) + len(block) + 2 <= size:
            parts[-1] += "\n\n" + block
        else:
            parts.append(block)
    return parts


def found(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


class Audit:
    """Every answer of the run, kept to be searched."""

    def __init__(self) -> None:
        self.answers: list[str] = []

    def ok(self, response: Any) -> Any:
        assert 200 <= response.status_code < 300, response.content[:800]
        content = (
            b"".join(response.streaming_content)
            if getattr(response, "streaming", False)
            else response.content
        )
        self.answers.append(unpack(content))
        return response


def unpack(content: bytes) -> str:
    """A zip's or gzip's members, or the body, as text."""
    if content[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            return "\n".join(archive.read(n).decode("utf-8", "replace") for n in archive.namelist())
    if content[:2] == b"\x1f\x8b":
        return gzip.decompress(content).decode("utf-8", "replace")
    text = content.decode("utf-8", "replace")
    try:  # JSON with its \uXXXX escapes undone, so a secret cannot hide behind them
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return text


def zip_of(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return out.getvalue()


def test_the_corpus_is_large_enough() -> None:
    assert len(KINDS) >= 30, KINDS
    assert len(LINES) >= 30


@pytest.mark.django_db(transaction=True)
def test_no_secret_survives_any_ingestion_path(
    celery_worker: Worker,
    mcp_http_server: HttpServer,
    alice: User,
    project: Project,
    alice_client: APIClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What the server side logs (this process runs the API views); not the test's own clients,
    # whose debug output echoes what they send.
    caplog.set_level(logging.INFO)
    for name in ("memoryhub", "accounts", "projects", "django"):
        caplog.set_level(logging.DEBUG, logger=name)
    audit = Audit()
    ok = audit.ok
    api = alice_client

    # --- sessions: create, append, import ------------------------------------------------------
    ok(api.post(P + "sessions/", {"external_id": "leak", "title": CANARY}, format="json"))
    records = [{"type": "user", "content": part} for part in chunks(4_000)]
    records += [{"type": "assistant", "content": line} for line in LINES]
    ok(api.post(P + "sessions/leak/records/", records, format="json"))
    transcript = "\n".join(json.dumps({"type": "user", "content": c}) for c in chunks())
    ok(
        api.post(
            P + "sessions/import/",
            {"transcript": SimpleUploadedFile("imported.jsonl", transcript.encode())},
            format="multipart",
        )
    )
    # --- memories: create, update, bulk --------------------------------------------------------
    first = ok(
        api.post(P + "memories/", {"kind": "fact", "content": LINES[0]}, format="json")
    ).json()["id"]
    for part in chunks():
        ok(api.post(P + "memories/", {"kind": "fact", "content": part}, format="json"))
    ok(api.patch(P + f"memories/{first}/", {"content": chunks()[-1]}, format="json"))
    bulk = [{"kind": "fact", "content": line, "keywords": ["leak"]} for line in LINES]
    ok(api.post(P + "memories/bulk/", {"items": bulk}, format="json"))
    # --- recall files and instructions ---------------------------------------------------------
    ok(api.put(P + "recall-files/project/leak.md", {"content": CORPUS}, format="json"))
    sync = [{"path": "mine.md", "content": CORPUS}]
    ok(api.post(P + "recall-files/sync/", {"scope": "user", "files": sync}, format="json"))
    ok(api.put(P + "instructions/files/MEWCODE.md", {"content": CORPUS}, format="json"))
    tree = {"files": {"docs/ops.md": CORPUS}}
    ok(api.post(P + "instructions/tree/", tree, format="json"))
    ok(api.put(P + "instructions/user/", {"content": CORPUS}, format="json"))
    # --- Hindsight retain ----------------------------------------------------------------------
    items = [{"content": part, "document_id": "hs-leak"} for part in chunks(8_000)]
    ok(api.post("/v1/default/banks/alpha/memories", {"items": items}, format="json"))
    # --- seed formats: a MewCode workspace and an oh-my-pi memory root --------------------------
    mewcode = {
        "MEWCODE.md": CORPUS,
        ".mewcode/memories.md": "### 项目知识\n" + "".join(f"- {line}\n" for line in LINES),
        ".mewcode/memory/ops.md": f"---\nname: ops\ndescription: {CANARY}\n---\n{CORPUS}",
        ".mewcode/sessions/mc-leak.jsonl": transcript,
    }
    ok(
        api.post(
            P + "interchange/mewcode/import/",
            {"file": SimpleUploadedFile("ws.zip", zip_of(mewcode))},
            format="multipart",
        )
    )
    omp = {
        "MEMORY.md": CORPUS,
        "learned.md": "".join(f"- {line} _(context: ops)_\n" for line in LINES),
    }
    ok(
        api.post(
            P + "interchange/omp/import/",
            {"file": SimpleUploadedFile("root.zip", zip_of(omp))},
            format="multipart",
        )
    )

    # --- MCP remember through the official SDK client ------------------------------------------
    async def remember(client: Client) -> list[Any]:
        results = []
        # A few calls (the test server's token rate limit is low), every line in one of them.
        for part in ["\n".join(LINES[i : i + 16]) for i in range(0, len(LINES), 16)]:
            result = await client.call_tool(
                "memory_remember",
                {"content": part, "keywords": ["mcp", "ops"], "importance": 2, "project": "alpha"},
            )
            assert not result.is_error, result
            results.append(result.model_dump_json())
        return results

    audit.answers += over_http(mcp_http_server.url(), raw_token(alice), remember)

    # --- the pipeline: extraction by a real worker, then consolidation -------------------------
    celery_worker.start()
    ok(api.post(P + "sessions/leak/extract/"))
    assert wait_for(lambda: Job.objects.filter(kind="stage1", status="done").exists(), 120), list(
        Job.objects.values("kind", "status", "last_error")
    )
    ok(api.post(P + "bank/enqueue/"))
    assert wait_for(lambda: Job.objects.filter(kind="stage2", status="done").exists(), 120), list(
        Job.objects.values("kind", "status", "last_error")
    )

    # --- read everything back ------------------------------------------------------------------
    for query in ("password", "token", "key", "secret", "aws", "staging", CANARY):
        ok(api.get(P + "memories/search/", {"q": query, "k": "50"}))
        ok(api.post(P + "recall/", {"query": query, "session_id": "leak"}, format="json"))
        ok(api.post("/v1/default/banks/alpha/memories/recall", {"query": query}, format="json"))
    for profile in ("mewcode", "omp", "meow"):
        ok(api.get(P + "injection/", {"profile": profile, "format": "text", "session_id": "leak"}))
    for path in ("memories/", "sessions/leak/records/", "sessions/leak/resume/", "artifacts/"):
        ok(api.get(P + path))
    listing = api.get(P + "artifacts/").json()
    for item in listing["results"] if isinstance(listing, dict) else listing:
        ok(api.get(P + f"artifacts/{item['path']}"))
    ok(api.get(P + "instructions/"))
    ok(api.get(P + "recall-files/project/leak.md"))
    ok(api.get(P + "bank/stats/"))
    for fmt in ("mewcode", "claude_code", "meow", "omp"):
        ok(api.get(P + f"interchange/{fmt}/export/"))
    ok(api.get(P + "backup/"))

    celery_worker.stop_all()
    worker_logs = "".join(p.stdout.read() for p in celery_worker.procs if p.stdout)
    places = {
        "database": stored(),
        "API answers, exports and the backup": "\n".join(audit.answers),
        "logs": caplog.text + worker_logs + mcp_http_server.log.read_text(errors="replace"),
    }
    leaks = {place: found(text) for place, text in places.items()}
    assert leaks == dict.fromkeys(places, []), {k: v[:5] for k, v in leaks.items() if v}
    # The places held what was sent: the canary went everywhere the secrets went.
    assert CANARY in places["database"]
    assert CANARY in places["API answers, exports and the backup"]
    assert "[REDACTED" in places["database"]
