"""Backups: a whole project round-trips losslessly (compared field by field), restores are all
or nothing, only owners may take one and only server administrators may restore one."""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.backups import format as fmt
from memoryhub.backups.selectors import backup_lines
from memoryhub.memories.artifacts import artifact_put
from memoryhub.memories.models import MemoryTerm
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.conf import pipeline_config
from memoryhub.pipeline.models import Job, Stage1Output
from memoryhub.sessions.models import AgentSession
from projects.models import Project

P = "/api/v1/projects/alpha/"


@pytest.fixture(autouse=True)
def _alice_administers_the_server(alice: User) -> None:
    """alice restores in these tests: restores are for server administrators (staff)."""
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])


def ok(response: Any, *codes: int) -> Any:
    assert response.status_code in (codes or (200, 201)), response.content
    return response.json() if response.content else None


def fill(alice: APIClient, bob: APIClient, project: Project) -> None:
    """A project with something of every kind a backup must carry."""
    first = ok(
        alice.post(
            P + "memories/",
            {
                "kind": "project",
                "content": "Use pnpm, never npm.",
                "keywords": ["pnpm", "npm"],
                "importance": 3,
            },
            format="json",
        )
    )
    ok(
        alice.patch(
            P + f"memories/{first['id']}/", {"content": "Use pnpm 9, never npm."}, format="json"
        )
    )
    gone = ok(
        alice.post(
            P + "memories/", {"kind": "fact", "content": "CI runs on Jenkins."}, format="json"
        )
    )
    ok(
        alice.post(
            P + f"memories/{gone['id']}/archive/", {"reason": "moved to GitHub"}, format="json"
        )
    )
    stale = ok(
        bob.post(P + "memories/", {"kind": "feedback", "content": "Prefer tabs."}, format="json")
    )  # bob's own, user scope
    ok(bob.post(P + f"memories/{stale['id']}/stale/", {"reason": "changed my mind"}, format="json"))
    ok(alice.post(P + "sessions/", {"external_id": "s-1", "title": "Fix the build"}, format="json"))
    records = [
        {"type": "user" if i % 2 else "assistant", "content": f"step {i}", "seq": i}
        for i in range(1, 9)
    ]
    ok(alice.post(P + "sessions/s-1/records/", records, format="json"))
    ok(
        alice.post(
            P + "sessions/s-1/compact/", {"context_window": 1000, "mode": "manual"}, format="json"
        ),
        200,
        201,
    )
    ok(
        alice.put(
            P + "recall-files/project/notes/deploy.md",
            {
                "content": "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\n"
                "\nmake deploy\n",
                "mtime": "2026-03-01T12:00:00+00:00",
            },
            format="json",
        )
    )
    ok(
        alice.put(
            P + "instructions/files/.mewcode/MEWCODE.md",
            {"content": "# Rules\nBe brief."},
            format="json",
        )
    )
    ok(alice.patch(P, {"settings": {"review_required": True}}, format="json"))
    artifact_put(
        project=project,
        path="MEMORY.md",
        content="# Memory\n- pnpm",
        actor=Actor.for_system("test"),
    )


def normalized(project: Project) -> dict[str, Any]:
    """The project's backup with pks replaced by positions: equal for identical banks."""
    lines = [json.loads(line) for line in backup_lines(project=project)]
    header, rows = lines[0], lines[1:-1]
    positions: dict[str, dict[int, int]] = {}
    for row in rows:
        positions.setdefault(row["model"], {})[row["pk"]] = len(positions.get(row["model"], {}))
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        model = fmt.model_of(row["model"])
        fields = dict(row["fields"])
        for name, value in fields.items():
            field = model._meta.get_field(name)
            target = field.related_model._meta.label if field.related_model else None
            if target in positions and value is not None and target != "accounts.User":
                fields[name] = ("ref", positions[target][value])
        out.setdefault(row["model"], []).append(fields)
    project_fields = {
        k: v for k, v in header["project"].items() if k not in {"created_at", "updated_at"}
    }
    return {"project": project_fields, "rows": out, "counts": lines[-1]["rows"]}


def download(client: APIClient) -> bytes:
    response = client.get(P + "backup/")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/gzip"
    return b"".join(response.streaming_content)  # type: ignore[attr-defined]


def restore(client: APIClient, data: bytes, slug: str) -> Any:
    upload = io.BytesIO(data)
    upload.name = "backup.jsonl.gz"
    return client.post(
        "/api/v1/backups/restore/", {"backup": upload, "slug": slug}, format="multipart"
    )


