from __future__ import annotations

from datetime import UTC, datetime

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.interchange import omp
from memoryhub.memories.models import BankArtifact, Memory
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.models import Stage1Output
from memoryhub.sessions.models import AgentSession
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


# A raw memory as stage 1 writes it: its own "## Task:" headings, one right at the start.
RAW_WITH_HEADINGS = (
    "## Task: I prefer dark mode in every editor\n"
    "- The user prefers dark mode; set it in new editor configs.\n"
    "\n"
    "## Task: Release 1.4.0\n"
    "- Cut releases with `uv build`, never setup.py."
)


def test_a_raw_memorys_own_headings_never_start_a_thread(
    alice: User, project: Project, alice_client: APIClient
) -> None:
    actor = Actor.for_system("test")
    docs = "## Docs\n- Docs live in docs/."
    for thread, raw, when in (
        ("0195b001-thread-prefs", RAW_WITH_HEADINGS, datetime(2026, 3, 15, 9, 0, 0, 9, UTC)),
        ("0195b002-thread-docs", docs, datetime(2026, 3, 16, 9, 0, tzinfo=UTC)),
    ):
        pipeline_services.stage1_output_import(
            project=project,
            actor=actor,
            thread_id=thread,
            raw_memory=raw,
            rollout_summary=f"Summary of {thread}.",
            rollout_slug="prefs",
            generated_at=when,
        )
    exported = download(alice_client, "alpha", "omp")
    project_create(slug="beta", owner=alice, actor=Actor.for_system("test"))
    response = upload(alice_client, "beta", "omp", exported)
    assert response.status_code == 201, response.content
    assert response.json()["created"]["rollouts"] == 2
    beta = Project.objects.get(slug="beta")
    outputs = dict(
        Stage1Output.objects.filter(project=beta).values_list("session__external_id", "raw_memory")
    )
    assert outputs == {
        "0195b001-thread-prefs": RAW_WITH_HEADINGS,
        "0195b002-thread-docs": docs,
    }
    assert AgentSession.objects.filter(project=beta).count() == 2  # no "Task: …" session
    assert download(alice_client, "beta", "omp") == exported  # byte for byte, zip and all


def test_raw_memories_md_is_written_as_oh_my_pi_writes_it(
    project: Project, alice_client: APIClient
) -> None:
    # oh-my-pi's buildRawMemoriesMarkdown: "# Raw Memories\n\n", then per thread, newest
    # first, "## <id>\nupdated_at: <seconds>\n<raw memory>\n", the blocks joined by "\n".
    raw = (
        b"# Raw Memories\n\n"
        b"## t-2\nupdated_at: 1773568800\n## Task: dark mode\n- Prefers dark mode.\n"
        b"\n"
        b"## t-1\nupdated_at: 1773482400\n# Released 1.4.0\n\n## Task: release\n- uv build.\n"
    )
    response = upload(alice_client, "alpha", "omp", zip_bytes({"raw_memories.md": raw}))
    assert response.status_code == 201, response.content
    assert response.json()["created"]["rollouts"] == 2
    assert unzip(download(alice_client, "alpha", "omp"))["raw_memories.md"] == raw


def test_a_blank_line_after_updated_at_is_read_too() -> None:
    # MemoryHub's exports before it matched oh-my-pi's layout left one there.
    text = "# Raw Memories\n\n## t-1\nupdated_at: 1773482400\n\n## Task: x\n- y\n"
    [rollout] = omp.parse_raw(text, "raw_memories.md", [])
    assert (rollout.thread_id, rollout.raw_memory) == ("t-1", "## Task: x\n- y")


def test_another_persons_thread_is_re_imported_unchanged_but_never_changed(
    bob: User, project: Project, alice_client: APIClient, bob_client: APIClient
) -> None:
    # bob's session, with its stage-1 output.
    pipeline_services.stage1_output_import(
        project=project,
        actor=Actor(user=bob),
        thread_id="bob-thread",
        raw_memory="## Task: bob's\n- bob prefers tabs.",
        rollout_summary="bob's summary.",
        generated_at=datetime(2026, 3, 15, 9, 0, tzinfo=UTC),
    )
    exported = download(alice_client, "alpha", "omp")
    # alice's export holds bob's thread: importing it back changes nothing and is no error.
    again = upload(alice_client, "alpha", "omp", exported)
    assert again.status_code == 200, again.content  # nothing created
    assert again.json()["unchanged"]["rollouts"] == 1
    # Changing what bob's session learned is refused, naming the file.
    raw = b"# Raw Memories\n\n## bob-thread\nupdated_at: 1773568800\n- alice was here.\n"
    refused = upload(alice_client, "alpha", "omp", zip_bytes({"raw_memories.md": raw}))
    assert refused.status_code == 400, refused.content
    [problem] = refused.json()["error"]["details"]["errors"]
    assert problem["file"] == "raw_memories.md" and "another person" in problem["message"]
    output = Stage1Output.objects.get(session__external_id="bob-thread")
    assert output.raw_memory == "## Task: bob's\n- bob prefers tabs."
