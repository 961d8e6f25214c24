"""Importing changed files again: what changed is updated (with history, dated by the file),
what did not change keeps the edits made here; instructions and artifacts keep their source
files' times; a dry run reports and writes nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.memories.models import BankArtifact, Memory, MemoryEvent
from memoryhub.recall.models import InstructionFile
from projects.models import Project
from tests.interchange.helpers import (
    DAY,
    FIXTURE_MTIME,
    MEOW_ROWS,
    T0,
    import_url,
    meow_db,
    tree_files,
    upload,
    zip_bytes,
)

TESTING = "memory/feedback_testing.md"
LATER = FIXTURE_MTIME + timedelta(days=3)


def _testing_memory(project: Project) -> Memory:
    return Memory.objects.get(
        project=project, metadata__external_id="claude_code:feedback_testing.md"
    )


def test_a_changed_topic_file_updates_its_memory_with_history(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("claude_code")
    assert upload(alice_client, "alpha", "claude_code", zip_bytes(files)).status_code == 201
    first = _testing_memory(project)
    files[TESTING] = files[TESTING].replace(b"not mocks.", b"not mocks or fakes.")
    again = upload(alice_client, "alpha", "claude_code", zip_bytes(files, mtime=LATER))
    assert again.status_code == 200, again.content
    body = again.json()
    assert body["created"]["memories"] == 0
    assert body["updated"]["memories"] == 1 and body["unchanged"]["memories"] == 3
    memory = _testing_memory(project)
    assert memory.pk == first.pk and "not mocks or fakes." in memory.content
    assert memory.updated_at == LATER and memory.created_at == first.created_at
    event = MemoryEvent.objects.filter(memory=memory, verb="updated").get()
    assert event.before is not None and event.after is not None
    assert "not mocks." in event.before["content"]
    assert "not mocks or fakes." in event.after["content"]
    assert Memory.objects.filter(project=project).count() == 4


def test_an_unchanged_file_keeps_an_edit_made_here(
    project: Project, alice_client: APIClient
) -> None:
    files = zip_bytes(tree_files("claude_code"))
    upload(alice_client, "alpha", "claude_code", files)
    memory = _testing_memory(project)
    edited = alice_client.patch(
        f"/api/v1/projects/alpha/memories/{memory.public_id}/",
        {"content": "Integration tests use the compose Postgres."},
        format="json",
    )
    assert edited.status_code == 200, edited.content
    again = upload(alice_client, "alpha", "claude_code", files)
    assert again.json()["updated"]["memories"] == 0
    assert _testing_memory(project).content == "Integration tests use the compose Postgres."


def test_a_changed_meow_row_is_updated(
    project: Project, alice_client: APIClient, tmp_path: Path
) -> None:
    db = meow_db(tmp_path / "memory.db")
    assert upload(alice_client, "alpha", "meow", db.read_bytes(), "memory.db").status_code == 201
    position, (table, row) = next((i, tr) for i, tr in enumerate(MEOW_ROWS) if tr[0] == "fact")
    edited_at = T0 + 5 * DAY
    changed = dict(row, content=row["content"] + " (confirmed)", updated_at=edited_at)
    rows = [(t, changed if i == position else r) for i, (t, r) in enumerate(MEOW_ROWS)]
    db2 = meow_db(tmp_path / "memory2.db", rows)
    again = upload(alice_client, "alpha", "meow", db2.read_bytes(), "memory.db")
    assert again.status_code == 200, again.content
    assert again.json()["updated"]["memories"] == 1
    memory = Memory.objects.get(project=project, metadata__external_id=f"meow:{row['id']}")
    assert memory.content.endswith("(confirmed)")
    assert int(memory.updated_at.timestamp() * 1000) == edited_at
    assert table == "fact"


def test_instructions_and_artifacts_keep_their_files_times(
    project: Project, alice_client: APIClient
) -> None:
    upload(alice_client, "alpha", "mewcode", zip_bytes(tree_files("mewcode")))
    files = {f.path: f for f in InstructionFile.objects.filter(project=project)}
    assert files["MEWCODE.md"].updated_at == FIXTURE_MTIME
    assert files["MEWCODE.md"].created_at == FIXTURE_MTIME
    assert files["docs/style.md"].updated_at == FIXTURE_MTIME
    own = InstructionFile.objects.get(project=project, owner__isnull=False)
    assert own.updated_at == FIXTURE_MTIME

    upload(alice_client, "alpha", "omp", zip_bytes(tree_files("omp")))
    artifact = BankArtifact.objects.get(project=project, path="MEMORY.md")
    assert artifact.updated_at == FIXTURE_MTIME and artifact.created_at == FIXTURE_MTIME

    omp = tree_files("omp")
    omp["MEMORY.md"] += b"- Releases are tagged from main.\n"
    again = upload(alice_client, "alpha", "omp", zip_bytes(omp, mtime=LATER))
    assert again.json()["updated"]["artifacts"] == 1
    artifact.refresh_from_db()
    assert artifact.version == 2 and artifact.updated_at == LATER
    assert b"tagged from main" in artifact.content.encode()


def test_a_changed_instruction_file_is_updated_and_audited(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("mewcode")
    upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    files["MEWCODE.md"] += b"\nAlways run the linter.\n"
    again = upload(alice_client, "alpha", "mewcode", zip_bytes(files, mtime=LATER))
    assert again.json()["updated"]["instructions"] == 1
    stored = InstructionFile.objects.get(project=project, owner__isnull=True, path="MEWCODE.md")
    assert stored.content.endswith("Always run the linter.\n") and stored.updated_at == LATER
    assert AuditEvent.objects.filter(project=project, verb="instruction_tree.uploaded").count() == 2


def test_a_dry_run_reports_and_writes_nothing(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    data = zip_bytes(tree_files("claude_code"))
    response = alice_client.post(
        import_url("alpha", "claude_code") + "?dry_run=1",
        data,
        content_type="application/zip",
    )
    assert response.status_code == 200, response.content
    assert response.json()["created"]["memories"] == 4
    assert response.json()["created"]["instructions"] == 3
    assert not Memory.objects.filter(project=project).exists()
    assert not InstructionFile.objects.filter(project=project).exists()
    assert not AuditEvent.objects.filter(project=project, verb="interchange.imported").exists()
