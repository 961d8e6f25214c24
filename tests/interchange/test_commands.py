from __future__ import annotations

import os
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory
from projects.models import Project
from projects.services import project_create
from tests.interchange.helpers import FIXTURES, bank, meow_db


def _run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_import_a_directory_export_it_and_import_the_export(
    alice: User, project: Project, tmp_path: Path
) -> None:
    summary = _run(
        "memories_import",
        "alpha",
        str(FIXTURES / "mewcode"),
        "--format",
        "mewcode",
        "--user",
        "alice",
    )
    assert '"memories": 8' in summary
    out = tmp_path / "export"
    assert "Exported" in _run(
        "memories_export", "alpha", str(out), "--format", "mewcode", "--user", "alice"
    )
    assert (out / ".mewcode" / "memories.md").read_text().startswith("### 项目知识\n")
    memories_md = out / "home" / ".mewcode" / "memories.md"
    newest = max(m.updated_at for m in Memory.objects.filter(scope="user"))
    assert int(os.stat(memories_md).st_mtime) == int(newest.timestamp())
    again = _run("memories_import", "alpha", str(out), "--format", "mewcode", "--user", "alice")
    assert '"memories": 0' in again
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    _run("memories_import", "beta", str(out), "--format", "mewcode", "--user", "alice")
    assert bank(Project.objects.get(slug="beta")) == bank(project)


def test_export_to_an_archive_and_import_a_single_file(
    alice: User, project: Project, tmp_path: Path
) -> None:
    db = meow_db(tmp_path / "memory.db")
    _run("memories_import", "alpha", str(db), "--format", "meow", "--user", "alice")
    archive = tmp_path / "out.zip"
    _run(
        "memories_export",
        "alpha",
        str(archive),
        "--format",
        "meow",
        "--user",
        "alice",
        "--archive",
        "zip",
    )
    assert zipfile.ZipFile(archive).namelist() == [".dsh-meow/memory.db"]
    assert '"memories": 0' in _run(
        "memories_import", "alpha", str(archive), "--format", "meow", "--user", "alice"
    )


def test_errors_are_command_errors_naming_the_file(
    project: Project, charlie: User, tmp_path: Path
) -> None:
    bad = tmp_path / "ws" / ".mewcode"
    bad.mkdir(parents=True)
    (bad / "memories.md").write_text("### 未知分类\n- x\n")
    with pytest.raises(CommandError, match=r"\.mewcode/memories\.md:1: unknown category"):
        _run(
            "memories_import",
            "alpha",
            str(tmp_path / "ws"),
            "--format",
            "mewcode",
            "--user",
            "alice",
        )
    (bad / "link.md").symlink_to("/etc/passwd")
    with pytest.raises(CommandError, match="symbolic link"):
        _run(
            "memories_import",
            "alpha",
            str(tmp_path / "ws"),
            "--format",
            "mewcode",
            "--user",
            "alice",
        )
    with pytest.raises(CommandError, match="cannot use project"):
        _run(
            "memories_export", "alpha", str(tmp_path / "x"), "--format", "omp", "--user", "charlie"
        )
    assert Memory.objects.count() == 0
