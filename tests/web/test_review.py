"""The review queue: maintainers review the project's proposals, everyone their own private
ones; approve, edit-then-approve, reject, bulk; provenance."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services
from memoryhub.memories.models import Memory
from projects.models import Project, Role
from tests.web.conftest import remember, transcript

HX = {"HX-Request": "true"}
QUEUE = reverse("web:review", kwargs={"slug": "alpha"})


def url(name: str, memory: Memory) -> str:
    return reverse(f"web:{name}", kwargs={"slug": "alpha", "memory_id": memory.public_id})


def test_the_queue_shows_proposed_memories_with_their_source_records(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    transcript(
        project,
        bob,
        "sess-42",
        [
            ("user", "How do we deploy?"),
            (
                "assistant",
                "<memoryhub-context>injected memory text</memoryhub-context> Use make release.",
            ),
            ("user", "Never deploy on Fridays."),
        ],
    )
    remember(
        project,
        bob,
        "Never deploy on Fridays.",
        kind="rule",
        status="proposed",
        source_session="sess-42",
        source_record_start=1,
        source_record_end=2,
    )
    remember(project, bob, "Already active.")
    page = web_client(alice).get(QUEUE).content.decode()
    assert "Never deploy on Fridays." in page and "Already active." not in page
    assert "sess-42" in page and "#1 assistant" in page and "#2 user" in page
    assert "How do we deploy?" not in page  # record 0 is outside the range
    assert "injected memory text" not in page and "[memoryhub-context]" in page
    assert "1 proposed memory" in page


def test_only_maintainers_review_the_projects_proposals(
    alice: User,
    charlie: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    memory = remember(project, alice, "Proposed.", status="proposed")
    viewer = web_client(role_user(Role.VIEWER))
    member = web_client(role_user(Role.MEMBER))
    outsider = web_client(charlie)
    assert viewer.get(QUEUE).status_code == 403
    assert "Proposed." not in member.get(QUEUE).content.decode()  # their own private ones only
    for client, code in ((viewer, 403), (member, 403), (outsider, 404)):
        for name in ("review_approve", "review_reject", "review_edit"):
            assert client.post(url(name, memory), {"reason": "x"}).status_code == code, name
        bulk = client.post(
            reverse("web:review_bulk", kwargs={"slug": "alpha"}),
            {"action": "approve", "selected": [str(memory.public_id)]},
        )
        assert bulk.status_code == (302 if client is member else code)
    for name in ("memory_approve", "memory_reject"):
        assert member.post(url(name, memory), {"reason": "x"}).status_code == 403
    assert outsider.get(QUEUE).status_code == 404
    # The nav offers the queue from the member role up (a member's holds their own proposals).
    dashboard = reverse("web:project", kwargs={"slug": "alpha"})
    assert QUEUE not in viewer.get(dashboard).content.decode()
    assert QUEUE in member.get(dashboard).content.decode()
    memory.refresh_from_db()
    assert memory.status == Memory.Status.PROPOSED


def test_a_private_proposal_is_reviewed_by_its_owner_only(
    alice: User,
    bob: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    """Issue 10: a user-scope memory proposed by the pipeline was reviewable by nobody (only
    its owner sees it, and only maintainers reviewed)."""
    bobs = remember(project, bob, "Bob prefers tabs.", kind="user", scope="user", status="proposed")
    remember(project, alice, "Alice likes short answers.", kind="user", scope="user")
    remember(
        project, alice, "Alice reads diffs first.", kind="user", scope="user", status="proposed"
    )
    shared = remember(project, alice, "Releases are tagged.", status="proposed")
    maintainer = web_client(role_user(Role.MAINTAINER))
    bob_client = web_client(bob)  # a member
    alice_client = web_client(alice)  # the owner

    bob_queue = bob_client.get(QUEUE).content.decode()
    assert "Bob prefers tabs." in bob_queue and "1 proposed memory" in bob_queue
    assert "Releases are tagged." not in bob_queue and "Alice reads diffs first." not in bob_queue
    assert "The project's proposals are reviewed by its maintainers." in bob_queue
    maintainer_queue = maintainer.get(QUEUE).content.decode()
    assert "Releases are tagged." in maintainer_queue
    assert "Bob prefers tabs." not in maintainer_queue  # nobody else's private proposals
    assert "Alice reads diffs first." not in maintainer_queue
    alice_queue = alice_client.get(QUEUE).content.decode()
    assert "Releases are tagged." in alice_queue and "Alice reads diffs first." in alice_queue
    assert "Bob prefers tabs." not in alice_queue and "2 proposed memories" in alice_queue
    assert "Alice likes short answers." not in alice_queue  # active, not proposed

    # Others cannot even find it; its owner approves it (the page offers the buttons).
    assert maintainer.post(url("review_approve", bobs)).status_code == 404
    detail = bob_client.get(url("memory", bobs)).content.decode()
    assert url("memory_approve", bobs) in detail
    assert bob_client.post(url("review_approve", bobs), headers=HX).status_code == 200
    bobs.refresh_from_db()
    assert bobs.status == Memory.Status.ACTIVE
    assert bobs.events.filter(verb="approved", actor_user=bob).exists()

    again = remember(
        project, bob, "Bob runs tests first.", kind="user", scope="user", status="proposed"
    )
    response = bob_client.post(url("memory_reject", again), {"reason": "Not true any more."})
    assert response.status_code == 302
    again.refresh_from_db()
    assert again.status == Memory.Status.ARCHIVED and again.status_reason == "Not true any more."
    shared.refresh_from_db()
    assert shared.status == Memory.Status.PROPOSED


def test_approve_and_reject_in_place(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    first = remember(project, alice, "First proposal.", status="proposed")
    second = remember(project, alice, "Second proposal.", status="proposed")
    client = web_client(alice)
    approved = client.post(url("review_approve", first), headers=HX)
    body = approved.content.decode()
    assert approved.status_code == 200 and body.lstrip().startswith(
        f'<li id="review-{first.public_id}"'
    )
    assert "resolved" in body and "Approved." in body
    no_reason = client.post(url("review_reject", second), {"reason": ""}, headers=HX)
    assert no_reason.status_code == 400 and b"Say why" in no_reason.content
    rejected = client.post(url("review_reject", second), {"reason": "Duplicate."})  # no htmx
    assert rejected.status_code == 302 and rejected["Location"] == QUEUE
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == Memory.Status.ACTIVE
    assert (second.status, second.status_reason) == (Memory.Status.ARCHIVED, "Duplicate.")
    assert list(second.events.values_list("verb", flat=True).order_by("id")) == [
        "created",
        "rejected",
    ]
    again = client.post(url("review_approve", first), headers=HX)
    assert again.status_code == 400 and b"Only proposed memories" in again.content


def test_edit_then_approve_is_one_step_and_keeps_both_events(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Deploy wiht make.", status="proposed")
    client = web_client(alice)
    form = client.get(url("review_edit", memory), headers=HX)
    assert form.status_code == 200 and b"Save and approve" in form.content
    data = {
        "title": "",
        "content": "Deploy with make release.",
        "keywords": "deploy",
        "kind": "project",
        "importance": 2,
    }
    bad = client.post(url("review_edit", memory), data | {"content": " "}, headers=HX)
    assert bad.status_code == 400
    memory.refresh_from_db()
    assert memory.status == Memory.Status.PROPOSED and memory.content == "Deploy wiht make."
    # Someone else fixed it meanwhile: approving the version opened earlier would revert theirs.
    opened = form.context["version"]
    services.memory_update(
        memory=memory, actor=Actor(user=alice), changes={"content": "Deploy with make ship."}
    )
    late = client.post(url("review_edit", memory), data | {"version": opened}, headers=HX)
    assert late.status_code == 400 and b"after you opened it" in late.content
    memory.refresh_from_db()
    assert (memory.status, memory.content) == (Memory.Status.PROPOSED, "Deploy with make ship.")
    done = client.post(url("review_edit", memory), data, headers=HX)
    assert done.status_code == 200 and b"Edited and approved." in done.content
    memory.refresh_from_db()
    assert (memory.status, memory.content) == (Memory.Status.ACTIVE, "Deploy with make release.")
    assert list(memory.events.values_list("verb", flat=True).order_by("id")) == [
        "created",
        "updated",  # the edit made meanwhile
        "updated",
        "approved",
    ]


def test_bulk_approve_and_reject(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memories = [remember(project, alice, f"Proposal {i}.", status="proposed") for i in range(4)]
    client = web_client(alice)
    bulk = reverse("web:review_bulk", kwargs={"slug": "alpha"})
    no_reason = client.post(bulk, {"action": "reject", "selected": [str(memories[0].public_id)]})
    assert no_reason.status_code == 302
    client.post(bulk, {"action": "approve", "selected": [str(m.public_id) for m in memories[:2]]})
    client.post(
        bulk,
        {
            "action": "reject",
            "reason": "Noise.",
            "selected": [str(m.public_id) for m in memories[1:]] + ["not-a-uuid"],
        },
    )
    statuses = [Memory.objects.get(pk=m.pk).status for m in memories]
    assert statuses == ["active", "active", "archived", "archived"]
    page = client.get(QUEUE).content.decode()
    assert "2 memories rejected." in page and "1 was no longer waiting for review." in page


def test_queue_queries_do_not_grow_with_items(
    alice: User,
    project: Project,
    web_client: Callable[[User], Client],
    django_assert_max_num_queries: Callable[..., object],
) -> None:
    transcript(project, alice, "s1", [("user", f"line {i}") for i in range(10)])
    remember(project, alice, "p0", status="proposed", source_session="s1", source_record_start=0)
    client = web_client(alice)
    client.get(QUEUE)
    with django_assert_max_num_queries(15) as few:  # type: ignore[attr-defined]
        client.get(QUEUE)
    for i in range(1, 20):
        remember(
            project,
            alice,
            f"p{i}",
            status="proposed",
            source_session="s1",
            source_record_start=i % 10,
        )
    with django_assert_max_num_queries(len(few.captured_queries)):  # type: ignore[attr-defined]
        response = client.get(QUEUE)
    assert len(response.context["items"]) == 20


def test_an_empty_queue_says_so_without_the_keyboard_help(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    html = web_client(alice).get(QUEUE).content.decode()
    assert "Nothing to review." in html and "Keyboard:" not in html
    remember(project, alice, "Proposed: use uv.", status=Memory.Status.PROPOSED)
    assert "Keyboard:" in web_client(alice).get(QUEUE).content.decode()


def test_a_nul_in_a_reject_reason_is_a_400_not_a_database_error(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Proposed: use uv.", status=Memory.Status.PROPOSED)
    client = web_client(alice)
    assert client.post(url("review_reject", memory), {"reason": "bad\x00reason"}).status_code == 400
    bulk = reverse("web:review_bulk", kwargs={"slug": "alpha"})
    refused = client.post(
        bulk, {"action": "reject", "selected": [str(memory.public_id)], "reason": "x\x00"}
    )
    assert refused.status_code == 400
    memory.refresh_from_db()
    assert memory.status == Memory.Status.PROPOSED


def test_a_bulk_approve_with_a_reject_reason_is_refused(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    # Enter in the reason box submits the form's first button, approve: a typed reason means
    # the person meant to reject, so nothing is approved and the page says why.
    memories = [remember(project, alice, f"Proposal {i}.", status="proposed") for i in range(2)]
    bulk = reverse("web:review_bulk", kwargs={"slug": "alpha"})
    selected = [str(m.public_id) for m in memories]
    response = web_client(alice).post(
        bulk, {"action": "approve", "reason": "Duplicates.", "selected": selected}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was approved: a reason for rejecting was typed." in page
    assert 'value="Duplicates."' in page  # what they typed and picked is kept
    assert page.count(" checked>") == 2
    assert {Memory.objects.get(pk=m.pk).status for m in memories} == {"proposed"}
    # A blank reason still approves.
    web_client(alice).post(bulk, {"action": "approve", "reason": "  ", "selected": selected})
    assert {Memory.objects.get(pk=m.pk).status for m in memories} == {"active"}
