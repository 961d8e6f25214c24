from __future__ import annotations

import json
from datetime import UTC, datetime

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.memories.models import Memory
from memoryhub.recall.instructions import resolved_instructions
from memoryhub.recall.models import InstructionFile, RecallFile
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from projects.services import project_create
from tests.interchange.helpers import (
    FIXTURE_MTIME,
    bank,
    download,
    tar_bytes,
    tree_files,
    unzip,
    upload,
    zip_bytes,
)

MEW = "session_20260314_101502_k3p9"


def test_it_imports_a_whole_mewcode_workspace(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(tree_files("mewcode")))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["created"] == {
        "memories": 8,
        "recall_files": 3,
        "instructions": 5,  # MEWCODE.md, .mewcode/MEWCODE.md, 2 includes, the user's file
        "sessions": 1,
        "artifacts": 0,
        "rollouts": 0,
    }
    rows = {m.content: m for m in Memory.objects.filter(project=project)}
    assert rows["使用 uv 作为包管理器"].kind == "project"
    assert rows["文档地址：https://calendar-kit.readthedocs.io/"].kind == "reference"
    assert rows["commit message 用英文"].kind == "user"
    assert rows["commit message 用英文"].scope == "user"
    assert rows["commit message 用英文"].owner == alice
    assert rows["项目实际是 Python 而非 Go"].kind == "feedback"
    # Provenance: created by the import, from this file and line, dated by the file.
    memory = rows["CI 在 GitHub Actions 上跑 Python 3.12 和 3.13"]
    assert memory.created_via == "import" and memory.created_by_user == alice
    assert memory.metadata["imported"]["file"] == ".mewcode/memories.md"
    assert memory.metadata["imported"]["line"] == 4
    assert memory.metadata["imported"]["import_id"] == body["import_id"]
    assert memory.created_at == memory.updated_at == FIXTURE_MTIME
    # Recall files keep their frontmatter, scope and mtime.
    files = {(f.scope, f.path): f for f in RecallFile.objects.filter(project=project)}
    assert files[("project", "release_process.md")].name == "发版流程"
    assert files[("project", "iso_week_reference.md")].type == "reference"
    assert files[("user", "review_style.md")].owner == alice
    assert files[("user", "review_style.md")].updated_at == FIXTURE_MTIME
    # Instructions resolve with the nested @include, then the user's own layer.
    text = resolved_instructions(project=project, user=alice)
    assert "snake_case，常量全大写" in text and "freezegun" in text
    assert text.endswith("回答用中文，代码注释用英文。\n")
    assert InstructionFile.objects.filter(project=project, owner=alice).count() == 1
    session = AgentSession.objects.get(project=project)
    assert session.external_id == MEW and session.source == "mewcode"
    assert session.record_count == SessionRecord.objects.filter(session=session).count() > 10
    assert AuditEvent.objects.filter(verb="interchange.imported").count() == 1


def test_reimporting_the_same_workspace_creates_nothing(
    project: Project, alice_client: APIClient
) -> None:
    data = tar_bytes(tree_files("mewcode"))
    assert upload(alice_client, "alpha", "mewcode", data, "ws.tar.gz").status_code == 201
    before = (Memory.objects.count(), RecallFile.objects.count(), SessionRecord.objects.count())
    again = upload(alice_client, "alpha", "mewcode", data, "ws.tar.gz")
    assert again.status_code == 200, again.content
    assert set(again.json()["created"].values()) == {0}
    assert again.json()["unchanged"]["memories"] == 8
    assert again.json()["unchanged"]["sessions"] == 1
    after = (Memory.objects.count(), RecallFile.objects.count(), SessionRecord.objects.count())
    assert after == before


def test_a_zip_of_the_folder_itself_is_read_the_same(
    project: Project, alice_client: APIClient
) -> None:
    data = zip_bytes(tree_files("mewcode"), prefix="calendar-kit/")
    response = upload(alice_client, "alpha", "mewcode", data)
    assert response.status_code == 201, response.content
    assert response.json()["created"]["memories"] == 8


