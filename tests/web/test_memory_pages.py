"""Memory browser, memory detail and its actions, through the Django test client."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.memories import services
from memoryhub.memories.models import Memory
from projects.models import Project, Role
from tests.web.conftest import remember

HX = {"HX-Request": "true"}


def url(name: str, memory: Memory | None = None, **kwargs: object) -> str:
    if memory is not None:
        kwargs["memory_id"] = memory.public_id
    return reverse(f"web:{name}", kwargs={"slug": "alpha", **kwargs})


# --- the browser --------------------------------------------------------------------------


def test_it_lists_filters_and_sorts_visible_memories(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    remember(project, alice, "Deploys go through make release.", importance=3)
    remember(project, bob, "Lint with ruff before pushing.", kind="rule")
    remember(project, bob, "Bob prefers terse answers.", kind="user")  # private to bob
    client = web_client(alice)
    page = client.get(url("memories")).content.decode()
    assert "Deploys go through" in page and "Lint with ruff" in page
    assert "Bob prefers" not in page  # another person's user-scope memory
    rules = client.get(url("memories"), {"kind": "rule"}).content.decode()
    assert "Lint with ruff" in rules and "Deploys go through" not in rules
    by_bob = client.get(url("memories"), {"owner": "bob"}).content.decode()
    assert "Lint with ruff" in by_bob and "Deploys go through" not in by_bob
    important = client.get(url("memories"), {"sort": "importance"}).content.decode()
    assert important.index("Deploys go through") < important.index("Lint with ruff")
    assert "Bob prefers" in web_client(bob).get(url("memories")).content.decode()


def test_search_uses_the_ranking_and_does_not_count_as_a_recall_hit(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    hit = remember(project, alice, "Postgres migrations run with manage.py migrate.")
    remember(project, alice, "The frontend is built with vite.")
    page = web_client(alice).get(url("memories"), {"q": "migrations postgres"}).content.decode()
    assert "Postgres migrations" in page and "vite" not in page
    assert "Score" in page
    hit.refresh_from_db()
    assert hit.hit_count == 0


def test_htmx_filtering_returns_only_the_results(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    remember(project, alice, "Deploys go through make release.")
    response = web_client(alice).get(
        url("memories"),
        {"status": "all"},
        headers={"HX-Request": "true", "HX-Target": "memory-results"},
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="memory-results">') and "<html" not in body
    assert "Deploys go through" in body


def test_bad_filters_answer_400_with_the_form(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    response = web_client(alice).get(url("memories"), {"kind": "nonsense", "importance": "x"})
    assert response.status_code == 400
    assert b"form-errors" in response.content


def test_filters_take_the_apis_comma_separated_lists(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    remember(project, alice, "Active deploy rule.", kind="rule")
    remember(project, alice, "Stale fact about the build.", status="stale")
    remember(project, alice, "Archived fact about the build.", status="archived")
    remember(project, alice, "Proposed lesson about flaky tests.", kind="lesson", status="proposed")
    client = web_client(alice)

    response = client.get(url("memories"), {"status": "active, archived"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Active deploy rule" in page and "Archived fact" in page
    assert "Stale fact" not in page and "Proposed lesson" not in page
    # The menu shows the list it filters by, selected, instead of the default entry.
    assert '<option value="active,archived" selected>Active, Archived</option>' in page

    kinds = client.get(url("memories"), {"kind": "rule,lesson", "status": "all"}).content.decode()
    assert "Active deploy rule" in kinds and "Proposed lesson" in kinds
    assert "Stale fact" not in kinds

    refused = client.get(url("memories"), {"status": "active,gone"})
    assert refused.status_code == 400
    assert "gone is not one of the available choices" in refused.content.decode()


def test_keyset_pagination_walks_every_memory_once(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    services.memory_bulk_create(
        project=project,
        actor=Actor(user=alice),
        items=[
            services.MemoryInput(content=f"Memory number {i:03d}", kind="fact") for i in range(120)
        ],
    )
    client = web_client(alice)
    seen: list[str] = []
    next_url: str | None = url("memories")
    pages = 0
    while next_url:
        response = client.get(next_url if next_url.startswith("/") else url("memories") + next_url)
        rows = response.context["rows"]
        seen += [row.memory.content for row in rows]
        next_url = response.context["next_url"]
        pages += 1
    assert pages == 3
    assert sorted(seen) == [f"Memory number {i:03d}" for i in range(120)]


@pytest.mark.parametrize("params", [{}, {"q": "release deploy"}, {"status": "all", "sort": "hits"}])
def test_list_queries_do_not_grow_with_rows(
    alice: User,
    bob: User,
    project: Project,
    web_client: Callable[[User], Client],
    django_assert_max_num_queries: Callable[..., object],
    params: dict[str, str],
) -> None:
    client = web_client(alice)
    remember(project, bob, "Deploy with make release.")
    client.get(url("memories"), params)  # warm caches (session, the search's bank copy)
    with django_assert_max_num_queries(13) as few:  # type: ignore[attr-defined]
        client.get(url("memories"), params)
    limit = len(few.captured_queries)
    services.memory_bulk_create(
        project=project,
        actor=Actor(user=bob),
        items=[
            services.MemoryInput(
                content=f"Deploy step {i} of the release.", kind="fact", keywords=["release"]
            )
            for i in range(40)
        ],
    )
    # The search's bank copy reads the 40 new memories once (3 statements, whatever their
    # number); after that a page costs what it did.
    client.get(url("memories"), params)
    with django_assert_max_num_queries(limit):  # type: ignore[attr-defined]
        response = client.get(url("memories"), params)
    assert len(response.context["rows"]) > 20


# --- detail and actions -------------------------------------------------------------------


def test_detail_shows_content_provenance_and_history_with_diffs(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(
        project,
        bob,
        "Use Node 18.",
        keywords=["node"],
        source_session="sess-1",
        source_record_start=4,
    )
    services.memory_update(
        memory=memory, actor=Actor(user=alice), changes={"content": "Use Node 20."}
    )
    page = web_client(alice).get(url("memory", memory)).content.decode()
    assert "Use Node 20." in page and "sess-1" in page and "records 4" in page
    assert "<del>18</del>" in page and "<ins>20</ins>" in page
    assert "alice" in page and "bob" in page  # who created, who edited


def test_outsiders_get_404_and_low_roles_403_on_every_memory_page(
    charlie: User,
    alice: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    memory = remember(project, alice, "A project memory.", status="proposed")
    outsider = web_client(charlie)
    viewer = web_client(role_user(Role.VIEWER))
    member = web_client(role_user(Role.MEMBER))
    gets = ["memories", "memory", "memory_similar", "memory_edit", "memory_merge", "memory_delete"]
    posts = [
        "memory_archive",
        "memory_stale",
        "memory_restore",
        "memory_approve",
        "memory_reject",
        "memory_promote",
        "memory_delete",
        "memory_merge",
        "memory_edit",
    ]
    for name in gets:
        target = url(name) if name == "memories" else url(name, memory)
        assert outsider.get(target).status_code == 404, name
    for name in posts:
        assert outsider.post(url(name, memory), {"reason": "x"}).status_code == 404, name
    for name in (
        "memory_archive",
        "memory_stale",
        "memory_restore",
        "memory_promote",
        "memory_edit",
        "memory_merge",
    ):
        assert viewer.post(url(name, memory), {"reason": "x"}).status_code == 403, name
    for name in ("memory_approve", "memory_reject"):
        assert member.post(url(name, memory), {"reason": "x"}).status_code == 403, name
    assert member.get(url("memory_delete", memory)).status_code == 403
    memory.refresh_from_db()
    assert memory.status == Memory.Status.PROPOSED


def test_buttons_follow_the_role(
    alice: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    memory = remember(project, alice, "A proposed memory.", status="proposed")
    pages = {
        role: web_client(role_user(role)).get(url("memory", memory)).content.decode()
        for role in (Role.VIEWER, Role.MEMBER, Role.MAINTAINER)
    }
    pages[Role.OWNER] = web_client(alice).get(url("memory", memory)).content.decode()
    for role, page in pages.items():
        assert (url("memory_stale", memory) in page) == (role != Role.VIEWER), role
        assert (url("memory_edit", memory) in page) == (role != Role.VIEWER), role
        assert (url("memory_approve", memory) in page) == (role in (Role.MAINTAINER, Role.OWNER)), (
            role
        )
        assert (url("memory_delete", memory) in page) == (role == Role.OWNER), role
        assert url("memory_promote", memory) not in page  # a project memory


def test_mark_stale_archive_restore_in_place_with_htmx(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Node 18 is required.")
    client = web_client(bob)  # a member
    missing = client.post(url("memory_stale", memory), {"reason": " "}, headers=HX)
    assert missing.status_code == 400 and b"Say why" in missing.content
    stale = client.post(url("memory_stale", memory), {"reason": "We moved to Node 20."}, headers=HX)
    body = stale.content.decode()
    assert stale.status_code == 200 and body.lstrip().startswith('<article id="memory-main"')
    assert "We moved to Node 20." in body and "marked stale" in body
    archived = client.post(url("memory_archive", memory))  # without htmx: redirect
    assert archived.status_code == 302 and archived["Location"] == url("memory", memory)
    restored = client.post(url("memory_restore", memory), headers=HX)
    assert restored.status_code == 200
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE
    verbs = list(memory.events.order_by("id").values_list("verb", flat=True))
    assert verbs == ["created", "marked_stale", "archived", "restored"]


def test_edit_validates_and_records_the_change(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Old text.")
    client = web_client(alice)
    form = client.get(url("memory_edit", memory))
    assert form.status_code == 200 and b"Old text." in form.content
    data = {
        "title": "T",
        "content": "New text.",
        "keywords": "a, b，c",
        "kind": "fact",
        "importance": 2,
    }
    bad = client.post(url("memory_edit", memory), data | {"subcategory": "ops"})
    assert bad.status_code == 400 and b"Only project memories have a subcategory" in bad.content
    ok = client.post(url("memory_edit", memory), data)
    assert ok.status_code == 302
    memory.refresh_from_db()
    assert (memory.content, memory.keywords, memory.kind) == ("New text.", ["a", "b", "c"], "fact")


def test_a_save_over_a_newer_edit_is_caught_not_silently_reverted(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Deploy with make release.", title="Deploys", kind="fact")
    alices, bobs = web_client(alice), web_client(bob)
    opened = alices.get(url("memory_edit", memory)).context["version"]
    fields = {"title": "Deploys", "content": "Deploy with make release.", "kind": "fact"}
    fields |= {"keywords": "", "importance": "1"}
    bob_opened = bobs.get(url("memory_edit", memory)).context["version"]
    assert (
        bobs.post(
            url("memory_edit", memory), fields | {"title": "Releases", "version": bob_opened}
        ).status_code
        == 302
    )

    late = alices.post(
        url("memory_edit", memory),
        fields | {"content": "Deploy with make ship.", "version": opened},
    )
    assert late.status_code == 400
    assert "bob changed this memory at" in late.content.decode()
    assert "Deploy with make ship." in late.content.decode()  # her edits are kept in the form
    memory.refresh_from_db()
    assert (memory.title, memory.content) == ("Releases", "Deploy with make release.")

    # Having seen it, saving again replaces the newer edit on purpose.
    again = alices.post(
        url("memory_edit", memory),
        fields | {"content": "Deploy with make ship.", "version": late.context["version"]},
    )
    assert again.status_code == 302
    memory.refresh_from_db()
    assert (memory.title, memory.content) == ("Deploys", "Deploy with make ship.")


def test_promote_is_offered_to_the_owner_only_and_shares_the_memory(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    private = remember(project, bob, "I like small pull requests.", kind="user")
    assert web_client(alice).get(url("memory", private)).status_code == 404
    bob_client = web_client(bob)
    assert url("memory_promote", private) in bob_client.get(url("memory", private)).content.decode()
    response = bob_client.post(url("memory_promote", private), headers=HX)
    assert response.status_code == 200 and b"Shared with the project" in response.content
    assert web_client(alice).get(url("memory", private)).status_code == 200


def test_merge_page_previews_and_merges(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    keep = remember(project, alice, "Tests run with make test.")
    other = remember(project, alice, "CI runs make test.")
    client = web_client(alice)
    preview = client.get(
        url("memory_merge", keep), {"other": str(other.public_id)}
    ).content.decode()
    assert "Tests run with make test.\n\nCI runs make test." in preview
    done = client.post(
        url("memory_merge", keep), {"other": other.public_id, "content": "Run make test (CI too)."}
    )
    assert done.status_code == 302
    keep.refresh_from_db()
    other.refresh_from_db()
    assert keep.content == "Run make test (CI too)."
    assert (other.status, other.superseded_by_id) == (Memory.Status.ARCHIVED, keep.pk)
    page = client.get(url("memory", keep)).content.decode()
    assert "Merged from" in page and str(other.public_id) in page
    assert "Superseded by" in client.get(url("memory", other)).content.decode()


def test_a_memory_cannot_be_previewed_as_merged_into_itself(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    keep = remember(project, alice, "Tests run with make test.")
    page = web_client(alice).get(url("memory_merge", keep), {"other": str(keep.public_id)})
    html = page.content.decode()
    assert page.status_code == 200 and "Pick two different memories." in html
    assert "Tests run with make test.\n\nTests run with make test." not in html


def test_find_similar_lists_neighbours(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    target = remember(project, alice, "Deploy the api with make release on Fridays.")
    remember(project, alice, "Deploy the worker with make release too.")
    response = web_client(alice).get(url("memory_similar", target), headers=HX)
    assert response.status_code == 200 and b"Deploy the worker" in response.content
    assert b"<html" not in response.content


def test_hard_delete_needs_the_owner_and_the_typed_id(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Something to remove.")
    client = web_client(alice)
    wrong = client.post(url("memory_delete", memory), {"confirm": "nope"})
    assert wrong.status_code == 400 and Memory.objects.filter(pk=memory.pk).exists()
    done = client.post(url("memory_delete", memory), {"confirm": str(memory.public_id)[:8]})
    assert done.status_code == 302 and not Memory.objects.filter(pk=memory.pk).exists()
    assert AuditEvent.objects.filter(
        verb="memory.deleted", target_id=str(memory.public_id)
    ).exists()


def test_pages_vary_on_hx_request_and_an_ended_session_redirects_the_whole_window(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Node 18 in CI.")
    page = web_client(alice).get(url("memories"), {"kind": "fact"})
    # The page and the fragment htmx fetches at this address are cached apart (Back showed
    # the cached fragment, unstyled).
    assert "HX-Request" in page["Vary"]

    signed_out = Client()
    detail = "http://testserver" + url("memory", memory)
    action = signed_out.post(
        url("memory_stale", memory),
        {"reason": "old"},
        headers={"HX-Request": "true", "HX-Current-URL": detail},
    )
    assert action.status_code == 200
    assert action["HX-Redirect"] == "/accounts/login/?next=" + quote(url("memory", memory), safe="")
    plain = signed_out.post(url("memory_stale", memory), {"reason": "old"})
    assert plain.status_code == 302 and "HX-Redirect" not in plain  # a plain form: as before
    memory.refresh_from_db()
    assert memory.status == "active"


def test_a_search_filtered_by_author_or_importance_finds_matches_past_the_first_window(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    services.memory_bulk_create(
        project=project,
        actor=Actor(user=alice),
        items=[
            services.MemoryInput(content=f"zebra zebra zebra stripes {i}", kind="fact")
            for i in range(60)
        ],
    )
    long = "Notes on the build: " + "the cache is warmed before tests run. " * 40 + "zebra"
    remember(project, bob, long, importance=4)  # ranked below alice's sixty
    client = web_client(alice)
    for params in ({"owner": "bob"}, {"importance": "4"}):
        response = client.get(url("memories"), {"q": "zebra", **params})
        rows = response.context["rows"]
        assert [row.memory.content for row in rows] == [long], params
        assert response.context["next_url"] is None
    everyone = client.get(url("memories"), {"q": "zebra"}).context["rows"]
    assert len(everyone) == 50 and long not in [row.memory.content for row in everyone]
