"""meow-memory's dream: when a window is due, the offline rules, the LLM contract, finalisation,
the lease and the manual trigger."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.models import AuditEvent
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.memories.services import MemoryInput, memory_create
from memoryhub.pipeline import dispatch, jobs
from memoryhub.pipeline.conf import pipeline_config
from memoryhub.pipeline.dream import runner, schedule, selectors
from memoryhub.pipeline.dream.operations import validate_operations
from memoryhub.pipeline.models import Job
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.worker import Worker, wait_for

DREAM_URL = "/api/v1/projects/alpha/bank/dream/"
KEYWORDS = ["node", "runtime", "api", "server", "version", "upgrade", "javascript", "backend"]


# --- arranging ----------------------------------------------------------------------------------


def configure(project: Project, **pipeline: Any) -> None:
    """Dream knobs for the test; no suppression windows unless given (tests run at any hour)."""
    project.settings = {"pipeline": {"dream_suppress_windows": [], **pipeline}}
    project.save(update_fields=["settings"])


def make_window(
    project: Project,
    user: User,
    external_id: str = "w1",
    *,
    idle_hours: float = 4,
    records: list[tuple[str, Any]] | None = None,
    now: datetime | None = None,
) -> AgentSession:
    """A session whose last event was `idle_hours` before `now`, with its records (one per
    minute up to the last event)."""
    last = (now or timezone.now()) - timedelta(hours=idle_hours)
    records = records or [("user", "hello")]
    session = AgentSession.objects.create(
        project=project,
        external_id=external_id,
        created_by_user=user,
        created_at=last - timedelta(hours=1),
        last_active_at=last,
        record_count=len(records),
    )
    for index, (type_, content) in enumerate(records):
        SessionRecord.objects.create(
            session=session,
            index=index,
            type=type_,
            content=content,
            created_at=last - timedelta(minutes=len(records) - index),
        )
    return session


def remember(
    project: Project,
    content: str,
    *,
    kind: str = "fact",
    window: AgentSession | None = None,
    at: datetime | None = None,
    actor: Actor | None = None,
    **fields: Any,
) -> Memory:
    return memory_create(
        project=project,
        actor=actor or Actor.for_system("pipeline"),
        data=MemoryInput(
            content=content,
            kind=kind,
            keywords=fields.pop("keywords", ["keyword"]),
            source_session=window.external_id if window else "",
            created_at=at,
            updated_at=at,
            **fields,
        ),
    )


def run_due(project: Project) -> Job:
    job_id = schedule.dream_enqueue_due(project=project)
    assert job_id is not None
    assert runner.dream_run(job_id=job_id) == "done", Job.objects.get(pk=job_id).last_error
    return Job.objects.get(pk=job_id)


def state(memory: Memory) -> tuple[str, str, str | None]:
    memory.refresh_from_db()
    superseded = str(memory.superseded_by.public_id) if memory.superseded_by else None
    return memory.status, memory.status_reason, superseded


def dream_verbs(memory: Memory) -> list[str]:
    return list(
        MemoryEvent.objects.filter(memory=memory, actor_label="dream")
        .order_by("pk")
        .values_list("verb", flat=True)
    )


def ops(*operations: dict[str, Any], notes: list[str] | None = None) -> str:
    return json.dumps({"operations": list(operations), "notes": notes or []})


# --- configuration ------------------------------------------------------------------------------


def test_dream_knobs_have_meows_defaults_and_are_validated() -> None:
    config = pipeline_config({})
    assert (config.dream_idle_minutes, config.dream_lead_minutes) == (180, 15)
    assert config.dream_suppress_windows == ("09:00-12:00", "14:00-18:00")
    assert (config.dream_cooldown_hours, config.dream_lease_seconds) == (6, 1800)
    assert config.dream_max_attempts == 3
    custom = pipeline_config({"pipeline": {"dream_suppress_windows": ["22:30-2:00"]}})
    assert custom.dream_suppress_windows == ("22:30-02:00",)
    for bad in (
        {"dream_suppress_windows": "09:00-12:00"},
        {"dream_suppress_windows": ["9-12"]},
        {"dream_suppress_windows": ["10:00-10:00"]},
        {"dream_suppress_windows": ["25:00-26:00"]},
        {"dream_max_attempts": 0},
        {"dream_lease_seconds": 10},
        {"dream_heartbeat_seconds": 5000},
    ):
        with pytest.raises(ApplicationError):
            pipeline_config({"pipeline": bad})


# --- when a window is due -----------------------------------------------------------------------


def test_an_idle_window_is_due_and_a_busy_or_old_one_is_not(project: Project, alice: User) -> None:
    configure(project)
    make_window(project, alice, "busy", idle_hours=1)
    make_window(project, alice, "old", idle_hours=25)
    idle = make_window(project, alice, "idle", idle_hours=3.5)
    job_id = schedule.dream_enqueue_due(project=project)
    assert job_id is not None
    job = Job.objects.get(pk=job_id)
    assert (job.kind, job.key, job.session_id) == ("dream", f"session:{idle.public_id}", idle.pk)
    assert job.retries_remaining == 3
    assert Job.objects.filter(kind=Job.Kind.DREAM).count() == 1  # only the chosen window


@pytest.mark.parametrize(
    ("tz", "utc_time", "due"),
    [
        ("Asia/Shanghai", "02:30", False),  # 10:30 local: inside 09:00–12:00
        ("Asia/Shanghai", "00:50", False),  # 08:50 local: the 15 minutes before 09:00
        ("Asia/Shanghai", "00:40", True),  # 08:40 local
        ("Asia/Shanghai", "04:30", True),  # 12:30 local: the lunch gap
        ("Asia/Shanghai", "05:50", False),  # 13:50 local: lead time of 14:00–18:00
        ("Asia/Shanghai", "10:00", True),  # 18:00 local: the window has ended
        ("UTC", "02:30", True),  # the same instant is night in UTC
        ("UTC", "10:30", False),
    ],
)
def test_suppression_windows_follow_the_projects_timezone(
    project: Project, alice: User, tz: str, utc_time: str, due: bool
) -> None:
    project.timezone = tz
    project.settings = {}  # meow's defaults: 09:00–12:00 and 14:00–18:00, 15 minutes lead
    project.save(update_fields=["timezone", "settings"])
    hour, minute = map(int, utc_time.split(":"))
    now = (timezone.now() - timedelta(days=1)).replace(
        hour=hour, minute=minute, second=0, microsecond=0, tzinfo=UTC
    )
    make_window(project, alice, now=now)
    assert (schedule.dream_enqueue_due(project=project, now=now) is not None) == due
    suppressed_by = selectors.dream_schedule(project=project, now=now)["suppressed_by"]
    assert suppressed_by is None if due else suppressed_by in ("09:00-12:00", "14:00-18:00")


def test_a_window_wrapping_midnight_suppresses_both_sides(project: Project) -> None:
    config = pipeline_config({"pipeline": {"dream_suppress_windows": ["23:00-01:00"]}})
    at = datetime(2026, 3, 1, tzinfo=UTC)
    for clock, suppressed in (("22:44", False), ("22:46", True), ("00:30", True), ("01:00", False)):
        hour, minute = map(int, clock.split(":"))
        now = at.replace(hour=hour, minute=minute)
        assert bool(schedule.suppression(now=now, tz="UTC", config=config)) == suppressed, clock


def test_a_dreamed_window_waits_for_news_and_for_the_cooldown(
    project: Project, alice: User
) -> None:
    configure(project)
    window = make_window(project, alice)
    job = run_due(project)
    assert job.status == Job.Status.DONE and job.success_watermark == job.input_watermark
    assert schedule.dream_enqueue_due(project=project) is None  # dreamed since its last event

    AgentSession.objects.filter(pk=window.pk).update(
        last_active_at=window.last_active_at + timedelta(minutes=20)
    )
    assert schedule.dream_enqueue_due(project=project) is None  # within the 6 h cooldown
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=7))
    assert schedule.dream_enqueue_due(project=project) == job.pk


def test_stage1_output_after_a_dream_makes_the_window_due_again(
    project: Project, alice: User
) -> None:
    configure(project, dream_cooldown_hours=0)
    window = make_window(project, alice)
    run_due(project)
    assert schedule.dream_enqueue_due(project=project) is None
    remember(project, "The deploy script lives in ops/deploy.sh.", window=window)
    assert schedule.dream_enqueue_due(project=project) is not None


def test_one_window_per_scan_and_none_while_a_dream_of_the_bank_runs(
    project: Project, alice: User
) -> None:
    configure(project)
    make_window(project, alice, "newer", idle_hours=4)
    older = make_window(project, alice, "older", idle_hours=5)
    first = schedule.dream_enqueue_due(project=project)
    assert first is not None
    assert Job.objects.get(pk=first).session_id == older.pk
    assert schedule.dream_enqueue_due(project=project) == first  # the same until it is claimed
    assert jobs.claim(first, lease_seconds=600) is not None
    assert schedule.dream_enqueue_due(project=project) is None
    assert dispatch.scan_project(project)["dream"] == 0


def test_attempts_are_bounded_and_failures_visible(
    project: Project, alice: User, fake_llm: Any, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)
    configure(project, dream_max_attempts=2, dream_cooldown_hours=0)
    remember(project, "The API server runs on Node 18.", window=make_window(project, alice))
    job_id = schedule.dream_enqueue_due(project=project)
    assert job_id is not None
    assert runner.dream_run(job_id=job_id) == "error"  # the fake LLM has no scripted answer
    job = Job.objects.get(pk=job_id)
    assert (job.status, job.retries_remaining) == (Job.Status.ERROR, 1)
    assert "no scripted reply" in job.last_error
    assert job.detail["rounds"][0]["name"] == "atomic" and "error" in job.detail["rounds"][0]
    assert schedule.dream_enqueue_due(project=project) == job_id
    assert runner.dream_run(job_id=job_id) == "error"
    job.refresh_from_db()
    assert (job.status, job.retries_remaining) == (Job.Status.FAILED, 0)
    assert schedule.dream_enqueue_due(project=project) is None
    assert runner.dream_run(job_id=job_id) == "skipped"


# --- the manual trigger -------------------------------------------------------------------------


def test_the_manual_trigger_bypasses_idle_suppression_and_cooldown(
    project: Project, alice: User, alice_client: APIClient
) -> None:
    project.timezone = "Asia/Shanghai"
    project.settings = {"pipeline": {"dream_suppress_windows": ["00:00-23:59"]}}
    project.save(update_fields=["timezone", "settings"])
    window = make_window(project, alice, idle_hours=0.01)
    assert schedule.dream_enqueue_due(project=project) is None

    response = alice_client.post(DREAM_URL, {"session_id": "w1"}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["key"] == f"session:{window.public_id}"
    assert runner.dream_run(job_id=response.json()["id"]) == "done"
    job = Job.objects.get(pk=response.json()["id"])
    assert job.detail["trigger"] == "manual"
    assert job.detail["requested_by"]["by"].startswith("alice")
    assert AuditEvent.objects.filter(verb="bank.dream_requested").count() == 1

    again = alice_client.post(DREAM_URL, {"session_id": str(window.public_id)}, format="json")
    assert again.status_code == 202  # nothing new and within the cooldown: still runs
    assert runner.dream_run(job_id=job.pk) == "done"

    runs = alice_client.get(DREAM_URL).json()
    assert runs["schedule"]["timezone"] == "Asia/Shanghai"
    assert runs["schedule"]["suppressed_by"] == "00:00-23:59"
    assert [r["id"] for r in runs["runs"]] == [job.pk]
    assert runs["runs"][0]["detail"]["rounds"][0] == {
        "name": "atomic",
        "skipped": "no memories in scope",
    }


def test_the_manual_trigger_defaults_to_the_latest_window_and_respects_the_lease(
    project: Project, alice: User, alice_client: APIClient
) -> None:
    make_window(project, alice, "earlier", idle_hours=2)
    latest = make_window(project, alice, "latest", idle_hours=1)
    response = alice_client.post(DREAM_URL, format="json")
    assert response.status_code == 202
    assert response.json()["session"] == "latest"
    claim = jobs.claim(response.json()["id"], lease_seconds=600)
    assert claim is not None  # a worker is dreaming about it

    refused = alice_client.post(DREAM_URL, {"session_id": "latest"}, format="json")
    assert refused.status_code == 409
    assert runner.dream_run(job_id=response.json()["id"]) == "skipped"
    assert alice_client.post(DREAM_URL, {"session_id": "nope"}, format="json").status_code == 404
    assert latest.pk == Job.objects.get(pk=response.json()["id"]).session_id


def test_only_maintainers_trigger_a_dream(
    project: Project, alice: User, bob_client: APIClient
) -> None:
    make_window(project, alice)
    assert bob_client.post(DREAM_URL, format="json").status_code == 403
    assert bob_client.get(DREAM_URL).status_code == 200
    assert not Job.objects.exists()


def test_the_bank_dream_command_runs_a_window_here(project: Project, alice: User) -> None:
    window = make_window(project, alice)
    older = remember(project, "The API server runs on Node 18.", window=window)
    remember(project, "The API server runs on Node 20.", window=window)
    out = StringIO()
    call_command("bank_dream", "alpha", "--session", "w1", "--now", stdout=out)
    assert "Dream of w1 done" in out.getvalue()
    assert state(older)[0] == Memory.Status.ARCHIVED


# --- the offline rules --------------------------------------------------------------------------


def test_a_todo_the_window_says_is_done_becomes_stale(project: Project, alice: User) -> None:
    configure(project)
    window = make_window(
        project,
        alice,
        records=[
            ("user", "Add a todo: fix the Safari login redirect loop, and upgrade the CI cache."),
            ("assistant", "Noted both."),
            ("user", "登录页面重定向问题已解决。"),
            (
                "assistant",
                "The login redirect loop on Safari is fixed now. CI cache: not done yet.",
            ),
        ],
    )

    def todo(content: str, first: int = 0, last: int = 1) -> Memory:
        return remember(
            project,
            content,
            kind="project",
            subcategory="todo",
            window=window,
            source_record_start=first,
            source_record_end=last,
        )

    safari = todo("Fix the login redirect loop on Safari.")
    chinese = todo("修复登录页面重定向问题")
    cache = todo("Upgrade the CI cache action.")
    # Its own record range ends after the evidence: the evidence is not later than the todo.
    late = todo("Check the Safari login redirect loop on iOS too.", 3, 3)

    job = run_due(project)

    status, reason, _ = state(safari)
    assert status == Memory.Status.STALE
    assert (
        reason == "record #3 of the session says: The login redirect loop on Safari is fixed now."
    )
    assert state(chinese)[:2] == (
        Memory.Status.STALE,
        "record #2 of the session says: 登录页面重定向问题已解决",
    )
    assert state(cache)[0] == Memory.Status.ACTIVE  # "not done yet" is no evidence
    assert state(late)[0] == Memory.Status.ACTIVE
    assert "marked_stale" in dream_verbs(safari)
    assert dream_verbs(cache) == []
    atomic = job.detail["rounds"][0]
    assert atomic["name"] == "atomic" and atomic["operations"] == {"stale": 2}
    assert [r["name"] for r in job.detail["rounds"]] == ["atomic", "topic", "project"]


def test_a_memory_saying_a_todo_is_done_is_evidence_too(project: Project, alice: User) -> None:
    configure(project)
    window = make_window(project, alice)
    earlier = timezone.now() - timedelta(days=3)
    todo = remember(
        project,
        "Migrate the billing worker to the new queue.",
        kind="project",
        subcategory="todo",
        at=earlier,
    )
    RecallSeen.objects.create(session=window, memory=todo, reason=RecallSeen.Reason.INJECTED)
    lesson = remember(
        project,
        "Finished: the billing worker migration to the new queue was merged.",
        kind="lesson",
        window=window,
    )
    run_due(project)
    assert state(todo)[:2] == (
        Memory.Status.STALE,
        f"memory {str(lesson.public_id)[:8]} says: "
        "Finished: the billing worker migration to the new queue was merged.",
    )


def test_contradictions_keep_the_newest(project: Project, alice: User) -> None:
    configure(project)
    window = make_window(project, alice)
    hours = timezone.now() - timedelta(hours=6)
    older = remember(project, "The API server runs on Node 18.", window=window, at=hours)
    newer = remember(
        project, "The API server runs on Node 20.", window=window, at=hours + timedelta(hours=1)
    )
    other_kind = remember(project, "The API server runs on Node 16.", kind="lesson", at=hours)
    RecallSeen.objects.create(session=window, memory=other_kind, reason=RecallSeen.Reason.SEARCHED)

    run_due(project)

    assert state(older) == (
        Memory.Status.ARCHIVED,
        f"Contradicted by the newer memory {str(newer.public_id)[:8]}.",
        str(newer.public_id),
    )
    assert state(newer)[0] == Memory.Status.ACTIVE
    assert state(other_kind)[0] == Memory.Status.ACTIVE  # another kind: not compared
    event = MemoryEvent.objects.get(memory=older, verb="archived")
    assert event.actor_label == "dream" and event.actor_user is None
    assert event.before == {"status": "active", "status_reason": "", "superseded_by": None}
    assert event.after is not None and event.after["status"] == "archived"


def test_near_duplicates_are_merged_into_the_newest(project: Project, alice: User) -> None:
    configure(project)
    window = make_window(project, alice)
    hours = timezone.now() - timedelta(hours=6)
    older = remember(
        project,
        "Run the unit tests with pytest -x before every commit to main.",
        kind="lesson",
        window=window,
        at=hours,
        importance=3,
    )
    newer = remember(
        project,
        "Run unit tests with pytest -x before each commit to main branch.",
        kind="lesson",
        window=window,
        at=hours + timedelta(hours=1),
    )
    distinct = remember(project, "Use ruff format on save.", kind="lesson", window=window, at=hours)

    run_due(project)

    assert state(older) == (
        Memory.Status.ARCHIVED,
        f"Near-duplicate of the newer memory {str(newer.public_id)[:8]}.",
        str(newer.public_id),
    )
    newer.refresh_from_db()
    assert newer.importance == 3
    assert dream_verbs(newer) == ["dream_update"]
    assert state(distinct)[0] == Memory.Status.ACTIVE


def test_only_the_windows_memories_are_in_scope(project: Project, alice: User, bob: User) -> None:
    configure(project)
    window = make_window(project, alice)
    hours = timezone.now() - timedelta(hours=6)
    remember(project, "Staging deploys run on Fridays at 10.", window=window)
    unseen = remember(project, "Staging deploys run on Fridays at 9.", at=hours)
    proposed = remember(
        project, "Staging deploys run on Fridays at 8.", window=window, at=hours, status="proposed"
    )
    bobs = remember(
        project,
        "I prefer staging deploys on Fridays at 7.",
        kind="user",
        at=hours,
        actor=Actor(user=bob),
    )
    RecallSeen.objects.create(session=window, memory=bobs, reason=RecallSeen.Reason.INJECTED)
    run_due(project)
    assert state(unseen)[0] == Memory.Status.ACTIVE  # neither written nor shown in the window
    assert state(proposed)[0] == Memory.Status.PROPOSED  # waits for its reviewer
    assert state(bobs)[0] == Memory.Status.ACTIVE  # another user's own memory


def test_the_project_round_reports_crowded_subcategories(project: Project, alice: User) -> None:
    configure(project)
    window = make_window(project, alice)
    decisions = [
        "PostgreSQL is the primary database.",
        "Celery with Redis handles background work.",
        "The frontend renders with htmx partials.",
        "Tokens are hashed with HMAC before storage.",
        "Every API path is versioned under v1.",
        "Settings are read from environment variables only.",
        "Migrations are reviewed by two people.",
        "Logs are shipped as JSON lines.",
        "Secrets are redacted before any write.",
    ]
    for content in decisions:
        remember(project, content, kind="project", subcategory="decisions")
    remember(project, "Docker images are built in CI.", kind="project", subcategory="decisions",
             window=window)  # fmt: skip
    job = run_due(project)
    project_round = job.detail["rounds"][2]
    assert project_round["name"] == "project" and project_round["scope"] == 10
    assert project_round["operations"] == {}
    assert project_round["notes"] == [
        "project/decisions has 10 active entries (more than 8): condense it "
        "(the offline provider writes no summaries)."
    ]
    assert Memory.objects.filter(status=Memory.Status.ACTIVE).count() == 10


def test_the_project_round_is_skipped_when_no_project_memory_was_touched(
    project: Project, alice: User
) -> None:
    configure(project)
    remember(project, "PostgreSQL is the primary database.", kind="project", subcategory="ops")
    remember(project, "The API server runs on Node 20.", window=make_window(project, alice))
    job = run_due(project)
    assert job.detail["rounds"][2] == {
        "name": "project",
        "skipped": "no project memory was touched",
    }


# --- finalisation -------------------------------------------------------------------------------


def test_finalisation_stamps_the_windows_own_memories_with_its_last_event(
    project: Project, alice: User
) -> None:
    configure(project)
    window = make_window(project, alice)
    t = window.last_active_at
    early = remember(project, "The build uses make.", window=window, at=t - timedelta(hours=2))
    fresh = remember(project, "The linter is ruff.", window=window)  # written after T
    seen = remember(project, "Docs live in docs/.", at=t - timedelta(days=2))
    RecallSeen.objects.create(session=window, memory=seen, reason=RecallSeen.Reason.INJECTED)
    fresh_updated = fresh.updated_at

    job = run_due(project)

    for memory in (early, fresh, seen):
        memory.refresh_from_db()
    assert early.updated_at == t
    assert fresh.updated_at == fresh_updated
    assert seen.updated_at == t - timedelta(days=2)  # only the window's own memories
    assert job.detail["stamped"] == 1 and job.detail["last_event_at"] == t.isoformat()
    event = MemoryEvent.objects.get(memory=early, verb="dream_stamped")
    assert event.actor_label == "dream"
    assert event.after == {"updated_at": t.isoformat()}


# --- the LLM path -------------------------------------------------------------------------------


@pytest.fixture
def llm_window(project: Project, alice: User, fake_llm: Any, settings: Any) -> dict[str, Any]:
    fake_llm.configure(settings, max_retries=0)
    configure(project)
    window = make_window(
        project,
        alice,
        records=[("user", "We moved the API to Node 20 and the Safari login loop is fixed.")],
    )
    return {
        "window": window,
        "fact": remember(project, "The API server runs on Node 18.", window=window),
        "todo": remember(
            project, "Fix the Safari login loop.", kind="project", subcategory="todo", window=window
        ),
        "lesson": remember(
            project, "Node 18 broke fetch; pin versions.", kind="lesson", window=window
        ),  # fmt: skip
        "outsider": remember(project, "Grafana is at grafana.internal."),
    }


def test_llm_operations_are_validated_and_applied_as_the_dream(
    project: Project, llm_window: dict[str, Any], fake_llm: Any
) -> None:
    fact, todo, lesson = llm_window["fact"], llm_window["todo"], llm_window["lesson"]
    fake_llm.reply(
        ops(
            {
                "op": "update",
                "id": str(fact.public_id),
                "content": "The API server runs on Node 20.",
                "keywords": KEYWORDS,
            },
            {"op": "stale", "id": str(todo.public_id)[:13], "reason": "The user said it is fixed."},
            {
                "op": "create",
                "kind": "rule",
                "content": "Pin the Node major version in .nvmrc.",
                "title": "Pin Node",
                "keywords": KEYWORDS,
                "importance": 2,
                "ref": "pin",
            },
            {
                "op": "archive",
                "id": str(lesson.public_id),
                "reason": "Replaced by a general rule.",
                "superseded_by": "pin",
            },
            notes=["Node versions tidied."],
        )
    )
    fake_llm.reply(
        ops(
            {
                "op": "create",
                "kind": "topic",
                "content": "Moving every service to Node 20.",
                "goal": "All services run Node 20.",
                "keywords": KEYWORDS,
                "importance": 2,
            }
        )
    )
    fake_llm.reply(ops())  # project round: nothing to condense

    job = run_due(project)

    fact.refresh_from_db()
    assert fact.content == "The API server runs on Node 20." and fact.keywords == KEYWORDS
    assert dream_verbs(fact) == ["dream_update"]
    assert state(todo)[:2] == (Memory.Status.STALE, "The user said it is fixed.")
    rule = Memory.objects.get(kind="rule")
    assert (rule.created_via, rule.source_session, rule.status) == ("dream", "w1", "active")
    assert state(lesson) == (
        Memory.Status.ARCHIVED,
        "Replaced by a general rule.",
        str(rule.public_id),
    )
    topic = Memory.objects.get(kind="topic")
    assert topic.goal == "All services run Node 20."
    assert state(llm_window["outsider"])[0] == Memory.Status.ACTIVE
    assert [r.get("operations") for r in job.detail["rounds"]] == [
        {"update": 1, "stale": 1, "create": 1, "archive": 1},
        {"create": 1},
        {},
    ]
    assert job.detail["rounds"][0]["notes"] == ["Node versions tidied."]
    first = fake_llm.requests[0].messages
    assert first[0]["role"] == "system" and '"op": "update"' in first[0]["content"]
    assert "round 1 of up to 3: atomic memories" in first[1]["content"]
    assert str(fact.public_id) in first[1]["content"]
    assert str(llm_window["outsider"].public_id) not in first[1]["content"]
    assert "Safari login loop is fixed" in first[1]["content"]  # the conversation
    assert len(fake_llm.requests) == 3


def test_an_operation_outside_the_rounds_scope_fails_the_round_visibly(
    project: Project, llm_window: dict[str, Any], fake_llm: Any
) -> None:
    outsider = llm_window["outsider"]
    wrong = ops({"op": "archive", "id": str(outsider.public_id), "reason": "old"})
    fake_llm.reply(wrong)
    fake_llm.reply(wrong)  # the repair makes the same mistake
    job_id = schedule.dream_enqueue_due(project=project)
    assert job_id is not None
    assert runner.dream_run(job_id=job_id) == "error"
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.ERROR and job.retries_remaining == 2
    assert "LlmInvalidOutput" in job.last_error and "not the id of a memory" in job.last_error
    assert job.retry_at is not None and job.retry_at > timezone.now() + timedelta(hours=5)
    assert job.detail["error"] == "round atomic failed"
    assert state(outsider)[0] == Memory.Status.ACTIVE
    repair = fake_llm.requests[1].messages
    assert repair[-1]["role"] == "user" and "could not be used" in repair[-1]["content"]
    assert dispatch.scan_project(project)["dream"] == 0  # waits for its retry time


def test_invalid_json_is_repaired_once(
    project: Project, llm_window: dict[str, Any], fake_llm: Any
) -> None:
    fact = llm_window["fact"]
    fake_llm.reply("Sure! I archived the outdated fact.")
    fake_llm.reply(ops({"op": "stale", "id": str(fact.public_id), "reason": "Node 20 now."}))
    fake_llm.reply(ops())
    fake_llm.reply(ops())
    run_due(project)
    assert state(fact)[:2] == (Memory.Status.STALE, "Node 20 now.")
    assert len(fake_llm.requests) == 4


def test_round_answers_of_the_wrong_shape_are_refused(llm_window: dict[str, Any]) -> None:
    fact = llm_window["fact"]
    scope = {str(fact.public_id): fact}
    fid = str(fact.public_id)
    for answer, problem in (
        ({"ops": []}, "exactly"),
        ({"operations": [{"op": "delete", "id": fid}]}, "op one of"),
        ({"operations": [{"op": "stale", "id": fid}]}, "missing reason"),
        ({"operations": [{"op": "update", "id": fid}]}, "changes nothing"),
        ({"operations": [{"op": "update", "id": fid, "goal": "x"}]}, "only for topic"),
        ({"operations": [{"op": "update", "id": fid, "importance": 0}]}, "importance"),
        ({"operations": [{"op": "archive", "id": fid, "reason": "x", "superseded_by": fid}]},
         "itself"),
        (
            {"operations": [{"op": "create", "kind": "topic", "content": "x", "keywords": ["a"],
                             "importance": 1}]},
            "in the atomic round",
        ),
        (
            {"operations": [{"op": "create", "kind": "project", "content": "x",
                             "keywords": ["a"], "importance": 1}]},
            "subcategory must be one of",
        ),
        (
            {"operations": [
                {"op": "stale", "id": fid, "reason": "a"},
                {"op": "archive", "id": fid, "reason": "b"},
            ]},
            "already marked",
        ),
        (
            {"operations": [
                {"op": "create", "kind": "fact", "content": c, "keywords": ["a"],
                 "importance": 1, "ref": "n1"}
                for c in ("one", "two")
            ]},
            "same ref",
        ),
    ):  # fmt: skip
        with pytest.raises(ValueError, match=problem):
            validate_operations(answer, round_name="atomic", scope=scope, user_scope=True)


# --- the lease and a real worker ----------------------------------------------------------------


def test_a_second_dream_of_the_same_window_is_skipped(project: Project, alice: User) -> None:
    configure(project)
    window = make_window(project, alice)
    older = remember(project, "The API server runs on Node 18.", window=window)
    remember(project, "The API server runs on Node 20.", window=window)
    job_id = schedule.dream_enqueue_due(project=project)
    assert job_id is not None
    claim = jobs.claim(job_id, lease_seconds=1800)  # another worker is dreaming
    assert claim is not None
    assert runner.dream_run(job_id=job_id) == "skipped"
    assert state(older)[0] == Memory.Status.ACTIVE
    assert Job.objects.get(pk=job_id).status == Job.Status.RUNNING


@pytest.mark.worker
def test_a_due_dream_runs_on_a_real_worker(
    celery_worker: Worker, project: Project, alice: User
) -> None:
    configure(project)
    window = make_window(project, alice)
    older = remember(project, "The API server runs on Node 18.", window=window)
    remember(project, "The API server runs on Node 20.", window=window)
    celery_worker.start()
    assert dispatch.scan_project(project)["dream"] == 1  # what beat does every minute
    job = Job.objects.get(kind=Job.Kind.DREAM)
    assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.DONE, timeout=90), (
        Job.objects.values("status", "last_error")
    )
    assert state(older)[0] == Memory.Status.ARCHIVED
    assert dream_verbs(older) == ["archived"]
