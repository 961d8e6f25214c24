from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from accounts.actors import Actor
from memoryhub.core.models import AuditEvent
from memoryhub.memories import artifacts
from memoryhub.memories.models import BankArtifact
from projects.models import Project

A = "/api/v1/projects/alpha/artifacts/"
URI = "/api/v1/projects/alpha/memory/"


def put(client: APIClient, path: str, content: str) -> Any:
    return client.put(A + path, {"content": content}, format="json")


def resolve(client: APIClient, uri: str) -> Any:
    return client.get(URI, {"uri": uri})


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/etc/passwd",
        "\\windows\\system32",
        "..",
        "skills/../MEMORY.md",
        "a..b.md",  # seed 003 rejects any path containing '..'
        "C:/x.md",
        "a:b",
        "a\0b",
        "a b.md",
        "a//b.md",
        "a/",
        "./MEMORY.md",
        "ü.md",
        "a/b\\c",
    ],
)
def test_it_rejects_unsafe_paths(path: str) -> None:
    with pytest.raises(ValidationError):
        artifacts.validate_relative_path(path)


@pytest.mark.parametrize(
    "path", ["MEMORY.md", "memory_summary.md", "notes/2026-01.md", "a-b_c.d", ".hidden"]
)
def test_it_accepts_safe_paths(path: str) -> None:
    assert artifacts.validate_relative_path(path) == path


def test_it_sanitizes_skill_names_like_seed_003() -> None:
    assert artifacts.sanitize_skill_name("Deploy To Prod!") == "deploy-to-prod"
    assert artifacts.sanitize_skill_name("--Run_tests--") == "run_tests"
    assert artifacts.sanitize_skill_name("数据库 migrate") == "migrate"
    assert artifacts.sanitize_skill_name("x" * 100) == "x" * 64
    with pytest.raises(ValidationError):
        artifacts.sanitize_skill_name("！！！")


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("skills/deploy/SKILL.md", True),
        ("skills/deploy/scripts/run.sh", True),
        ("skills/deploy/templates/a/b.txt", True),
        ("skills/deploy/examples/one.md", True),
        ("skills/Deploy/SKILL.md", False),  # not a sanitized name
        ("skills/deploy", False),
        ("skills/deploy/notes.md", False),
        ("skills/deploy/scripts", False),
        ("skills/deploy/other/x.py", False),
    ],
)
def test_it_keeps_the_skills_layout(path: str, ok: bool) -> None:
    if ok:
        assert artifacts.validate_artifact_path(path) == path
    else:
        with pytest.raises(ValidationError):
            artifacts.validate_artifact_path(path)


def test_skill_files_maps_stage_2_output_to_paths() -> None:
    files = artifacts.skill_files(
        name="Release Train",
        content="# Release",
        scripts=[artifacts.SkillAsset("bump.py", "print(1)")],
        examples=[artifacts.SkillAsset("v1/notes.md", "ok")],
    )
    assert files == {
        "skills/release-train/SKILL.md": "# Release",
        "skills/release-train/scripts/bump.py": "print(1)",
        "skills/release-train/examples/v1/notes.md": "ok",
    }
    with pytest.raises(ValidationError):
        artifacts.skill_files(name="x", content="", templates=[artifacts.SkillAsset("../evil", "")])


def test_it_versions_artifacts_and_ignores_identical_writes(alice_client: APIClient) -> None:
    events = AuditEvent.objects.filter(target_type="artifact")
    created = put(alice_client, "MEMORY.md", "# Memory\n")
    assert created.status_code == 201, created.content
    assert created.json()["version"] == 1
    assert created.json()["uri"] == "memory://root/MEMORY.md"
    same = put(alice_client, "MEMORY.md", "# Memory\n")
    assert same.status_code == 200
    assert same.json()["version"] == 1
    assert events.count() == 1
    changed = put(alice_client, "MEMORY.md", "# Memory\n- more\n")
    assert changed.json()["version"] == 2
    assert changed.json()["updated_by"].startswith("alice via token")
    assert [e.verb for e in events.order_by("id")] == ["artifact.created", "artifact.updated"]
    last = events.order_by("id").last()
    assert last is not None and last.before is not None
    assert last.before["version"] == 1


def test_it_lists_reads_and_deletes_artifacts(alice_client: APIClient) -> None:
    put(alice_client, "memory_summary.md", "summary")
    put(alice_client, "MEMORY.md", "long")
    listing = alice_client.get(A).json()
    assert [(r["path"], r["chars"]) for r in listing["results"]] == [
        ("MEMORY.md", 4),
        ("memory_summary.md", 7),
    ]
    assert alice_client.get(A + "MEMORY.md").json()["content"] == "long"
    assert alice_client.delete(A + "MEMORY.md").status_code == 204
    assert alice_client.get(A + "MEMORY.md").status_code == 404
    assert alice_client.delete(A + "MEMORY.md").status_code == 404
    assert AuditEvent.objects.filter(verb="artifact.deleted").count() == 1


