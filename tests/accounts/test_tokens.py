from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework.test import APIClient

from accounts import tokens
from accounts.models import ApiToken, User
from memoryhub.core.models import AuditEvent
from projects.models import Project
from tests.conftest import bearer_client


def test_tokens_are_stored_as_prefix_and_hmac_only(alice_client: APIClient, alice: User) -> None:
    response = alice_client.post("/api/v1/tokens/", {"name": "laptop"}, format="json")
    assert response.status_code == 201
    raw = response.json()["token"]
    assert raw.startswith("mh_rw_") and len(raw) > 40
    token = ApiToken.objects.get(public_id=response.json()["id"])
    assert token.prefix == raw[:14]
    assert token.digest == tokens.digest(raw) and raw not in token.digest
    stored = [str(v) for v in ApiToken.objects.filter(pk=token.pk).values().get().values()]
    assert all(raw not in value for value in stored)
    # The secret is shown once: the list never includes it.
    listed = alice_client.get("/api/v1/tokens/").json()["results"]
    assert all("token" not in t for t in listed)
    assert bearer_client(raw).get("/api/v1/me/").json()["username"] == "alice"


def test_a_token_with_a_wrong_secret_but_right_prefix_fails(alice_client: APIClient) -> None:
    raw = alice_client.post("/api/v1/tokens/", {"name": "x"}, format="json").json()["token"]
    forged = raw[:14] + ("A" if raw[14] != "A" else "B") + raw[15:]
    response = bearer_client(forged).get("/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_revoked_and_expired_tokens_stop_working(alice_client: APIClient, alice: User) -> None:
    created = alice_client.post("/api/v1/tokens/", {"name": "tmp"}, format="json").json()
    client = bearer_client(created["token"])
    assert client.get("/api/v1/me/").status_code == 200
    revoked = alice_client.post(f"/api/v1/tokens/{created['id']}/revoke/").json()
    assert revoked["status"] == "revoked"
    assert client.get("/api/v1/me/").status_code == 401
    assert AuditEvent.objects.filter(verb="token.revoked").count() == 1

    soon = alice_client.post("/api/v1/tokens/", {"name": "short"}, format="json").json()
    ApiToken.objects.filter(public_id=soon["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert bearer_client(soon["token"]).get("/api/v1/me/").status_code == 401
    past = alice_client.post(
        "/api/v1/tokens/", {"name": "p", "expires_at": "2000-01-01T00:00Z"}, format="json"
    )
    assert past.status_code == 400 and "expires_at" in past.json()["error"]["details"]


def test_last_used_is_recorded(alice_client: APIClient, alice: User) -> None:
    alice_client.get("/api/v1/me/")
    token = ApiToken.objects.get(user=alice)
    assert token.last_used_at is not None


def test_read_only_and_restricted_tokens(
    alice_client: APIClient, project: Project, charlies_project: Project
) -> None:
    ro = alice_client.post(
        "/api/v1/tokens/", {"name": "ro", "read_only": True, "project": "alpha"}, format="json"
    ).json()
    assert ro["token"].startswith("mh_ro_") and ro["project"] == "alpha" and ro["read_only"]
    other = alice_client.post(
        "/api/v1/tokens/", {"name": "x", "project": "charlie-lab"}, format="json"
    )
    assert other.status_code == 404  # alice is not in charlie's project


def test_restricted_token_cannot_mint_broader_tokens(
    alice: User, project: Project, make_client: Any
) -> None:
    restricted = make_client(alice, project=project)
    broad = restricted.post("/api/v1/tokens/", {"name": "broad"}, format="json")
    assert broad.status_code == 400
    narrow = restricted.post(
        "/api/v1/tokens/", {"name": "narrow", "project": "alpha"}, format="json"
    )
    assert narrow.status_code == 201


def test_session_auth_requires_csrf(alice: User, project: Project) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get("/api/v1/projects/alpha/memories/").status_code == 200
    body = {"content": "From the browser", "kind": "fact"}
    refused = client.post("/api/v1/projects/alpha/memories/", body, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    client.get("/admin/login/")  # sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    accepted = client.post(
        "/api/v1/projects/alpha/memories/", body, format="json", HTTP_X_CSRFTOKEN=csrf
    )
    assert accepted.status_code == 201
    assert accepted.json()["provenance"]["via"] == "user"


def test_a_token_minted_with_a_token_never_outlives_it(alice_client: APIClient) -> None:
    soon = (timezone.now() + timedelta(seconds=5)).isoformat()
    parent = alice_client.post(
        "/api/v1/tokens/", {"name": "short", "expires_at": soon}, format="json"
    ).json()
    parent_client = bearer_client(parent["token"])
    child = parent_client.post("/api/v1/tokens/", {"name": "child"}, format="json")
    assert child.status_code == 201, child.content
    assert child.json()["expires_at"] == parent["expires_at"]  # not "never"
    later = (timezone.now() + timedelta(days=1)).isoformat()
    longer = parent_client.post(
        "/api/v1/tokens/", {"name": "longer", "expires_at": later}, format="json"
    )
    assert longer.status_code == 400 and "expires_at" in longer.json()["error"]["details"]
    # When the parent's time is up (its row moved into the past), so is the child's.
    ApiToken.objects.filter(public_id__in=[parent["id"], child.json()["id"]]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert bearer_client(child.json()["token"]).get("/api/v1/me/").status_code == 401


def test_revoking_a_token_revokes_what_it_minted(alice_client: APIClient) -> None:
    parent = alice_client.post("/api/v1/tokens/", {"name": "p"}, format="json").json()
    child = bearer_client(parent["token"]).post("/api/v1/tokens/", {"name": "c"}, format="json")
    grandchild = bearer_client(child.json()["token"]).post(
        "/api/v1/tokens/", {"name": "g"}, format="json"
    )
    assert bearer_client(grandchild.json()["token"]).get("/api/v1/me/").status_code == 200
    alice_client.post(f"/api/v1/tokens/{parent['id']}/revoke/")
    for minted in (child, grandchild):
        assert bearer_client(minted.json()["token"]).get("/api/v1/me/").status_code == 401
    assert AuditEvent.objects.filter(verb="token.revoked").count() == 3


def test_a_read_only_or_restricted_parent_passes_its_limits_on(
    alice: User, project: Project
) -> None:
    from accounts.actors import Actor
    from accounts.services import token_create

    system = Actor.for_system("test")
    read_only, _ = token_create(user=alice, name="ro", read_only=True, actor=system)
    child, raw = token_create(user=alice, name="c", actor=Actor(user=alice, token=read_only))
    assert child.read_only and raw.startswith("mh_ro_")

    restricted, _ = token_create(user=alice, name="r", project=project, actor=system)
    narrow, _ = token_create(
        user=alice, name="n", project=project, actor=Actor(user=alice, token=restricted)
    )
    assert narrow.project == project
