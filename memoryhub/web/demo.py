"""The demo bank `make run` creates: a few sessions (three ended, which the worker extracts into
proposed memories since the project requires review; one still open) and memories in every
state, so a fresh dashboard has something to review. Everything goes through the services."""

from __future__ import annotations

from typing import Any

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories import services as memory_services
from memoryhub.sessions import services as session_services
from memoryhub.sessions.records import RecordInput
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import project_update


def _tool(name: str, command: str, use_id: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": use_id, "name": name, "input": {"command": command}}]


def _result(use_id: str, text: str) -> RecordInput:
    return RecordInput(type="tool_result", content=text, tool_use_id=use_id)


SESSIONS: list[tuple[str, str, bool, list[RecordInput]]] = [
    (
        "demo-flaky-checkout-test",
        "Fix the flaky checkout test",
        True,
        [
            RecordInput("user", "test_checkout is flaky on CI. We use pytest with pytest-xdist."),
            RecordInput("assistant", _tool("Bash", "pytest -x tests/test_checkout.py", "t1")),
            _result("t1", "FAILED tests/test_checkout.py::test_total - AssertionError\n1 failed"),
            RecordInput(
                "assistant", "The test compares against the wall clock; it fails near midnight."
            ),
            RecordInput(
                "user", "Never use time.sleep in tests. Use freezegun to freeze time instead."
            ),
            RecordInput("assistant", _tool("Bash", "pytest -n 4", "t2")),
            _result("t2", "128 passed in 9.41s"),
            RecordInput("assistant", "All 128 tests pass with the clock frozen."),
        ],
    ),
    (
        "demo-release",
        "How do we release?",
        True,
        [
            RecordInput("user", "How do we deploy the API?"),
            RecordInput("assistant", "We deploy with `make release` from the main branch."),
            RecordInput(
                "user", "Right. Don't deploy on Fridays, and always tag the release first."
            ),
            RecordInput("assistant", "Understood: tag, then make release, never on a Friday."),
        ],
    ),
    (
        "demo-zh-database",
        "数据库迁移",
        True,
        [
            RecordInput("user", "我们使用 PostgreSQL 15 作为主数据库。不要直接推送到 main 分支。"),
            RecordInput("assistant", "好的，数据库迁移通过 manage.py migrate 运行。"),
        ],
    ),
    (
        "demo-open-session",
        "Refactor the importer",
        False,
        [
            RecordInput(
                "user",
                f"{INJECTION_OPEN}\n- Deploy with make release (project rule)\n{INJECTION_CLOSE}\n"
                "Let's refactor the CSV importer. It should stream rows, not load the whole file.",
            ),
            RecordInput("assistant", "I will switch it to csv.reader over the open file."),
            RecordInput("user", "Good. Keep imports all-or-nothing: one transaction per file."),
            RecordInput("assistant", "Done; a bad row rolls back the whole file."),
        ],
    ),
]


def demo_content(*, project: Project, user: User) -> dict[str, int]:
    actor = Actor(user=user)
    access = project_access(slug=project.slug, actor=actor, min_role=Role.OWNER)
    project_update(access=access, changes={"settings": {"review_required": True}})
    for external_id, title, ended, records in SESSIONS:
        session, _ = session_services.session_get_or_create(
            project=project, actor=actor, external_id=external_id, title=title
        )
        session_services.records_append(session=session, actor=actor, records=records)
        if ended:  # the worker's next scan extracts it
            session_services.session_end(session=session, actor=actor)

    def remember(content: str, **fields: Any) -> Any:
        fields.setdefault("kind", "project")
        return memory_services.memory_create(
            project=project,
            actor=actor,
            data=memory_services.MemoryInput(content=content, **fields),
        )

    remember(
        "The API is a Django 6 project; background work runs on Celery with Redis.",
        title="Stack",
        subcategory="overview",
        importance=3,
        keywords=["django", "celery", "redis", "stack"],
    )
    remember(
        "Run the test suite with `make test`; CI runs it on PostgreSQL and Redis.",
        kind="fact",
        keywords=["tests", "make", "ci"],
    )
    old = remember("The frontend build needs Node 18.", kind="fact", keywords=["node", "frontend"])
    new = remember("The frontend build needs Node 20.", kind="fact", keywords=["node", "frontend"])
    memory_services.memory_set_status(
        memory=old, actor=actor, status="stale", reason="Upgraded to Node 20.", superseded_by=new
    )
    remember("I prefer short answers with the command first.", kind="user", keywords=["style"])
    for content, start, end, kind in (
        (
            "The CSV importer streams rows with csv.reader instead of loading the file.",
            1,
            1,
            "project",
        ),
        ("Imports are all-or-nothing: one transaction per file.", 2, 3, "rule"),
        ("Refactors of the importer keep the public function names.", 0, 1, "lesson"),
    ):
        remember(
            content,
            kind=kind,
            status="proposed",
            source_session="demo-open-session",
            source_record_start=start,
            source_record_end=end,
            keywords=["importer", "csv"],
        )
    return {"sessions": len(SESSIONS)}
