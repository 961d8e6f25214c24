from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory
from projects.models import Project
from projects.services import project_create
from tests.interchange.helpers import (
    DAY,
    MEOW_ROWS,
    T0,
    bank,
    download,
    import_url,
    meow_db,
    meow_rows,
    unzip,
    upload,
    zip_bytes,
)


@pytest.fixture
def db_bytes(tmp_path: Path) -> bytes:
    return meow_db(tmp_path / "memory.db").read_bytes()


def _ms(value: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value)


def test_it_imports_every_level_of_a_memory_db(
    alice: User, project: Project, alice_client: APIClient, db_bytes: bytes
) -> None:
    # The raw file as the body, the way `curl --data-binary @memory.db` sends it.
    response = alice_client.post(
        import_url("alpha", "meow") + "?filename=memory.db",
        db_bytes,
        content_type="application/octet-stream",
    )
    assert response.status_code == 201, response.content
    assert response.json()["created"]["memories"] == len(MEOW_ROWS)
    by_id = {m.metadata["external_id"].removeprefix("meow:"): m for m in Memory.objects.all()}
    for position, (level, row) in enumerate(MEOW_ROWS):
        memory = by_id[row["id"]]
        assert memory.content == row["content"]
        assert memory.keywords == row["keywords"]
        assert memory.importance == row.get("importance", 1)
        assert memory.status == row.get("status", "active")
        assert memory.created_at == _ms(T0 + position * 3_600_000 + 123)
        assert memory.updated_at == _ms(T0 + position * 3_600_000 + DAY + 456)
        assert memory.source_session == "sess-7f3a"
        expected_kind = {"rules": "rule"}.get(level, level)
        if row.get("corrected"):
            expected_kind = "feedback"
        assert memory.kind == expected_kind, row
        assert memory.scope == (
            "user" if expected_kind in ("soul", "user", "feedback") else "project"
        )
    assert by_id[MEOW_ROWS[2][1]["id"]].subcategory == "overview"
    assert by_id[MEOW_ROWS[3][1]["id"]].subcategory == "todo"
    assert by_id[MEOW_ROWS[9][1]["id"]].goal == "决定 CI 的时区策略"
    assert by_id[MEOW_ROWS[9][1]["id"]].title == "时区测试"
    assert by_id[MEOW_ROWS[8][1]["id"]].metadata["meow"] == {"project": "全局", "corrected": 1}
    assert by_id[MEOW_ROWS[5][1]["id"]].metadata["meow"]["hit_count"] == 4
    assert all(m.owner == alice for m in Memory.objects.filter(scope="user"))


def test_export_is_a_memory_db_meow_reads_back_row_for_row(
    alice: User, project: Project, alice_client: APIClient, db_bytes: bytes, tmp_path: Path
) -> None:
    upload(alice_client, "alpha", "meow", db_bytes, "memory.db")
    exported = unzip(download(alice_client, "alpha", "meow"))
    assert list(exported) == [".dsh-meow/memory.db"]
    (tmp_path / "out.db").write_bytes(exported[".dsh-meow/memory.db"])
    (tmp_path / "in.db").write_bytes(db_bytes)
    assert meow_rows(tmp_path / "out.db") == meow_rows(tmp_path / "in.db")


def test_round_trip_into_a_fresh_project_and_back(
    alice: User, project: Project, alice_client: APIClient, db_bytes: bytes
) -> None:
    upload(alice_client, "alpha", "meow", db_bytes, "memory.db")
    exported = download(alice_client, "alpha", "meow", archive="tar")
    same = upload(alice_client, "alpha", "meow", exported, "meow.tar.gz")
    assert same.status_code == 200 and same.json()["unchanged"]["memories"] == len(MEOW_ROWS)
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    fresh = upload(alice_client, "beta", "meow", exported, "meow.tar.gz")
    assert fresh.status_code == 201, fresh.content
    assert bank(Project.objects.get(slug="beta")) == bank(project)
    assert len(bank(project)) == len(MEOW_ROWS)


def test_memories_made_here_get_meow_ids_and_levels(
    alice: User, project: Project, alice_client: APIClient, tmp_path: Path
) -> None:
    created = alice_client.post(
        "/api/v1/projects/alpha/memories/",
        {
            "content": "Docs live at docs.example.org",
            "kind": "reference",
            "importance": 2,
            "keywords": ["docs"],
        },
        format="json",
    )
    assert created.status_code == 201
    (tmp_path / "m.db").write_bytes(
        unzip(download(alice_client, "alpha", "meow"))[".dsh-meow/memory.db"]
    )
    [fact] = meow_rows(tmp_path / "m.db")["fact"]
    assert fact["content"] == "Docs live at docs.example.org"
    assert fact["project"] == "alpha" and fact["importance"] == 2
    assert len(fact["id"]) == 36 and fact["id"][9] == "-"
    memory = Memory.objects.get()
    assert fact["created_at"] == int(memory.created_at.timestamp() * 1000)


def test_a_bad_row_is_named_and_nothing_is_imported(
    project: Project, alice_client: APIClient, tmp_path: Path
) -> None:
    rows = [
        *MEOW_ROWS[:3],
        (
            "fact",
            {
                "id": "mmqf1a2bf-ca1b2c3d4e5f60718293a4b5c6",
                "content": "x",
                "keywords": ["a"],
                "status": "deleted",
            },
        ),
    ]
    data = meow_db(tmp_path / "memory.db", rows).read_bytes()
    response = upload(alice_client, "alpha", "meow", zip_bytes({".dsh-meow/memory.db": data}))
    assert response.status_code == 400, response.content
    [error] = response.json()["error"]["details"]["errors"]
    assert error["file"] == ".dsh-meow/memory.db (fact mmqf1a2bf-ca1b2c3d4e5f60718293a4b5c6)"
    assert "status" in error["message"]
    assert Memory.objects.count() == 0


def test_a_file_that_is_not_sqlite_is_refused(project: Project, alice_client: APIClient) -> None:
    response = upload(alice_client, "alpha", "meow", b"hello", "memory.db")
    assert response.status_code == 400
    assert "SQLite" in response.json()["error"]["message"]


def test_secrets_in_rows_are_redacted(
    project: Project, alice_client: APIClient, tmp_path: Path
) -> None:
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    rows = [
        (
            "fact",
            {
                "id": "mmqf1a2bf-da1b2c3d4e5f60718293a4b5c6",
                "content": f"deploy key {secret}",
                "keywords": [secret, "deploy"],
            },
        )
    ]
    upload(
        alice_client,
        "alpha",
        "meow",
        meow_db(tmp_path / "memory.db", rows).read_bytes(),
        "memory.db",
    )
    memory = Memory.objects.get()
    assert secret not in memory.content and secret not in " ".join(memory.keywords)