def test_it_refuses_invalid_paths_and_non_maintainers(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    for path in ["a:b.md", "skills/x", "skills/Bad/SKILL.md", "x%00y"]:
        response = put(alice_client, path, "x")
        assert response.status_code == 400, path
        expected = "malformed_request" if "%00" in path else "validation_error"
        assert response.json()["error"]["code"] == expected
    forbidden = put(bob_client, "MEMORY.md", "x")
    assert forbidden.status_code == 403
    assert not BankArtifact.objects.exists()


def test_replace_all_writes_exactly_the_given_files(project: Project) -> None:
    actor = Actor.for_system("pipeline")
    first = artifacts.artifacts_replace_all(
        project=project,
        actor=actor,
        files={
            "MEMORY.md": "m",
            "memory_summary.md": "s",
            **artifacts.skill_files(name="deploy", content="d"),
            **artifacts.skill_files(name="old", content="o"),
        },
    )
    assert first.created == [
        "MEMORY.md",
        "memory_summary.md",
        "skills/deploy/SKILL.md",
        "skills/old/SKILL.md",
    ]
    second = artifacts.artifacts_replace_all(
        project=project,
        actor=actor,
        files={"MEMORY.md": "m2", "memory_summary.md": "s", "skills/deploy/SKILL.md": "d"},
    )
    assert second.updated == ["MEMORY.md"]
    assert second.unchanged == ["memory_summary.md", "skills/deploy/SKILL.md"]
    assert second.deleted == ["skills/old/SKILL.md"]
    with pytest.raises(ValidationError):
        artifacts.artifacts_replace_all(
            project=project, actor=actor, files={"MEMORY.md": "new", "/abs": "x"}
        )
    assert BankArtifact.objects.get(project=project, path="MEMORY.md").content == "m2"
    emptied = artifacts.artifacts_replace_all(project=project, actor=actor, files={})
    assert len(emptied.deleted) == 3
    assert not BankArtifact.objects.filter(project=project).exists()


def test_memory_root_lists_the_read_path_documents(alice_client: APIClient) -> None:
    for path in [
        "skills/zeta/SKILL.md",
        "skills/alpha/scripts/SKILL.md",
        "skills/alpha/SKILL.md",
        "memory_summary.md",
        "notes.md",
        "MEMORY.md",
    ]:
        assert put(alice_client, path, f"content of {path}").status_code == 201
    for uri in ["memory://root", "memory://root/"]:
        response = resolve(alice_client, uri)
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["type"] == "directory"
        assert [e["uri"] for e in body["entries"]] == [
            "memory://root/MEMORY.md",
            "memory://root/memory_summary.md",
            "memory://root/skills/alpha/SKILL.md",
            "memory://root/skills/zeta/SKILL.md",
        ]


def test_memory_uris_resolve_to_artifact_content(alice_client: APIClient) -> None:
    put(alice_client, "MEMORY.md", "# Long-term memory")
    put(alice_client, "skills/deploy/SKILL.md", "# Deploy")
    put(alice_client, "skills/deploy/scripts/go.sh", "echo go")
    for path, content in [
        ("MEMORY.md", "# Long-term memory"),
        ("skills/deploy/SKILL.md", "# Deploy"),
        ("skills/deploy/scripts/go.sh", "echo go"),
    ]:
        body = resolve(alice_client, f"memory://root/{path}").json()
        assert (body["type"], body["path"], body["content"], body["version"]) == (
            "file",
            path,
            content,
            1,
        )
    missing = resolve(alice_client, "memory://root/skills/nope/SKILL.md")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert resolve(alice_client, "memory://root/memory_summary.md").status_code == 404


@pytest.mark.parametrize(
    "uri",
    [
        "memory://root//etc/passwd",
        "memory://root/../secrets",
        "memory://root/skills/../../x",
        "memory://root/a:b",
        "memory://root/MEMORY.md\0",
        "memory://root/has space.md",
        "memory://root/skills//SKILL.md",
        "memory://root/MEMORY.md?x=1",
        "memory://other/MEMORY.md",
        "file:///etc/passwd",
        "MEMORY.md",
    ],
)
def test_invalid_memory_uris_are_rejected(alice_client: APIClient, uri: str) -> None:
    put(alice_client, "MEMORY.md", "x")
    response = resolve(alice_client, uri)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    # DRF's CharField refuses NUL itself (validation_error); the rest are ours.
    assert error["code"] == ("validation_error" if "\0" in uri else "invalid_uri")
    assert error["details"]["uri"]


def test_secrets_never_reach_an_artifact(alice_client: APIClient) -> None:
    secret = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
    response = alice_client.put(
        "/api/v1/projects/alpha/artifacts/MEMORY.md",
        {"content": f"# Memory\n- token {secret}\n"},
        format="json",
    )
    assert response.status_code in (200, 201), response.content
    stored = BankArtifact.objects.get(path="MEMORY.md").content
    assert secret not in stored and "[REDACTED]" in stored
