from __future__ import annotations

from datetime import UTC, datetime

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import BankArtifact, Memory
from memoryhub.pipeline.models import Stage1Output
from projects.models import Project
from projects.services import project_create
from tests.interchange.helpers import (
    FIXTURE_MTIME,
    bank,
    download,
    tree_files,
    unzip,
    upload,
    zip_bytes,
)


def test_it_imports_an_omp_memory_root(project: Project, alice_client: APIClient) -> None:
    response = upload(alice_client, "alpha", "omp", zip_bytes(tree_files("omp")))
    assert response.status_code == 201, response.content
    created = response.json()["created"]
    assert created["artifacts"] == 4 and created["rollouts"] == 2 and created["memories"] == 2
    assert sorted(BankArtifact.objects.values_list("path", flat=True)) == [
        "MEMORY.md",
        "memory_summary.md",
        "skills/deploy-check/SKILL.md",
        "skills/deploy-check/scripts/check.sh",
    ]
    # memory://root serves the imported documents.
    root = alice_client.get("/api/v1/projects/alpha/memory/?uri=memory://root/MEMORY.md")
    assert root.status_code == 200 and "TZ=UTC" in root.json()["content"]
    outputs = {o.session.external_id: o for o in Stage1Output.objects.select_related("session")}
    release = outputs["0195a3b2-thread-release"]
    assert release.raw_memory.startswith("# Released 1.4.0 with uv")
    assert release.rollout_summary.startswith("Cut release 1.4.0")
    assert release.rollout_slug == "release_flow"
    assert release.generated_at == datetime.fromtimestamp(1773482400, tz=UTC)
    lessons = {m.content: m for m in Memory.objects.all()}
    tz = lessons["Set TZ=UTC before running the date tests"]
    assert tz.kind == "lesson" and tz.metadata["context"].startswith("tests/test_dates.py")
    assert tz.updated_at == FIXTURE_MTIME


def test_export_writes_the_memory_root_back_and_round_trips(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    upload(alice_client, "alpha", "omp", zip_bytes(tree_files("omp")))
    exported = download(alice_client, "alpha", "omp")
    files = unzip(exported)
    assert files == tree_files("omp")  # byte for byte, every file
    same = upload(alice_client, "alpha", "omp", exported)
    assert same.status_code == 200 and set(same.json()["created"].values()) == {0}
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    assert upload(alice_client, "beta", "omp", exported).status_code == 201
    beta = Project.objects.get(slug="beta")
    assert bank(beta) == bank(project)
    assert sorted(BankArtifact.objects.filter(project=beta).values_list("path", "content")) == (
        sorted(BankArtifact.objects.filter(project=project).values_list("path", "content"))
    )
    outputs = [
        sorted(
            Stage1Output.objects.filter(project=p).values_list(
                "session__external_id",
                "raw_memory",
                "rollout_summary",
                "rollout_slug",
                "generated_at",
            )
        )
        for p in (project, beta)
    ]
    assert outputs[0] == outputs[1] and len(outputs[0]) == 2


def test_an_invalid_skill_path_is_refused_by_name(
    project: Project, alice_client: APIClient
) -> None:
    files = tree_files("omp")
    files["skills/Deploy Check!/SKILL.md"] = b"# bad name\n"
    response = upload(alice_client, "alpha", "omp", zip_bytes(files))
    assert response.status_code == 400, response.content
    errors = response.json()["error"]["details"]["errors"]
    assert [e["file"] for e in errors] == ["skills/Deploy Check!/SKILL.md"]
    assert BankArtifact.objects.count() == Memory.objects.count() == 0


def test_importing_artifacts_needs_a_maintainer(project: Project, bob_client: APIClient) -> None:
    response = upload(bob_client, "alpha", "omp", zip_bytes(tree_files("omp")))
    assert response.status_code == 403
    assert "maintainer" in response.json()["error"]["message"]
    learned_only = {"learned.md": tree_files("omp")["learned.md"]}
    assert upload(bob_client, "alpha", "omp", zip_bytes(learned_only)).status_code == 201