def test_a_lost_project_comes_back_identical(
    alice_client: APIClient, bob_client: APIClient, project: Project, alice: User
) -> None:
    fill(alice_client, bob_client, project)
    project.refresh_from_db()
    before = normalized(project)
    assert before["counts"]["memories.Memory"] == 3
    assert before["counts"]["agent_sessions.SessionRecord"] >= 8
    assert all(
        before["counts"][label] > 0
        for label in (
            "memories.MemoryEvent",
            "memories.MemoryTerm",
            "memories.BankArtifact",
            "recall.RecallFile",
            "recall.InstructionFile",
            "core.AuditEvent",
        )
    )
    data = download(alice_client)
    Project.objects.filter(pk=project.pk).delete()  # the loss

    result = ok(restore(alice_client, data, "alpha"), 201)
    assert result["rows"] == before["counts"]
    after = normalized(Project.objects.get(slug="alpha"))

    assert after["project"] == before["project"]
    assert after["counts"]["core.AuditEvent"] == before["counts"]["core.AuditEvent"] + 2
    # The restore adds "project.created" before and "project.restored" after the old events.
    assert after["rows"].pop("core.AuditEvent")[1:-1] == before["rows"].pop("core.AuditEvent")
    owner_row = [m for m in after["rows"]["projects.ProjectMembership"] if m["user"] == "alice"]
    for rows in (after["rows"], before["rows"]):
        for m in rows["projects.ProjectMembership"]:
            if m["user"] == "alice":
                m.pop("created_at")  # the restoring owner's membership is made anew
    assert owner_row
    for label in before["rows"]:
        assert after["rows"][label] == before["rows"][label], label
    # Same public ids: the old URLs answer again, with the edit and the history intact.
    memories = ok(alice_client.get(P + "memories/?status=all"))["results"]
    edited = next(m for m in memories if "pnpm 9" in m["content"])
    history = ok(alice_client.get(P + f"memories/{edited['id']}/history/"))["results"]
    assert [e["verb"] for e in history][:2] == ["created", "updated"]
    hits = ok(alice_client.get(P + "memories/search/?q=pnpm"))["results"]
    assert hits[0]["id"] == edited["id"]


