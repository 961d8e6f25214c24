"""Hostile and oversized uploads, roles and visibility of the interchange endpoints."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.recall.models import InstructionFile, RecallFile
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory
from tests.interchange.helpers import (
    download,
    export_url,
    import_url,
    tree_files,
    unzip,
    upload,
    zip_bytes,
)

GOOD = "### 项目知识\n- fine\n".encode()


def _zip_with(name: str, data: bytes = b"x", *, mode: int | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(".mewcode/memories.md", GOOD)
        info = zipfile.ZipInfo(name)
        if mode is not None:
            info.external_attr = mode << 16
        archive.writestr(info, data)
    return out.getvalue()


def _tar_with(member: tarfile.TarInfo) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        info = tarfile.TarInfo(".mewcode/memories.md")
        info.size = len(GOOD)
        archive.addfile(info, io.BytesIO(GOOD))
        archive.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return out.getvalue()


def _symlink(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _file(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 1
    return info


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_zip_with("../../etc/cron.d/evil"), "a '..' part"),
        (_zip_with("docs/../../outside.md"), "a '..' part"),
        (_zip_with("/etc/passwd"), "an absolute path"),
        (_zip_with("C:/Windows/evil.md"), "an absolute path"),
        (_zip_with("docs\\..\\evil.md"), "a backslash"),
        (
            _zip_with(".mewcode/memory/link.md", b"/etc/passwd", mode=stat.S_IFLNK | 0o777),
            "symbolic link",
        ),
        (_tar_with(_symlink(".mewcode/memory/link.md", "/etc/passwd")), "symbolic link"),
        (
            _tar_with(_symlink("hard.md", ".mewcode/memories.md", tarfile.LNKTYPE)),
            "link or special",
        ),
        (_tar_with(_file("../escape.md")), "a '..' part"),
        (_tar_with(_file("/abs.md")), "an absolute path"),
    ],
)
def test_an_unsafe_archive_is_refused_as_a_whole(
    project: Project, alice_client: APIClient, data: bytes, reason: str
) -> None:
    response = upload(alice_client, "alpha", "mewcode", data)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert reason in error["message"] and "Nothing was imported" in error["message"].replace(
        "nothing", "Nothing"
    )
    [problem] = error["details"]["errors"]
    assert problem["file"] and problem["line"] is None and reason in problem["message"]
    assert Memory.objects.count() == 0


def test_an_upload_over_the_import_limit_is_refused(
    project: Project, alice_client: APIClient, settings: Any
) -> None:
    settings.SESSION_IMPORT_MAX_BYTES = 4096
    big = zip_bytes({".mewcode/memories.md": GOOD + b"- " + b"a" * 20_000 + b"\n"})
    assert len(big) < 4096  # small compressed, large unpacked: the unpacked size counts
    response = upload(alice_client, "alpha", "mewcode", big)
    assert response.status_code == 413
    assert response.json()["error"]["details"]["limit_bytes"] == 4096
    raw = alice_client.post(
        import_url("alpha", "meow"), b"x" * 5000, content_type="application/octet-stream"
    )
    assert raw.status_code == 413
    assert Memory.objects.count() == 0


def test_a_damaged_zip_is_a_clear_400(project: Project, alice_client: APIClient) -> None:
    data = zip_bytes(tree_files("mewcode"))
    response = upload(alice_client, "alpha", "mewcode", data[: len(data) // 2])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"


def test_an_unknown_format_is_404(project: Project, alice_client: APIClient) -> None:
    assert upload(alice_client, "alpha", "emacs", zip_bytes({"a": b"b"})).status_code == 404
    assert alice_client.get(export_url("alpha", "emacs")).status_code == 404


def test_the_formats_are_listed(project: Project, bob_client: APIClient) -> None:
    response = bob_client.get("/api/v1/projects/alpha/interchange/")
    assert response.status_code == 200
    assert [f["name"] for f in response.json()] == ["mewcode", "claude_code", "meow", "omp"]


@pytest.fixture
def viewer_client(project: Project, make_client: Callable[..., APIClient]) -> APIClient:
    dana = UserFactory.create(username="dana")
    access = project_access(
        slug="alpha", actor=Actor(user=project.memberships.get(role="owner").user)
    )
    membership_add(access=access, user=dana, role=Role.VIEWER)
    return make_client(dana)


def test_it_rejects_outsider(
    project: Project, charlie_client: APIClient, alice_client: APIClient
) -> None:
    data = zip_bytes(tree_files("mewcode"))
    missing = charlie_client.get(export_url("nope", "mewcode"))
    for response in (
        upload(charlie_client, "alpha", "mewcode", data),
        charlie_client.get(export_url("alpha", "mewcode")),
        charlie_client.get("/api/v1/projects/alpha/interchange/"),
    ):
        assert response.status_code == 404
        assert response.json() == {**missing.json()}
    assert Memory.objects.count() == 0


def test_roles_import_needs_a_member_and_instructions_a_maintainer(
    project: Project,
    bob: User,
    bob_client: APIClient,
    viewer_client: APIClient,
    alice_ro_client: APIClient,
) -> None:
    data = zip_bytes(tree_files("mewcode"))
    assert upload(viewer_client, "alpha", "mewcode", data).status_code == 403
    assert upload(alice_ro_client, "alpha", "mewcode", data).status_code == 403
    # bob is a member: the workspace's project MEWCODE.md files need a maintainer ...
    refused = upload(bob_client, "alpha", "mewcode", data)
    assert refused.status_code == 403
    assert "project instruction files" in refused.json()["error"]["message"]
    # ... without them his memories, recall files, own instructions and sessions go in.
    files = {
        k: v
        for k, v in tree_files("mewcode").items()
        if k not in ("MEWCODE.md", ".mewcode/MEWCODE.md")
    }
    accepted = upload(bob_client, "alpha", "mewcode", zip_bytes(files))
    assert accepted.status_code == 201, accepted.content
    assert InstructionFile.objects.get().owner == bob
    assert RecallFile.objects.filter(scope="user", owner=bob).count() == 1
    # Exports are for every member, viewers included.
    assert viewer_client.get(export_url("alpha", "mewcode")).status_code == 200


def test_user_scope_memories_leave_only_with_their_owner(
    alice: User, project: Project, alice_client: APIClient, bob_client: APIClient
) -> None:
    upload(alice_client, "alpha", "claude_code", zip_bytes(tree_files("claude_code")))
    alices = unzip(download(alice_client, "alpha", "claude_code"))
    bobs = unzip(download(bob_client, "alpha", "claude_code"))
    assert "memory/user_role.md" in alices and "memory/feedback_testing.md" in alices
    assert "memory/user_role.md" not in bobs and "memory/feedback_testing.md" not in bobs
    assert "memory/project_release_freeze.md" in bobs
    assert b"User role" not in bobs["memory/MEMORY.md"]
    assert "home/.claude/CLAUDE.md" not in bobs


def test_a_single_memories_md_is_enough_and_an_unrelated_upload_is_refused(
    project: Project, alice_client: APIClient
) -> None:
    single = upload(alice_client, "alpha", "mewcode", GOOD, "memories.md")
    assert single.status_code == 201, single.content
    assert Memory.objects.get().content == "fine"
    unrelated = upload(alice_client, "alpha", "omp", zip_bytes({"notes/todo.txt": b"x"}))
    assert unrelated.status_code == 400
    assert unrelated.json()["error"]["message"].startswith(
        "Nothing was imported: found nothing to import as omp"
    )


def test_an_archive_with_too_many_entries_is_refused(
    project: Project, alice_client: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryhub.interchange import archive

    monkeypatch.setattr(archive, "MAX_MEMBERS", 3)
    files = {f".mewcode/memory/n{i}.md": b"---\nname: n\n---\n" for i in range(4)}
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert response.status_code == 400
    assert "at most 3" in response.json()["error"]["message"]
