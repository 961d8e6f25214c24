from __future__ import annotations

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.recall.models import InstructionFile
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from projects.services import project_create
from tests.interchange.helpers import (
    FIXTURE_MTIME,
    FIXTURES,
    bank,
    download,
    tree_files,
    unzip,
    upload,
    zip_bytes,
)
from tests.recall.memories import add_memory


def test_it_imports_a_claude_code_memory_directory(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    response = upload(alice_client, "alpha", "claude_code", zip_bytes(tree_files("claude_code")))
    assert response.status_code == 201, response.content
    assert response.json()["created"]["memories"] == 4
    assert response.json()["created"]["instructions"] == 3  # CLAUDE.md, its import, ~ file
    rows = {m.title: m for m in Memory.objects.filter(project=project)}
    assert {t: (m.kind, m.scope) for t, m in rows.items()} == {
        "User role": ("user", "user"),
        "Testing approach": ("feedback", "user"),
        "Release freeze": ("project", "project"),
        "Bug tracker": ("reference", "project"),
    }
    testing = rows["Testing approach"]
    assert testing.content.startswith("Integration tests must hit a real database")
    assert "**How to apply:**" in testing.content
    assert testing.metadata["description"] == "integration tests hit a real database, never mocks"
    assert testing.metadata["external_id"] == "claude_code:feedback_testing.md"
    assert testing.created_at == testing.updated_at == FIXTURE_MTIME
    paths = set(
        InstructionFile.objects.filter(project=project, owner=None).values_list("path", flat=True)
    )
    assert paths == {"CLAUDE.md", "docs/git-workflow.md"}  # not "@decorator" in a code span
    assert InstructionFile.objects.get(owner=alice).content == "- Prefer short answers.\n"


def test_the_memory_folder_alone_is_enough(project: Project, alice_client: APIClient) -> None:
    files = {
        k[len("memory/") :]: v
        for k, v in tree_files("claude_code").items()
        if k.startswith("memory/")
    }
    response = upload(alice_client, "alpha", "claude_code", zip_bytes(files, prefix="memory/"))
    assert response.status_code == 201, response.content
    assert response.json()["created"]["memories"] == 4
    flat = upload(alice_client, "alpha", "claude_code", zip_bytes(files))
    assert flat.status_code == 200 and flat.json()["unchanged"]["memories"] == 4


def test_export_round_trips_and_reimport_creates_nothing(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    upload(alice_client, "alpha", "claude_code", zip_bytes(tree_files("claude_code")))
    exported = download(alice_client, "alpha", "claude_code")
    files = unzip(exported)
    original = tree_files("claude_code")
    for path in (
        "memory/user_role.md",
        "memory/feedback_testing.md",
        "memory/project_release_freeze.md",
        "memory/reference_linear.md",
        "CLAUDE.md",
        "docs/git-workflow.md",
        "home/.claude/CLAUDE.md",
    ):
        assert files[path] == original[path], path
    index = files["memory/MEMORY.md"].decode().splitlines()
    assert sorted(index) == sorted(original["memory/MEMORY.md"].decode().splitlines())

    same = upload(alice_client, "alpha", "claude_code", exported)
    assert same.status_code == 200 and set(same.json()["created"].values()) == {0}
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    assert upload(alice_client, "beta", "claude_code", exported).status_code == 201
    assert bank(Project.objects.get(slug="beta")) == bank(project)


def test_memoryhub_kinds_keywords_and_importance_survive_the_trip(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    add_memory(
        alice_client,
        "Deploys go out on Tuesdays only",
        "rule",
        importance=3,
        keywords=["deploy", "tuesday"],
    )
    add_memory(alice_client, "The staging database is reset nightly", "fact")
    exported = download(alice_client, "alpha", "claude_code")
    text = unzip(exported)
    rule_file = next(v for k, v in text.items() if b"Tuesdays" in v and k != "memory/MEMORY.md")
    assert b"type: project\nkind: rule\nkeywords: deploy, tuesday\nimportance: 3\n" in rule_file
    assert upload(alice_client, "alpha", "claude_code", exported).json()["created"]["memories"] == 0
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    assert upload(alice_client, "beta", "claude_code", exported).status_code == 201
    rows = {
        m.content: (m.kind, m.keywords, m.importance, m.updated_at)
        for m in Memory.objects.filter(project__slug="beta")
    }
    source = {
        m.content: (m.kind, m.keywords, m.importance, m.updated_at.replace(microsecond=0))
        for m in Memory.objects.filter(project=project)
    }
    assert rows == source


def test_a_topic_file_without_a_valid_type_is_refused_with_its_line(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("claude_code")
    files["memory/user_role.md"] = b"---\nname: x\ndescription: y\ntype: person\n---\n\nbody\n"
    files["memory/broken.md"] = b"no frontmatter at all\n"
    response = upload(alice_client, "alpha", "claude_code", zip_bytes(files))
    assert response.status_code == 400, response.content
    errors = response.json()["error"]["details"]["errors"]
    assert [(e["file"], e["line"]) for e in errors] == [
        ("memory/broken.md", 1),
        ("memory/user_role.md", 4),
    ]
    assert Memory.objects.count() == 0


def test_a_zip_of_the_claude_project_folder_brings_its_transcripts(
    project: Project, alice_client: APIClient
) -> None:
    sid = "3f9c2a1e-7b4d-4e8a-9c61-0d2e5f8a7b13"
    files = {k: v for k, v in tree_files("claude_code").items() if k.startswith("memory/")}
    files[f"{sid}.jsonl"] = (
        FIXTURES.parent.parent / "sessions/fixtures/claude_code_session.jsonl"
    ).read_bytes()
    data = zip_bytes(files, prefix="-home-dev-src-inventory-api/")
    response = upload(alice_client, "alpha", "claude_code", data)
    assert response.status_code == 201, response.content
    assert response.json()["created"]["sessions"] == 1
    session = AgentSession.objects.get(project=project)
    assert session.external_id == sid and session.source == "claude_code"
    assert session.record_count > 0
    again = upload(alice_client, "alpha", "claude_code", data)
    assert again.json()["unchanged"]["sessions"] == 1 and again.json()["created"]["sessions"] == 0
