"""Deleting a project (owners, typed confirmation): everything in it goes, nothing of another
project does, the slug can be used again, and work queued for it ends quietly."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection
from django.db.models import CASCADE, ForeignObjectRel, Model
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import ApiToken, User
from memoryhub.core.models import AuditEvent
from memoryhub.memories.models import BankChange, BankVersion
from memoryhub.pipeline import jobs, services, session_imports
from memoryhub.pipeline.models import Job
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory
from tests.pipeline.test_pipeline_e2e import push_session

P = "/api/v1/projects/alpha/"
C = "/api/v1/projects/charlie-lab/"


def fill(client: APIClient, project: Project) -> None:
    """alpha with a bit of everything: an extracted session, written memories, files."""
    push_session(client, "mew-delete")
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert services.stage1_run(job_id=job_id) == "done"
    response = client.post(
        P + "memories/",
        {"content": "Deploys go through make release.", "kind": "fact"},
        format="json",
    )
    assert response.status_code == 201, response.content
    response = client.put(
        P + "instructions/files/MEWCODE.md", {"content": "# Alpha"}, format="json"
    )
    assert response.status_code in (200, 201), response.content


def _paths(model: type[Model], path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(model label, lookup to the project's pk) for every table under Project, found from the
    models' foreign keys (hidden ones too), independently of the code under test."""
    for relation in model._meta.get_fields(include_hidden=True):
        if not isinstance(relation, ForeignObjectRel):
            continue
        child = relation.related_model
        assert isinstance(child, type) and issubclass(child, Model)
        child_path = f"{relation.field.name}__{path}"
        yield child._meta.label, child_path
        if depth < 4 and relation.on_delete is CASCADE:
            yield from _paths(child, child_path, depth + 1)


def rows_of(project_id: int) -> dict[str, int]:
    """Rows of every table that hangs off the project, by model and path, plus the bank's
    bookkeeping (no foreign key: memories migration 0011)."""
    counts = {
        f"{label} by {path}": apps.get_model(label)
        ._base_manager.filter(**{path: project_id})
        .count()
        for label, path in _paths(Project, "pk")
    }
    counts["bank_changes"] = BankChange.objects.filter(project_id=project_id).count()
    counts["bank_versions"] = BankVersion.objects.filter(project_id=project_id).count()
    return counts


def test_an_owner_deletes_a_project_and_everything_in_it_and_nothing_else(
    alice: User,
    alice_client: APIClient,
    charlie_client: APIClient,
    make_client: Callable[..., APIClient],
    project: Project,
) -> None:
    fill(alice_client, project)
    response = charlie_client.post(
        C + "memories/", {"content": "Charlie's lab uses pnpm.", "kind": "fact"}, format="json"
    )
    assert response.status_code == 201
    limited = make_client(alice, project=project)
    assert limited.get(P).status_code == 200
    before = rows_of(project.pk)
    present = {key.split(" by ")[0] for key, n in before.items() if n}  # labels with rows
    # What fill() made is there to be deleted (and counted by the walk above).
    assert {
        "memories.Memory",
        "memories.MemoryTerm",
        "memories.MemoryEvent",
        "agent_sessions.AgentSession",
        "agent_sessions.SessionRecord",
        "pipeline.Job",
        "pipeline.Stage1Output",
        "recall.InstructionFile",
        "projects.ProjectMembership",
        "accounts.ApiToken",
        "core.AuditEvent",
        "bank_changes",
        "bank_versions",
    } <= present, present
    charlie_before = rows_of(Project.objects.get(slug="charlie-lab").pk)

    response = alice_client.delete(P + "?confirm=alpha")

    assert response.status_code == 200, response.content
    deleted = response.json()["deleted"]
    assert deleted == {
        "memories": before["memories.Memory by project__pk"],
        "sessions": 1,
        "records": before["agent_sessions.SessionRecord by session__project__pk"],
        "members": 2,  # alice and bob
        "tokens": 1,  # the token limited to alpha
    }
    assert rows_of(project.pk) == dict.fromkeys(before, 0)
    assert rows_of(Project.objects.get(slug="charlie-lab").pk) == charlie_before
    assert charlie_client.get(C + "memories/search/?q=pnpm").json()["results"]
    # Gone for everyone, exactly as a project that never existed; the limited token is gone.
    missing = alice_client.get("/api/v1/projects/no-such-project/")
    gone = alice_client.get(P)
    assert gone.status_code == missing.status_code == 404
    assert gone.json() == missing.json()
    assert limited.get("/api/v1/me/").status_code == 401
    assert alice_client.get("/api/v1/me/").status_code == 200  # her other tokens stay
    event = AuditEvent.objects.get(verb="project.deleted")
    assert event.project_id is None  # outlives the project
    assert event.actor_user == alice
    assert event.target_id == str(project.public_id)
    assert event.before is not None and event.before["slug"] == "alpha"
    assert event.after == {"deleted": deleted}