def test_export_writes_the_workspace_back_and_round_trips(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    upload(alice_client, "alpha", "mewcode", zip_bytes(tree_files("mewcode")))
    exported = download(alice_client, "alpha", "mewcode")
    files = unzip(exported)
    original = tree_files("mewcode")
    # What MewCode reads back: its files byte for byte where MemoryHub keeps them whole ...
    for path in (
        "MEWCODE.md",
        ".mewcode/MEWCODE.md",
        "docs/style.md",
        "docs/conventions/naming.md",
        ".mewcode/memory/release_process.md",
        ".mewcode/memory/iso_week_reference.md",
        "home/.mewcode/memory/review_style.md",
        "home/.mewcode/MEWCODE.md",
        f".mewcode/sessions/{MEW}.jsonl",
    ):
        assert path in files, path
    for path in ("MEWCODE.md", "docs/style.md", ".mewcode/memory/release_process.md"):
        assert files[path] == original[path]
    # ... memories.md in the shape MewCode's writer leaves it ...
    assert files[".mewcode/memories.md"] == original[".mewcode/memories.md"]
    assert files["home/.mewcode/memories.md"] == original["home/.mewcode/memories.md"]
    # ... and records that replay to the same transcript.
    assert files[f".mewcode/sessions/{MEW}.jsonl"].decode().count("\n") == (
        original[f".mewcode/sessions/{MEW}.jsonl"].decode().strip().count("\n") + 1
    )

    # Import the export into a fresh project: the same bank.
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    again = upload(alice_client, "beta", "mewcode", exported)
    assert again.status_code == 201, again.content
    beta = Project.objects.get(slug="beta")
    assert bank(beta) == bank(project)
    assert len(bank(beta)) == 8
    assert sorted(
        (f.scope, f.path, f.content, f.updated_at) for f in RecallFile.objects.filter(project=beta)
    ) == sorted(
        (f.scope, f.path, f.content, f.updated_at)
        for f in RecallFile.objects.filter(project=project)
    )
    assert resolved_instructions(project=beta, user=alice) == resolved_instructions(
        project=project, user=alice
    )
    records = [
        list(
            SessionRecord.objects.filter(session__project=p)
            .order_by("index")
            .values_list("type", "content", "tool_use_id", "is_error", "timestamp")
        )
        for p in (project, beta)
    ]
    assert records[0] == records[1]
    # And back into the original project: nothing new.
    same = upload(alice_client, "alpha", "mewcode", exported)
    assert same.status_code == 200 and set(same.json()["created"].values()) == {0}


def test_a_members_export_has_no_one_elses_user_memories(
    project: Project, alice_client: APIClient, bob_client: APIClient
) -> None:
    upload(alice_client, "alpha", "mewcode", zip_bytes(tree_files("mewcode")))
    files = unzip(download(bob_client, "alpha", "mewcode"))
    assert ".mewcode/memories.md" in files
    assert not any(path.startswith("home/") for path in files)
    assert b"commit message" not in b"".join(files.values())


def test_a_memory_line_outside_a_category_fails_with_its_file_and_line(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("mewcode")
    files[".mewcode/memories.md"] = "# Memories\n\n- 没有分类的一行\n### 项目知识\n- ok\n".encode()
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["details"]["errors"] == [
        {
            "file": ".mewcode/memories.md",
            "line": 3,
            "message": "a memory line before any '### category' header",
        }
    ]
    assert Memory.objects.count() == 0


def test_a_bad_transcript_line_rolls_back_everything(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("mewcode")
    lines = files[f".mewcode/sessions/{MEW}.jsonl"].decode().splitlines()
    lines[6] = '{"type": "user", "content": '
    files[f".mewcode/sessions/{MEW}.jsonl"] = "\n".join(lines).encode()
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert response.status_code == 400, response.content
    [error] = response.json()["error"]["details"]["errors"]
    assert error["file"] == f".mewcode/sessions/{MEW}.jsonl" and error["line"] == 7
    assert Memory.objects.count() == RecallFile.objects.count() == 0
    assert AgentSession.objects.count() == InstructionFile.objects.count() == 0


def test_secrets_are_redacted_on_the_way_in(project: Project, alice_client: APIClient) -> None:
    files = tree_files("mewcode")
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    files[".mewcode/memories.md"] = f"### 项目知识\n- CI token is {secret}\n".encode()
    files[".mewcode/memory/release_process.md"] += f"\nToken: {secret}\n".encode()
    files["docs/style.md"] += f"\nexport GITHUB_TOKEN={secret}\n".encode()
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert response.status_code == 201, response.content
    stored = Memory.objects.get(content__startswith="CI token")
    assert secret not in stored.content and "[REDACTED" in stored.content
    recall = RecallFile.objects.get(path="release_process.md")
    assert secret not in recall.content
    style = InstructionFile.objects.get(path="docs/style.md")
    assert secret not in style.content and "@include conventions/naming.md" in style.content
    # The redacted text is what a re-import matches: still nothing new.
    again = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert again.json()["created"]["memories"] == 0


def test_a_broken_meta_file_is_named(project: Project, alice_client: APIClient) -> None:
    files = tree_files("mewcode")
    files[f".mewcode/sessions/{MEW}.meta"] = b'{"id": "x", "title": 3}'
    response = upload(alice_client, "alpha", "mewcode", zip_bytes(files))
    assert response.status_code == 400, response.content
    [error] = response.json()["error"]["details"]["errors"]
    assert error["file"] == f".mewcode/sessions/{MEW}.meta"
    assert Memory.objects.count() == 0


def test_a_sessions_last_active_time_is_kept_and_round_trips(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    files = tree_files("mewcode")
    meta_path = f".mewcode/sessions/{MEW}.meta"
    meta = json.loads(files[meta_path])
    meta["last_active"] = "2026-11-01T10:00:01Z"
    files[meta_path] = json.dumps(meta, ensure_ascii=False).encode()
    assert upload(alice_client, "alpha", "mewcode", zip_bytes(files)).status_code == 201
    last_active = datetime(2026, 11, 1, 10, 0, 1, tzinfo=UTC)
    assert AgentSession.objects.get(project=project).last_active_at == last_active
    exported = download(alice_client, "alpha", "mewcode")
    written = json.loads(unzip(exported)[meta_path])
    assert datetime.fromisoformat(written["last_active"]) == last_active
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    assert upload(alice_client, "beta", "mewcode", exported).status_code == 201
    assert AgentSession.objects.get(project__slug="beta").last_active_at == last_active
