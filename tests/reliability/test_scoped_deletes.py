"""Every bulk or filtered delete, clear and rebuild of the service layer is scoped to its project:
run each on `alpha` and another project (`beta`, same owner, same kinds of data) survives byte
for byte — every row of it, serialized, is what it was."""

from __future__ import annotations

from typing import Any

from django.core import serializers
from django.db.models import Model, QuerySet

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.memories import artifacts
from memoryhub.memories import services as memory_services
from memoryhub.memories.models import BankArtifact, Memory, MemoryEvent, MemoryTerm
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.models import Job, Stage1Output
from memoryhub.recall import services as recall_services
from memoryhub.recall.models import InstructionFile, RecallFile
from memoryhub.sessions import services as session_services
from memoryhub.sessions.models import AgentSession, SessionRecord, ToolResultDecision
from projects.models import Project, ProjectMembership
from projects.services import project_create
from tests.factories import MemoryFactory


def populate(project: Project, owner: User) -> None:
    actor = Actor(user=owner)
    for via in (Memory.Via.PIPELINE, Memory.Via.DREAM, Memory.Via.TOKEN):
        MemoryFactory.create(project=project, created_via=via, content=f"{via} memory of deploys")
    memory_services.memory_reindex(project=project)
    session = AgentSession.objects.create(project=project, external_id="s1", created_by_user=owner)
    for index in range(3):
        SessionRecord.objects.create(session=session, index=index, type="user", content="hi")
    ToolResultDecision.objects.create(session=session, tool_use_id="t1", artifact="output")
    Stage1Output.objects.create(session=session, project=project, raw_memory="raw")
    artifacts.artifact_put(project=project, path="MEMORY.md", content="# M", actor=actor)
    recall_services.instruction_file_put(
        project=project, actor=actor, path="MEWCODE.md", content="# Rules"
    )
    recall_services.recall_file_put(
        project=project,
        actor=actor,
        scope="project",
        data=recall_services.RecallFileInput(path="notes.md", content="notes"),
    )


def snapshot(project: Project, *, populated: bool = True) -> dict[str, str]:
    """Every row that belongs to `project`, serialized (and, when `populated`, present)."""
    querysets: dict[str, QuerySet[Any]] = {
        "project": Project.objects.filter(pk=project.pk),
        "memberships": ProjectMembership.objects.filter(project=project),
        "memories": Memory.objects.filter(project=project),
        "memory events": MemoryEvent.objects.filter(memory__project=project),
        "postings": MemoryTerm.objects.filter(memory__project=project),
        "artifacts": BankArtifact.objects.filter(project=project),
        "sessions": AgentSession.objects.filter(project=project),
        "records": SessionRecord.objects.filter(session__project=project),
        "tool results": ToolResultDecision.objects.filter(session__project=project),
        "stage-1 outputs": Stage1Output.objects.filter(project=project),
        "jobs": Job.objects.filter(project=project),
        "instruction files": InstructionFile.objects.filter(project=project),
        "recall files": RecallFile.objects.filter(project=project),
        "audit": AuditEvent.objects.filter(project=project),
    }
    rows: dict[str, str] = {}
    for name, qs in querysets.items():
        objects: list[Model] = list(qs.order_by("pk"))
        optional = ("jobs", "audit", "memberships", "project", "memory events")
        assert not populated or name in optional or objects, name
        rows[name] = serializers.serialize("json", objects)
    return rows


def test_deletes_clears_and_rebuilds_leave_other_projects_byte_for_byte(alice: User) -> None:
    system = Actor.for_system("test")
    alpha = project_create(slug="alpha", owner=alice, actor=system)
    beta = project_create(slug="beta", owner=alice, actor=system)
    populate(alpha, alice)
    populate(beta, alice)
    actor = Actor(user=alice)
    before = snapshot(beta)
    alpha_before = snapshot(alpha)

    memory_services.memory_clear_derived(project=alpha)
    memory_services.memory_reindex(project=alpha)
    pipeline_services.bank_clear(project=alpha, actor=actor, confirm="alpha")
    pipeline_services.bank_rebuild_start(project=alpha, actor=actor, confirm="alpha")
    recall_services.instruction_tree_put(project=alpha, actor=actor, files={}, replace=True)
    recall_services.recall_files_sync(
        project=alpha, actor=actor, scope="project", files=[], delete_missing=True
    )
    for session in AgentSession.objects.filter(project=alpha):
        session_services.session_delete(session=session, actor=actor)
    artifacts.artifact_delete(project=alpha, path="MEMORY.md", actor=actor)

    after_alpha = snapshot(alpha, populated=False)
    # The operations did act on alpha …
    assert after_alpha["memories"] != alpha_before["memories"]
    assert after_alpha["sessions"].strip() == "[]"
    assert after_alpha["instruction files"].strip() == "[]"
    # … and left beta exactly as it was.
    assert snapshot(beta) == before
