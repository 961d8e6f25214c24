"""Who may see and revoke which token through /api/v1/tokens/.

A token limited to a project is one agent's credential for that project: it sees and revokes
only itself and the tokens minted with it (at any depth), and every other token answers 404,
exactly like one that does not exist. The person (browser session) and their unrestricted
tokens manage all of the person's tokens, as before. Personas as in tests/conftest.py: alice
owns `alpha`; here she also owns `beta`.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import ApiToken, User
from accounts.services import token_create
from projects.models import Project
from projects.services import project_create
from tests.conftest import bearer_client

SYSTEM = Actor.for_system("test")


def _mint(user: User, name: str, **kwargs: Any) -> tuple[ApiToken, APIClient]:
    token, raw = token_create(user=user, name=name, actor=SYSTEM, **kwargs)
    return token, bearer_client(raw)


def _mint_with(client: APIClient, name: str, **body: Any) -> tuple[str, APIClient]:
    """A token minted through the API by the token behind `client`: (its id, a client)."""
    response = client.post("/api/v1/tokens/", {"name": name, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"], bearer_client(response.json()["token"])


def _listed(client: APIClient) -> dict[str, str | None]:
    response = client.get("/api/v1/tokens/")
    assert response.status_code == 200, response.content
    return {t["id"]: t["project"] for t in response.json()["results"]}


def _works(client: APIClient) -> bool:
    return client.get("/api/v1/me/").status_code == 200


@pytest.fixture
def beta(alice: User) -> Project:
    """A second project of alice's: a token restricted to `alpha` must not reach it."""
    return project_create(slug="beta", name="Beta", owner=alice, actor=SYSTEM)


@pytest.fixture
def tokens(alice: User, project: Project, beta: Project) -> dict[str, Any]:
    """alice's tokens: unrestricted `laptop`; `agent` limited to alpha, which minted `child`,
    which minted `grandchild`; a sibling `other-agent` on alpha; `beta-agent` on beta."""
    laptop, laptop_client = _mint(alice, "laptop")
    agent, agent_client = _mint(alice, "agent", project=project)
    child_id, child_client = _mint_with(agent_client, "child", project="alpha")
    grandchild_id, grandchild_client = _mint_with(child_client, "grandchild", project="alpha")
    sibling, sibling_client = _mint(alice, "other-agent", project=project)
    beta_agent, beta_client = _mint(alice, "beta-agent", project=beta)
    return {
        "laptop": (str(laptop.public_id), laptop_client),
        "agent": (str(agent.public_id), agent_client),
        "child": (child_id, child_client),
        "grandchild": (grandchild_id, grandchild_client),
        "sibling": (str(sibling.public_id), sibling_client),
        "beta": (str(beta_agent.public_id), beta_client),
    }


def _id(tokens: dict[str, Any], name: str) -> str:
    return str(tokens[name][0])


def _client(tokens: dict[str, Any], name: str) -> APIClient:
    client: APIClient = tokens[name][1]
    return client


def test_it_lists_only_itself_and_what_it_minted(tokens: dict[str, Any]) -> None:
    mine = {_id(tokens, n) for n in ("agent", "child", "grandchild")}
    assert _listed(_client(tokens, "agent")) == dict.fromkeys(mine, "alpha")
    # A minted token sees its own line down, never its parent.
    below = {_id(tokens, n) for n in ("child", "grandchild")}
    assert set(_listed(_client(tokens, "child"))) == below
    assert set(_listed(_client(tokens, "grandchild"))) == {_id(tokens, "grandchild")}
    assert set(_listed(_client(tokens, "beta"))) == {_id(tokens, "beta")}


def test_it_cannot_revoke_an_unrestricted_token(tokens: dict[str, Any]) -> None:
    agent = _client(tokens, "agent")
    refused = agent.post(f"/api/v1/tokens/{_id(tokens, 'laptop')}/revoke/")
    # 404 in the error envelope, the very answer for a token that does not exist.
    missing = agent.post(f"/api/v1/tokens/{uuid4()}/revoke/")
    assert refused.status_code == missing.status_code == 404
    assert refused.json() == missing.json()
    assert refused.json()["error"]["code"] == "not_found"
    assert _works(_client(tokens, "laptop"))
    assert ApiToken.objects.get(public_id=_id(tokens, "laptop")).revoked_at is None


def test_it_cannot_revoke_its_parent_a_sibling_or_another_projects_token(
    tokens: dict[str, Any],
) -> None:
    child = _client(tokens, "child")
    for target in ("agent", "sibling", "beta"):
        response = child.post(f"/api/v1/tokens/{_id(tokens, target)}/revoke/")
        assert response.status_code == 404, (target, response.content)
        assert response.json()["error"]["code"] == "not_found"
    agent = _client(tokens, "agent")
    for target in ("sibling", "beta"):
        assert agent.post(f"/api/v1/tokens/{_id(tokens, target)}/revoke/").status_code == 404
    for name in ("agent", "child", "sibling", "beta"):
        assert _works(_client(tokens, name)), name


