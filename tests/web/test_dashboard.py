"""Projects list and project dashboard."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from memoryhub.pipeline.models import Job
from memoryhub.recall.models import RecallSeen
from projects.models import Project
from tests.factories import ProjectFactory
from tests.web.conftest import remember, transcript

DASHBOARD = reverse("web:project", kwargs={"slug": "alpha"})


def test_projects_list_counts_what_the_person_may_see(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    remember(project, alice, "a1")
    remember(project, alice, "a2", status="proposed")
    remember(project, bob, "bob's own", kind="user")  # not counted for alice
    transcript(project, bob, "s1", [("user", "hi")])
    Job.objects.create(
        kind=Job.Kind.STAGE2, key="project:x", project=project, status=Job.Status.FAILED
    )
    response = web_client(alice).get("/")
    (row,) = response.context["rows"]
    assert (row["active"], row["proposed"], row["stale"], row["sessions"], row["failed_jobs"]) == (
        1,
        1,
        0,
        1,
        1,
    )
    (bobs,) = web_client(bob).get("/").context["rows"]
    assert bobs["active"] == 2


def test_projects_list_queries_do_not_grow_with_projects(
    alice: User,
    project: Project,
    web_client: Callable[[User], Client],
    django_assert_max_num_queries: Callable[..., object],
) -> None:
    from projects.models import ProjectMembership

    client = web_client(alice)
    client.get("/")
    with django_assert_max_num_queries(10) as few:  # type: ignore[attr-defined]
        client.get("/")
    for _ in range(5):
        other = ProjectFactory.create()
        ProjectMembership.objects.create(project=other, user=alice, role="owner")
        remember(other, alice, "m")
    with django_assert_max_num_queries(len(few.captured_queries)):  # type: ignore[attr-defined]
        response = client.get("/")
    assert len(response.context["rows"]) == 6


def test_dashboard_shows_counts_failures_worker_llm_and_charts(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    remember(project, alice, "Visible fact.", kind="fact")
    remember(project, alice, "Awaiting review.", status="proposed")
    private = remember(project, bob, "Bob's private note.", kind="user")
    session = transcript(project, bob, "s1", [("user", "hi")])
    RecallSeen.objects.create(session=session, memory=private, reason="searched")
    Job.objects.create(
        kind=Job.Kind.STAGE1,
        key="session:abc",
        project=project,
        status=Job.Status.FAILED,
        last_error="LLM answered 500 <script>x</script>",
    )
    response = web_client(alice).get(DASHBOARD)
    page = response.content.decode()
    assert response.status_code == 200
    assert response.context["bank"]["all"] == 2  # bob's private memory is not counted
    assert response.context["bank"]["proposed"] == 1
    assert "LLM answered 500 &lt;script&gt;x&lt;/script&gt;" in page
    assert "never seen" in page  # no worker heartbeat in this test
    assert page.count("<svg") == 2
    created, hits = response.context["charts"]
    assert created.total == 2
    assert hits.total == 0  # the only hit was on a memory alice cannot see
    assert web_client(bob).get(DASHBOARD).context["charts"][1].total == 1


def test_charts_count_the_last_30_days(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    old = remember(project, alice, "old")
    old.created_at = timezone.now() - timedelta(days=40)
    old.save(update_fields=["created_at"])
    remember(project, alice, "new")
    created = web_client(alice).get(DASHBOARD).context["charts"][0]
    assert created.total == 1 and created.line_max == 2 and len(created.bars) == 30


def test_awaiting_review_counts_what_the_viewers_queue_shows(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    # bob (a member) reviews only his own private proposals; the project's are maintainers'.
    for i in range(3):
        remember(project, alice, f"Project proposal {i}.", status="proposed")
    remember(project, bob, "Bob's private proposal.", kind="user", status="proposed")
    remember(project, alice, "Alice's private proposal.", kind="user", status="proposed")
    queue = reverse("web:review", kwargs={"slug": "alpha"})
    for user, expected in ((bob, 1), (alice, 4)):
        client = web_client(user)
        assert client.get(DASHBOARD).context["awaiting_review"] == expected, user
        assert client.get(queue).context["total"] == expected, user
