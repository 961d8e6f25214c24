"""The services this integration appended to other apps, tested directly:
sessions.records_replace / session_metadata_merge, pipeline.stage1_ensure_session,
projects.project_settings_section_put, and the Hindsight transcript parser."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.models import AuditEvent
from memoryhub.integrations.hindsight import transcript
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.models import Job
from memoryhub.sessions import services as session_services
from memoryhub.sessions.models import AgentSession, SessionRecord
from memoryhub.sessions.records import RecordInput
from projects import services as project_services
from projects.models import Project, Role
from projects.selectors import project_access
from tests.integrations.hindsight.omp import TURNS, frame


def records(*texts: str) -> list[RecordInput]:
    return [
        RecordInput(type="user" if i % 2 == 0 else "assistant", content=t)
        for i, t in enumerate(texts)
    ]


@pytest.fixture
def session(project: Project, alice: User) -> AgentSession:
    return session_services.session_get_or_create(
        project=project, actor=Actor(user=alice), external_id="doc"
    )[0]


def stored(session: AgentSession) -> list[str]:
    return list(
        SessionRecord.objects.filter(session=session)
        .order_by("index")
        .values_list("content", flat=True)
    )


def test_records_replace_keeps_the_common_head_and_replaces_the_rest(
    session: AgentSession, alice: User
) -> None:
    actor = Actor(user=alice)
    first = session_services.records_replace(
        session=session, actor=actor, records=records("a", "b", "c")
    )
    assert (first.kept, first.removed, len(first.created)) == (0, 0, 3)
    head = list(
        SessionRecord.objects.filter(session=session, index__lt=2).values_list("pk", flat=True)
    )
    same = session_services.records_replace(
        session=session, actor=actor, records=records("a", "b", "c")
    )
    assert (same.kept, same.removed, same.created) == (3, 0, [])
    changed = session_services.records_replace(
        session=session, actor=actor, records=records("a", "b", "x", "y")
    )
    assert (changed.kept, changed.removed, len(changed.created)) == (2, 1, 2)
    assert stored(session) == ["a", "b", "x", "y"]
    assert (
        list(
            SessionRecord.objects.filter(session=session, index__lt=2).values_list("pk", flat=True)
        )
        == head
    )
    session.refresh_from_db()
    assert (session.record_count, session.message_count) == (4, 4)
    shrunk = session_services.records_replace(session=session, actor=actor, records=records("a"))
    assert (shrunk.kept, shrunk.removed) == (1, 3) and stored(session) == ["a"]
    session.refresh_from_db()
    assert session.record_count == 1
    assert AuditEvent.objects.filter(verb="session.records_replaced").count() == 2


def test_records_replace_compares_against_the_redacted_records(
    session: AgentSession, alice: User
) -> None:
    secret = "My key is ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    actor = Actor(user=alice)
    session_services.records_replace(session=session, actor=actor, records=records(secret))
    again = session_services.records_replace(session=session, actor=actor, records=records(secret))
    assert (again.kept, again.removed) == (1, 0)
    assert "ghp_" not in stored(session)[0]


def test_session_metadata_merge_is_idempotent_and_redacts(
    session: AgentSession, alice: User
) -> None:
    actor = Actor(user=alice)
    values: dict[str, Any] = {
        "tags": ["project:web"],
        "note": "token ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    }
    session_services.session_metadata_merge(session=session, actor=actor, values=values)
    session_services.session_metadata_merge(session=session, actor=actor, values=values)
    session.refresh_from_db()
    assert session.metadata["tags"] == ["project:web"] and "ghp_" not in session.metadata["note"]
    assert AuditEvent.objects.filter(verb="session.metadata_changed").count() == 1


def test_stage1_ensure_session_makes_the_new_records_due_and_rewinds(
    session: AgentSession, alice: User
) -> None:
    actor = Actor(user=alice)
    session_services.records_replace(session=session, actor=actor, records=records("a", "b", "c"))
    session.refresh_from_db()
    job = pipeline_services.stage1_ensure_session(session=session)
    assert (job.input_watermark, job.success_watermark) == (3, 0)
    Job.objects.filter(pk=job.pk).update(success_watermark=3)
    session_services.records_replace(session=session, actor=actor, records=records("a", "z"))
    session.refresh_from_db()
    job = pipeline_services.stage1_ensure_session(session=session, rewind_to=1)
    assert (job.input_watermark, job.success_watermark) == (2, 1)
    again = pipeline_services.stage1_ensure_session(session=session)
    assert (again.pk, again.input_watermark, again.success_watermark) == (job.pk, 2, 1)


def test_project_settings_section_put_changes_one_section(project: Project, alice: User) -> None:
    project.settings = {"recall": {"search_k1": 1.0}}
    project.save(update_fields=["settings"])
    access = project_access(slug="alpha", actor=Actor(user=alice), min_role=Role.MAINTAINER)
    project_services.project_settings_section_put(
        access=access, section="hindsight", value={"reflect_mission": "m"}
    )
    project_services.project_settings_section_put(
        access=access, section="hindsight", value={"reflect_mission": "m"}
    )
    project.refresh_from_db()
    assert project.settings == {"recall": {"search_k1": 1.0}, "hindsight": {"reflect_mission": "m"}}
    assert AuditEvent.objects.filter(project=project, verb="project.updated").count() == 1
    with pytest.raises(ApplicationError):
        project_services.project_settings_section_put(
            access=access, section="hindsight", value={"reflect_mission": 5}
        )
    project_services.project_settings_section_put(access=access, section="hindsight", value=None)
    project.refresh_from_db()
    assert project.settings == {"recall": {"search_k1": 1.0}}


def test_transcript_parse_reads_omps_framing() -> None:
    parsed = transcript.parse(frame(TURNS))
    assert [(r.type, r.content) for r in parsed] == [
        ("user" if role == "user" else "assistant", text) for role, _, text in TURNS
    ]
    assert parsed[0].timestamp is not None and parsed[0].timestamp.microsecond == 65000
    plain = transcript.parse("Remember: staging is on port 55433.\nIt moved last week.")
    assert [(r.type, r.content) for r in plain] == [
        ("user", "Remember: staging is on port 55433.\nIt moved last week.")
    ]
    odd = transcript.parse(
        "preface\n[role: system]\n[timestamp: not a date]\nbe brief\n[system:end]\n"
        "[role: assistant]\nno end marker"
    )
    assert [(r.type, r.content, r.metadata) for r in odd] == [
        ("user", "preface", {}),
        ("user", "be brief", {"role": "system"}),
        ("assistant", "no end marker", {}),
    ]
    assert odd[1].timestamp is None
    assert transcript.parse("   \n") == []