def test_it_revokes_what_it_minted_and_itself(tokens: dict[str, Any]) -> None:
    agent = _client(tokens, "agent")
    revoked = agent.post(f"/api/v1/tokens/{_id(tokens, 'child')}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    assert not _works(_client(tokens, "child"))
    assert not _works(_client(tokens, "grandchild"))  # revoked with its parent
    assert _works(agent)
    itself = agent.post(f"/api/v1/tokens/{_id(tokens, 'agent')}/revoke/")
    assert itself.status_code == 200
    assert not _works(agent)
    assert _works(_client(tokens, "laptop")) and _works(_client(tokens, "sibling"))


def test_it_cannot_mint_an_unrestricted_token_or_one_for_another_project(
    tokens: dict[str, Any],
) -> None:
    agent = _client(tokens, "agent")
    broad = agent.post("/api/v1/tokens/", {"name": "broad"}, format="json")
    assert broad.status_code == 400 and "project" in broad.json()["error"]["details"]
    # alice owns beta, but this token cannot reach it: 404, as for a project that is not there.
    other = agent.post("/api/v1/tokens/", {"name": "b", "project": "beta"}, format="json")
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    assert ApiToken.objects.filter(name__in=["broad", "b"]).count() == 0


def test_read_only_tokens_neither_mint_nor_revoke(
    alice: User, project: Project, tokens: dict[str, Any]
) -> None:
    _, unrestricted_ro = _mint(alice, "ro", read_only=True)
    ro_agent, restricted_ro = _mint(alice, "ro-agent", project=project, read_only=True)
    for client in (unrestricted_ro, restricted_ro):
        created = client.post("/api/v1/tokens/", {"name": "x", "project": "alpha"}, format="json")
        assert created.status_code == 403
        assert created.json()["error"]["code"] == "permission_denied"
        for target in (_id(tokens, "agent"), str(ro_agent.public_id)):
            assert client.post(f"/api/v1/tokens/{target}/revoke/").status_code == 403
    assert ApiToken.objects.filter(name="x").count() == 0
    assert ApiToken.objects.filter(revoked_at__isnull=False).count() == 0
    # Listing follows the same rule as for a read-write token.
    assert set(_listed(restricted_ro)) == {str(ro_agent.public_id)}


def test_an_unrestricted_token_still_manages_all_of_its_persons_tokens(
    alice: User, bob: User, tokens: dict[str, Any]
) -> None:
    _, bobs_client = _mint(bob, "bobs")
    laptop = _client(tokens, "laptop")
    listed = _listed(laptop)
    names = ("laptop", "agent", "child", "grandchild", "sibling", "beta")
    assert set(listed) == {_id(tokens, n) for n in names}  # never bob's
    assert listed[_id(tokens, "beta")] == "beta"
    assert laptop.post(f"/api/v1/tokens/{_id(tokens, 'agent')}/revoke/").status_code == 200
    assert not _works(_client(tokens, "agent")) and not _works(_client(tokens, "grandchild"))
    assert _works(bobs_client)


def test_the_browser_session_still_manages_all_of_its_persons_tokens(
    alice: User, tokens: dict[str, Any]
) -> None:
    session = APIClient()
    session.force_login(alice)
    assert len(_listed(session)) == 6
    for name in ("laptop", "child"):
        assert session.post(f"/api/v1/tokens/{_id(tokens, name)}/revoke/").status_code == 200
        assert not _works(_client(tokens, name))
    created = session.post("/api/v1/tokens/", {"name": "new"}, format="json")
    assert created.status_code == 201 and created.json()["project"] is None


def test_the_dashboard_token_pages_use_the_session_not_a_token(
    alice: User, project: Project, tokens: dict[str, Any]
) -> None:
    """The dashboard's token pages answer to the signed-in person only: a bearer token is no
    sign-in there, so a restricted token cannot reach them, and the person's view is whole."""
    revoke = f"/p/alpha/tokens/{_id(tokens, 'laptop')}/revoke/"
    _, raw = token_create(user=alice, name="page-agent", project=project, actor=SYSTEM)
    as_agent = Client().post(revoke, headers={"Authorization": f"Bearer {raw}"})
    assert as_agent.status_code == 302 and "/login" in as_agent["Location"]
    assert _works(_client(tokens, "laptop"))

    browser = Client()
    browser.force_login(alice)
    page = browser.get("/p/alpha/members/").content.decode()
    for name in ("laptop", "agent", "child", "grandchild", "sibling", "beta"):
        assert f"/tokens/{_id(tokens, name)}/revoke/" in page, name
    assert browser.post(revoke).status_code == 302
    assert not _works(_client(tokens, "laptop"))
