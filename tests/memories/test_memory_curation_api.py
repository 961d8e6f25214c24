"""Reject, promote, merge and hard delete: the curation operations the dashboard added."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.factories import UserFactory

URL = "/api/v1/projects/alpha/memories/"


def create(client: APIClient, **body: Any) -> dict[str, Any]:
    body.setdefault("content", "We deploy with `make release`.")
    body.setdefault("kind", "project")
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def verbs(client: APIClient, memory_id: str) -> list[str]:
    return [e["verb"] for e in client.get(f"{URL}{memory_id}/history/").json()["results"]]


@pytest.fixture
def maintainer_client(alice_client: APIClient, make_client: Callable[..., APIClient]) -> APIClient:
    UserFactory.create(username="mia")
    alice_client.post(
        "/api/v1/projects/alpha/members/", {"username": "mia", "role": "maintainer"}, format="json"
    )
    return make_client(User.objects.get(username="mia"))


def test_it_rejects_a_proposed_memory_with_a_reason(
    alice_client: APIClient, bob_client: APIClient, maintainer_client: APIClient
) -> None:
    proposed = create(bob_client, content="Maybe use tabs.", status="proposed")
    url = f"{URL}{proposed['id']}/reject/"
    assert bob_client.post(url, {"reason": "no"}, format="json").status_code == 403  # member
    no_reason = maintainer_client.post(url, {}, format="json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()["error"]["details"]
    rejected = maintainer_client.post(url, {"reason": "We use spaces."}, format="json").json()
    assert (rejected["status"], rejected["status_reason"]) == ("archived", "We use spaces.")
    again = maintainer_client.post(url, {"reason": "twice"}, format="json")
    assert again.status_code == 400
    assert verbs(alice_client, proposed["id"]) == ["created", "rejected"]


def test_the_owner_reviews_their_own_private_proposal(
    alice_client: APIClient, bob_client: APIClient, maintainer_client: APIClient
) -> None:
    """Nobody else can see a user-scope memory, so its owner (a member) reviews it; a member
    still cannot review the project's proposals, a maintainer cannot find another's private
    ones."""
    mine = create(bob_client, content="I prefer tabs.", kind="user", status="proposed")
    assert mine["scope"] == "user"
    other = create(bob_client, content="I read diffs first.", kind="user", status="proposed")
    shared = create(alice_client, content="Maybe use tabs.", status="proposed")
    assert maintainer_client.post(f"{URL}{mine['id']}/approve/").status_code == 404
    assert bob_client.post(f"{URL}{shared['id']}/approve/").status_code == 403
    approved = bob_client.post(f"{URL}{mine['id']}/approve/")
    assert approved.status_code == 200 and approved.json()["status"] == "active"
    rejected = bob_client.post(f"{URL}{other['id']}/reject/", {"reason": "No."}, format="json")
    assert rejected.status_code == 200 and rejected.json()["status"] == "archived"
    assert verbs(bob_client, mine["id"]) == ["created", "approved"]


def test_it_rejects_outsiders_everywhere(
    alice_client: APIClient, charlie_client: APIClient
) -> None:
    memory = create(alice_client)
    for action, body in (
        ("reject", {"reason": "x"}),
        ("promote", {}),
        ("merge", {"other": memory["id"]}),
        ("delete", {"confirm": memory["id"][:8]}),
    ):
        response = charlie_client.post(f"{URL}{memory['id']}/{action}/", body, format="json")
        assert response.status_code == 404, action
        assert response.json()["error"]["code"] == "not_found"
    assert Memory.objects.filter(public_id=memory["id"], status="active").exists()


def test_the_owner_promotes_a_user_memory_to_the_project(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    private = create(bob_client, content="I prefer short commit messages.", kind="user")
    assert private["scope"] == "user" and private["owner"] == "bob"
    assert alice_client.get(f"{URL}{private['id']}/").status_code == 404  # not alice's to see
    assert alice_client.post(f"{URL}{private['id']}/promote/").status_code == 404
    promoted = bob_client.post(f"{URL}{private['id']}/promote/").json()
    assert (promoted["scope"], promoted["owner"]) == ("project", None)
    assert alice_client.get(f"{URL}{private['id']}/").status_code == 200
    history = alice_client.get(f"{URL}{private['id']}/history/").json()["results"]
    assert history[-1]["verb"] == "promoted"
    assert history[-1]["before"] == {"scope": "user", "owner": "bob"}
    assert history[-1]["actor"].startswith("bob")
    twice = bob_client.post(f"{URL}{private['id']}/promote/")
    assert twice.status_code == 400  # already a project memory


def test_it_merges_two_memories_keeping_both_histories(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    keep = create(bob_client, content="Run tests with make test.", keywords=["test"], importance=1)
    other = create(
        bob_client, content="CI runs make test too.", keywords=["ci", "Test"], importance=3
    )
    merged = bob_client.post(
        f"{URL}{keep['id']}/merge/", {"other": other["id"]}, format="json"
    ).json()
    assert merged["content"] == "Run tests with make test.\n\nCI runs make test too."
    assert merged["keywords"] == ["test", "ci"] and merged["importance"] == 3
    archived = alice_client.get(f"{URL}{other['id']}/").json()
    assert archived["status"] == "archived" and archived["superseded_by"] == keep["id"]
    assert verbs(alice_client, keep["id"]) == ["created", "merged_from"]
    assert verbs(alice_client, other["id"]) == ["created", "merged_into"]
    history = alice_client.get(f"{URL}{keep['id']}/history/").json()["results"]
    assert history[-1]["after"]["merged_from"] == other["id"]
    # Search finds the merged text under the kept memory.
    found = alice_client.get(f"{URL}search/", {"q": "CI"}).json()["results"]
    assert [r["id"] for r in found] == [keep["id"]]
    # The archived one cannot be merged again, nor can a memory be merged with itself.
    third = create(bob_client, content="Lint with ruff.")
    assert (
        bob_client.post(f"{URL}{third['id']}/merge/", {"other": other["id"]}, format="json")
    ).status_code == 400
    assert (
        bob_client.post(f"{URL}{third['id']}/merge/", {"other": third["id"]}, format="json")
    ).status_code == 400


def test_merge_with_chosen_text_and_refusals(
    alice_client: APIClient, bob_client: APIClient, make_client: Callable[..., APIClient]
) -> None:
    a = create(bob_client, content="Use Node 20.")
    b = create(bob_client, content="Node 20 is required.")
    merged = bob_client.post(
        f"{URL}{a['id']}/merge/",
        {"other": b["id"], "content": "Node 20 is required."},
        format="json",
    ).json()
    assert merged["content"] == "Node 20 is required."
    mine = create(bob_client, content="I like Node.", kind="user")
    shared = create(bob_client, content="Node is used.")
    refused = bob_client.post(f"{URL}{shared['id']}/merge/", {"other": mine["id"]}, format="json")
    assert refused.status_code == 400 and "other" in refused.json()["error"]["details"]
    # alice cannot name bob's private memory: it does not exist for her.
    hidden = alice_client.post(f"{URL}{shared['id']}/merge/", {"other": mine["id"]}, format="json")
    assert hidden.status_code == 404
    viewer = UserFactory.create(username="vic")
    alice_client.post(
        "/api/v1/projects/alpha/members/", {"username": "vic", "role": "viewer"}, format="json"
    )
    read_only = make_client(viewer).post(
        f"{URL}{shared['id']}/merge/", {"other": a["id"]}, format="json"
    )
    assert read_only.status_code == 403


def test_only_owners_hard_delete_and_only_with_the_typed_confirmation(
    alice_client: APIClient, bob_client: APIClient, maintainer_client: APIClient, project: Project
) -> None:
    memory = create(bob_client, content="Contains something we must not keep.")
    url = f"{URL}{memory['id']}/delete/"
    short = memory["id"][:8]
    assert bob_client.post(url, {"confirm": short}, format="json").status_code == 403
    assert maintainer_client.post(url, {"confirm": short}, format="json").status_code == 403
    wrong = alice_client.post(url, {"confirm": "alpha"}, format="json")
    assert wrong.status_code == 400 and "confirm" in wrong.json()["error"]["details"]
    assert Memory.objects.filter(public_id=memory["id"]).exists()
    assert alice_client.post(url, {"confirm": short}, format="json").status_code == 204
    assert not Memory.objects.filter(public_id=memory["id"]).exists()
    assert alice_client.get(f"{URL}{memory['id']}/").status_code == 404
    audit = AuditEvent.objects.get(verb="memory.deleted", target_id=memory["id"])
    assert audit.project == project and audit.actor_label.startswith("alice")
    assert alice_client.get(f"{URL}search/", {"q": "something"}).json()["results"] == []


def test_read_only_tokens_cannot_curate(
    alice: User, alice_client: APIClient, make_client: Callable[..., APIClient]
) -> None:
    memory = create(alice_client)
    read_only = make_client(alice, read_only=True)
    response = read_only.post(f"{URL}{memory['id']}/delete/", {"confirm": memory["id"][:8]})
    assert response.status_code == 403