def test_the_slug_can_be_taken_again_and_the_new_project_starts_empty(
    alice_client: APIClient, project: Project
) -> None:
    fill(alice_client, project)
    # Warm the per-process copies (the search engine's index, the injection cache).
    assert alice_client.get(P + "memories/search/?q=release").json()["results"]
    assert "make release" in alice_client.get(P + "injection/?profile=mewcode").content.decode()
    assert alice_client.delete(P + "?confirm=alpha").status_code == 200

    assert (
        alice_client.post("/api/v1/projects/", {"slug": "alpha"}, format="json").status_code == 201
    )
    assert alice_client.get(P + "memories/search/?q=release").json()["results"] == []
    assert "make release" not in alice_client.get(P + "injection/?profile=mewcode").content.decode()
    assert alice_client.get(P + "sessions/").json()["results"] == []


@pytest.mark.parametrize(
    ("query", "detail"),
    [("?confirm=Alpha", "confirm"), ("?confirm=", "confirm"), ("", "confirm")],
)
def test_a_wrong_or_missing_confirmation_deletes_nothing(
    alice_client: APIClient, project: Project, query: str, detail: str
) -> None:
    response = alice_client.delete(P + query)
    assert response.status_code == 400
    assert detail in response.json()["error"]["details"]
    assert Project.objects.filter(slug="alpha").exists()
    assert not AuditEvent.objects.filter(verb="project.deleted").exists()


def test_only_owners_may_delete_and_outsiders_learn_nothing(
    alice: User,
    bob: User,
    project: Project,
    charlie_client: APIClient,
    make_client: Callable[..., APIClient],
) -> None:
    maintainer = UserFactory.create(username="mia")
    owner_access = project_access(slug="alpha", actor=Actor(user=alice))
    membership_add(access=owner_access, user=maintainer, role=Role.MAINTAINER)
    for client in (make_client(bob), make_client(maintainer)):
        assert client.delete(P + "?confirm=alpha").status_code == 403
    # An agent's token is limited to its project: it may not delete it, even an owner's.
    refused = make_client(alice, project=project).delete(P + "?confirm=alpha")
    assert refused.status_code == 403
    assert "restricted" in refused.json()["error"]["message"]
    assert make_client(alice, read_only=True).delete(P + "?confirm=alpha").status_code == 403
    hidden = charlie_client.delete(P + "?confirm=alpha")
    missing = charlie_client.delete("/api/v1/projects/no-such-project/?confirm=alpha")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    assert Project.objects.filter(slug="alpha").exists()


def test_a_queued_job_of_a_deleted_project_ends_quietly(
    alice_client: APIClient, project: Project
) -> None:
    push_session(alice_client, "mew-queued")
    (job_id,) = services.stage1_enqueue_due(project=project)
    assert alice_client.delete(P + "?confirm=alpha").status_code == 200
    # The message is still in the broker when the project goes: its run is a no-op.
    assert services.stage1_run(job_id=job_id) == services.GONE
    assert services.stage2_run(job_id=job_id) == services.GONE


def test_a_job_whose_project_is_deleted_while_it_runs_ends_quietly(
    alice_client: APIClient, project: Project, caplog: pytest.LogCaptureFixture
) -> None:
    push_session(alice_client, "mew-running")
    (job_id,) = services.stage1_enqueue_due(project=project)

    def work(job: Job, claim: jobs.Claim) -> dict[str, object]:
        # What a worker meets when the project goes mid-run: its write fails the foreign key.
        Project.objects.filter(pk=job.project_id).delete()
        raise IntegrityError("insert violates foreign key constraint")

    outcome = services._run(job_id, lease=60, retry_delay=1, work=work)
    assert outcome == services.GONE
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_the_management_command(
    alice: User, make_client: Callable[..., APIClient], project: Project
) -> None:
    make_client(alice, project=project)  # a token limited to alpha, to go with it
    assert ApiToken.objects.filter(project=project).exists()
    with pytest.raises(CommandError, match="slug"):
        call_command("project_delete", "alpha", "--confirm", "beta")
    with pytest.raises(CommandError, match="No project"):
        call_command("project_delete", "nope", "--confirm", "nope")
    out = StringIO()
    call_command("project_delete", "alpha", "--confirm", "alpha", stdout=out)
    assert out.getvalue().startswith("Deleted project alpha: 0 memories, 0 sessions")
    assert "1 tokens" in out.getvalue()
    assert not Project.objects.filter(slug="alpha").exists()
    event = AuditEvent.objects.get(verb="project.deleted")
    assert event.actor_label == "cli"
    assert not ApiToken.objects.filter(project__isnull=False).exists()


def test_the_bookkeeping_trigger_is_installed(db: None) -> None:
    """A later migration that rebuilds projects_project would drop it silently (SQLite drops a
    table's triggers with it): this says so."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'memoryhub_project_del'")
        else:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
                " AND name = 'memoryhub_project_del'"
            )
        assert cursor.fetchone() == (1,)


def test_a_job_deleted_while_its_work_succeeds_ends_as_gone(
    alice_client: APIClient, project: Project
) -> None:
    push_session(alice_client, "mew-done")
    (job_id,) = services.stage1_enqueue_due(project=project)

    def work(job: Job, claim: jobs.Claim) -> dict[str, object]:
        Job.objects.filter(pk=job.pk).delete()  # a bank clear or a deletion, meanwhile
        return {}

    # "gone", not "done": a done stage 1 would queue a stage 2 for what is no longer there.
    assert services._run(job_id, lease=60, retry_delay=1, work=work) == services.GONE
    assert session_imports.import_run(job_id=job_id) == "gone"
