"""Bank administration page: who sees which button, typed confirmation, the rebuild's progress
fragment (polling until done), audit events."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.llm.models import LlmCall
from memoryhub.memories.models import Memory
from memoryhub.pipeline import jobs, services
from memoryhub.pipeline.models import Job
from projects.models import Project, Role
from tests.web.admin.helpers import push_session

BANK = "/p/alpha/bank/"


def test_buttons_follow_the_role(
    alice: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
    charlie: User,
) -> None:
    pages = {
        role: web_client(role_user(role)).get(BANK).content.decode()
        for role in (Role.VIEWER, Role.MAINTAINER)
    }
    owner = web_client(alice).get(BANK).content.decode()
    for html in (*pages.values(), owner):
        assert "Diagnose" in html and "Memories" in html
    assert "Enqueue due work now" not in pages[Role.VIEWER]
    assert "Enqueue due work now" in pages[Role.MAINTAINER]
    assert "Rebuild from transcripts" not in pages[Role.MAINTAINER]
    assert "Clear the bank" not in pages[Role.MAINTAINER]
    assert "Rebuild from transcripts" in owner and "Clear the bank" in owner
    assert web_client(charlie).get(BANK).status_code == 404


def test_actions_check_roles_like_the_api(
    project: Project, role_user: Callable[[Role], User], web_client: Callable[[User], Client]
) -> None:
    member = web_client(role_user(Role.MEMBER))
    maintainer = web_client(role_user(Role.MAINTAINER))
    assert member.post(BANK + "enqueue/").status_code == 403
    assert member.post(BANK + "dream/").status_code == 403
    assert maintainer.post(BANK + "clear/", {"confirm": "alpha"}).status_code == 403
    assert maintainer.post(BANK + "rebuild/", {"confirm": "alpha"}).status_code == 403
    assert maintainer.post(BANK + "enqueue/").status_code == 302
    assert AuditEvent.objects.filter(verb="bank.enqueued").count() == 1
    dream = maintainer.post(BANK + "dream/", follow=True).content.decode()
    assert "no session to dream about" in dream  # the selector's 404, shown as a message


def test_clear_needs_the_slug_typed(
    alice: User, alice_client: APIClient, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    wrong = client.post(BANK + "clear/", {"confirm": "alpah"})
    assert wrong.status_code == 400
    assert "Type the project&#x27;s slug" in wrong.content.decode()
    assert not AuditEvent.objects.filter(verb="bank.cleared").exists()
    right = client.post(BANK + "clear/", {"confirm": "alpha"})
    assert right.status_code == 302
    assert AuditEvent.objects.filter(verb="bank.cleared").count() == 1


def test_rebuild_progress_polls_until_done(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    push_session(alice_client, "s-1", end=True)
    client = web_client(alice)
    htmx = {"HX-Request": "true"}
    started = client.post(BANK + "rebuild/", {"confirm": "alpha"}, headers=htmx)
    assert started.status_code == 200
    fragment = started.content.decode()
    assert fragment.lstrip().startswith('<div id="rebuild-progress"')
    assert 'hx-trigger="every 1s"' in fragment and 'value="0"' in fragment
    job = Job.objects.get(kind=Job.Kind.REBUILD)
    # The worker's run, in-process (the browser test runs it on a real worker).
    assert services.rebuild_run(job_id=job.pk) == "done"
    finished = client.get(BANK + "progress/", headers=htmx)
    # The last poll reloads the page (stats, jobs); its fragment is whole, form included.
    assert finished.headers["HX-Refresh"] == "true"
    done = finished.content.decode()
    assert "hx-trigger" not in done and 'value="100"' in done and "100 %" in done
    assert 'name="confirm"' in done
    assert Memory.objects.filter(source_session="s-1").exists()
    # Without htmx the progress URL is the whole page.
    assert "<html" in client.get(BANK + "progress/").content.decode()
    wrong = client.post(BANK + "rebuild/", {"confirm": "nope"}, headers=htmx).content.decode()
    assert "Type the project" in wrong and "hx-trigger" not in wrong
    # A second rebuild shows as queued at once, although the job row still says done.
    again = client.post(BANK + "rebuild/", {"confirm": "alpha"}, headers=htmx).content.decode()
    assert 'hx-trigger="every 1s"' in again and "queued" in again


def test_the_progress_fragment_shows_a_rebuilds_error_and_stops(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    htmx = {"HX-Request": "true"}
    client.post(BANK + "rebuild/", {"confirm": "alpha"}, headers=htmx)
    job = Job.objects.get(kind=Job.Kind.REBUILD)
    # A worker takes the job and it breaks (the pipeline's own lease functions).
    claim = jobs.claim(job.pk, lease_seconds=60)
    assert claim is not None
    assert jobs.heartbeat(claim, lease_seconds=60, progress=40)
    polled = client.get(BANK + "progress/", headers=htmx)
    running = polled.content.decode()
    assert 'value="40"' in running and 'hx-trigger="every 1s"' in running
    assert "HX-Refresh" not in polled.headers
    jobs.fail(claim, "stage 1 of s-1 <b>exploded</b>", retry_delay_seconds=60)
    ended = client.get(BANK + "progress/", headers=htmx)
    assert ended.headers["HX-Refresh"] == "true"
    failed = ended.content.decode()
    assert "hx-trigger" not in failed
    assert "stage 1 of s-1 &lt;b&gt;exploded&lt;/b&gt;" in failed and 'role="alert"' in failed
    assert "It is retried at" in failed


def test_list_pages_keep_their_query_count(
    alice: User,
    alice_client: APIClient,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = web_client(alice)
    pages = ["/p/alpha/recall-files/", "/p/alpha/members/", BANK, "/p/alpha/instructions/"]

    def counts() -> list[int]:
        out = []
        for url in pages:
            with CaptureQueriesContext(connection) as ctx:
                assert client.get(url).status_code == 200
            out.append(len(ctx.captured_queries))
        return out

    def grow(i: int) -> None:
        alice_client.put(
            f"/api/v1/projects/alpha/recall-files/project/f{i}.md",
            {"content": f"---\nname: F{i}\n---\nx"},
            format="json",
        )
        alice_client.put(
            f"/api/v1/projects/alpha/instructions/files/docs/f{i}.md",
            {"content": "x"},
            format="json",
        )
        alice_client.post("/api/v1/tokens/", {"name": f"t{i}", "project": "alpha"}, format="json")
        push_session(alice_client, f"grow-{i}", end=True)

    grow(0)
    role_user(Role.VIEWER)
    before = counts()
    for i in range(1, 6):
        grow(i)
    role_user(Role.MAINTAINER)
    assert counts() == before


def test_the_llm_card_counts_what_the_usage_endpoint_counts(
    alice: User,
    alice_client: APIClient,
    project: Project,
    web_client: Callable[[User], Client],
) -> None:
    # Offline work: logged with its estimated tokens, never counted against a budget.
    LlmCall.objects.create(
        project=project,
        purpose="extraction",
        role="smol",
        outcome="ok",
        provider="offline",
        tokens_in=1200,
        tokens_out=300,
    )
    LlmCall.objects.create(
        project=project,
        purpose="consolidation",
        role="smol",
        outcome="ok",
        provider="openai",
        tokens_in=100,
        tokens_out=50,
    )
    today = alice_client.get("/api/v1/projects/alpha/llm/usage/").json()["today"]
    assert today["calls"] == 2
    page = web_client(alice).get(BANK).content.decode()
    card = page[page.index("LLM today") :]
    assert '<p class="stat">2</p>' in card
    assert "calls, 1650 tokens" in card and "no budget" in card
    project.settings = {"llm": {"daily_token_budget": 10000}}
    project.save(update_fields=["settings"])
    card = web_client(alice).get(BANK).content.decode()
    assert "150 of the 10000-token budget" in card  # the offline call costs nothing


def test_memories_by_kind_speak_the_pages_language(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    response = alice_client.post(
        "/api/v1/projects/alpha/memories/",
        {"content": "The API is versioned under /api/v1.", "kind": "fact"},
        format="json",
    )
    assert response.status_code == 201, response.content
    html = web_client(alice).get(BANK, HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert ">事实 1</span>" in html and ">fact 1<" not in html