def test_a_copy_beside_the_original_gets_new_ids(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    fill(alice_client, bob_client, project)
    ok(restore(alice_client, download(alice_client), "alpha-copy"), 201)
    copy = Project.objects.get(slug="alpha-copy")
    original_ids = set(project.memories.values_list("public_id", flat=True))
    copy_ids = set(copy.memories.values_list("public_id", flat=True))
    assert len(copy_ids) == 3 and not original_ids & copy_ids
    hits = ok(alice_client.get("/api/v1/projects/alpha-copy/memories/search/?q=pnpm"))["results"]
    assert [h["id"] for h in hits] == [str(copy.memories.get(content__contains="pnpm").public_id)]


def test_a_truncated_or_foreign_file_writes_nothing(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    fill(alice_client, bob_client, project)
    data = gzip.decompress(download(alice_client))
    lines = data.splitlines(keepends=True)
    truncated = gzip.compress(b"".join(lines[:-3]))
    refused = restore(alice_client, truncated, "alpha-cut")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "backup_invalid"
    assert not Project.objects.filter(slug="alpha-cut").exists()
    foreign = restore(alice_client, gzip.compress(b'{"format": "other"}\n'), "alpha-x")
    assert foreign.status_code == 400
    assert restore(alice_client, b"not gzip at all", "alpha-y").status_code == 400
    assert not Project.objects.filter(slug__in=["alpha-x", "alpha-y"]).exists()
    # A slug that is taken is a conflict, and nothing else is written either.
    assert restore(alice_client, gzip.compress(data), "alpha").status_code == 409


def _with_postings_fields(data: bytes, change: Any) -> bytes:
    """The backup `data` with `change` applied to the fields of every posting row."""
    lines = [json.loads(line) for line in gzip.decompress(data).splitlines()]
    for line in lines:
        if line.get("model") == "memories.MemoryTerm":
            change(line["fields"])
    return gzip.compress(b"".join(json.dumps(line).encode() + b"\n" for line in lines))


def test_a_backup_from_before_a_field_was_retired_still_restores(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    fill(alice_client, bob_client, project)
    # Backups taken before memories 0010 carry each posting's copy of its memory's length.
    old = _with_postings_fields(download(alice_client), lambda f: f.update(length=3))
    result = ok(restore(alice_client, old, "alpha-old"), 201)
    assert result["rows"]["memories.MemoryTerm"] == project_terms(project) > 0
    hits = ok(alice_client.get("/api/v1/projects/alpha-old/memories/search/?q=pnpm"))["results"]
    assert len(hits) == 1


def test_an_unknown_field_is_refused_in_the_error_envelope(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    fill(alice_client, bob_client, project)
    bad = _with_postings_fields(download(alice_client), lambda f: f.update(weight=1))
    refused = restore(alice_client, bad, "alpha-bad")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "backup_invalid" and "no field 'weight'" in error["message"]
    assert not Project.objects.filter(slug="alpha-bad").exists()


def project_terms(project: Project) -> int:
    return MemoryTerm.objects.filter(project=project).count()


def test_a_restored_project_does_not_extract_its_sessions_again(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    # An exploratory test: every restore re-ran stage 1 on every session, at full LLM cost.
    fill(alice_client, bob_client, project)
    ok(alice_client.post(P + "sessions/", {"external_id": "s-2"}, format="json"))
    said = [
        {"type": "user", "content": "We always use pnpm in this repo, never npm.", "seq": 1},
        {"type": "assistant", "content": "Noted: pnpm only.", "seq": 2},
    ]
    ok(alice_client.post(P + "sessions/s-2/records/", said, format="json"))
    session = AgentSession.objects.get(project=project, external_id="s-2")
    job = pipeline_services.stage1_job_ensure(
        session=session, config=pipeline_config(project.settings)
    )
    assert pipeline_services.stage1_run(job_id=job.pk) == "done"
    assert Stage1Output.objects.filter(session=session).exists()
    ok(restore(alice_client, download(alice_client), "alpha-copy"), 201)
    copy = Project.objects.get(slug="alpha-copy")
    AgentSession.objects.filter(project=copy).update(status=AgentSession.Status.ENDED)
    # s-1 yielded nothing durable (no stage-1 output), so it is looked at again; s-2 is not.
    due = pipeline_services.stage1_enqueue_due(project=copy)
    assert not Job.objects.filter(pk__in=due, session__external_id="s-2").exists()
    restored = Job.objects.get(project=copy, kind=Job.Kind.STAGE1, session__external_id="s-2")
    assert restored.status == Job.Status.DONE and restored.success_watermark == 2
    # New records after the restore are extracted as usual.
    more = [{"type": "user", "content": "one more step", "seq": 99}]
    ok(alice_client.post("/api/v1/projects/alpha-copy/sessions/s-2/records/", more, format="json"))
    due = pipeline_services.stage1_enqueue_due(project=copy)
    assert Job.objects.get(pk__in=due, session__external_id="s-2")


def test_only_owners_take_backups(
    bob_client: APIClient, charlie_client: APIClient, project: Project
) -> None:
    assert bob_client.get(P + "backup/").status_code == 403
    assert charlie_client.get(P + "backup/").status_code == 404


def test_only_server_administrators_restore_for_a_backup_can_enrol_anyone(
    alice_client: APIClient, bob_client: APIClient, charlie_client: APIClient, project: Project
) -> None:
    fill(alice_client, bob_client, project)
    data = download(alice_client)
    # An outsider with a backup (his own, edited to name alice) cannot make anyone a member of
    # anything, nor plant "her" private memories; neither can an owner who is not staff.
    for client in (charlie_client, bob_client):
        refused = restore(client, data, "planted")
        assert refused.status_code == 403
        assert "server administrators" in refused.json()["error"]["message"]
    assert not Project.objects.filter(slug="planted").exists()
    ok(restore(alice_client, data, "alpha-copy"), 201)  # staff


def test_commands_round_trip(
    alice_client: APIClient,
    bob_client: APIClient,
    project: Project,
    alice: User,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fill(alice_client, bob_client, project)
    target = tmp_path / "alpha.jsonl.gz"
    call_command("bank_export", "alpha", str(target))
    call_command("bank_import", str(target), "--as", "alpha-2", "--owner", "alice")
    assert "Restored alpha-2" in capsys.readouterr().out
    copy = Project.objects.get(slug="alpha-2")
    assert normalized(copy)["counts"]["memories.Memory"] == 3


def test_commands_answer_bad_paths_and_slugs_with_a_message(
    alice_client: APIClient, project: Project, alice: User, tmp_path: Any
) -> None:
    target = tmp_path / "alpha.jsonl.gz"
    cases = [
        (("bank_export", "alpha", str(tmp_path / "missing" / "x.gz")), "Cannot write"),
        (
            ("bank_import", str(tmp_path / "nope.gz"), "--as", "b", "--owner", "alice"),
            "Cannot read",
        ),
    ]
    for args, message in cases:
        with pytest.raises(CommandError, match=message):
            call_command(*args)
    call_command("bank_export", "alpha", str(target))
    with pytest.raises(CommandError, match="lowercase letters, digits and hyphens"):
        call_command("bank_import", str(target), "--as", "Bad Slug!", "--owner", "alice")
    assert not Project.objects.exclude(pk=project.pk).exists()
