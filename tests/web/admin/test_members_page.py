"""Members and tokens: invite, roles, the last owner, tokens shown once, who sees and revokes
which token."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.test import Client

from accounts.actors import Actor
from accounts.models import ApiToken, User
from accounts.services import token_create
from memoryhub.core.models import AuditEvent
from projects.models import Project, ProjectMembership
from tests.factories import UserFactory

MEMBERS = "/p/alpha/members/"


def test_maintainers_invite_and_change_roles_members_cannot(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    dave = UserFactory.create(username="dave")
    bob_web = web_client(bob)
    page = bob_web.get(MEMBERS).content.decode()
    assert "alice" in page and "Invite an existing user" not in page
    assert bob_web.post(MEMBERS + "add/", {"username": "dave", "role": "member"}).status_code == 403
    alice_web = web_client(alice)
    missing = alice_web.post(MEMBERS + "add/", {"username": "nobody", "role": "member"})
    assert (
        missing.status_code == 400 and "No active user with this name." in missing.content.decode()
    )
    added = alice_web.post(MEMBERS + "add/", {"username": "dave", "role": "viewer"})
    assert added.status_code == 302
    assert ProjectMembership.objects.get(user=dave).role == "viewer"
    assert AuditEvent.objects.filter(verb="member.added", target_id=str(dave.public_id)).exists()
    again = alice_web.post(MEMBERS + "add/", {"username": "dave", "role": "viewer"})
    assert again.status_code == 400 and "already a member" in again.content.decode()
    alice_web.post(MEMBERS + "dave/role/", {"role": "maintainer"})
    assert ProjectMembership.objects.get(user=dave).role == "maintainer"
    # A maintainer cannot make an owner (the service refuses, as in the API).
    dave_web = web_client(dave)
    refused = dave_web.post(MEMBERS + "bob/role/", {"role": "owner"}, follow=True)
    assert "Only owners" in refused.content.decode()
    assert ProjectMembership.objects.get(user=bob).role == "member"


def test_the_last_owner_stays(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    demoted = client.post(MEMBERS + "alice/role/", {"role": "member"}, follow=True)
    assert "at least one owner" in demoted.content.decode()
    left = client.post(MEMBERS + "alice/remove/", follow=True)
    assert "at least one owner" in left.content.decode()
    assert ProjectMembership.objects.get(user=alice).role == "owner"


def test_a_token_is_shown_once_and_revoked_in_place(
    bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(bob)
    bad = client.post(MEMBERS.replace("members/", "tokens/new/"), {"name": ""})
    assert bad.status_code == 400
    created = client.post(
        "/p/alpha/tokens/new/", {"name": "laptop", "this_project_only": "on", "read_only": "on"}
    )
    assert created.status_code == 201
    raw = re.search(r'<code id="new-token" class="secret">([^<]+)</code>', created.content.decode())
    assert raw is not None and raw.group(1).startswith("mh_ro_")
    assert 'data-copy="new-token"' in created.content.decode()
    token = ApiToken.objects.get(name="laptop")
    assert token.project == project and token.read_only
    listing = client.get(MEMBERS).content.decode()
    assert raw.group(1) not in listing and token.prefix in listing
    revoked = client.post(
        f"/p/alpha/tokens/{token.public_id}/revoke/", headers={"HX-Request": "true"}
    )
    html = revoked.content.decode()
    assert html.lstrip().startswith(f'<tr id="token-{token.public_id}"') and "revoked" in html
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(verb="token.revoked").count() == 1


def test_owners_see_and_revoke_the_projects_tokens_others_only_their_own(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    bobs, _ = token_create(user=bob, name="bob-ci", project=project, actor=Actor(user=bob))
    alices, _ = token_create(user=alice, name="alice-laptop", actor=Actor(user=alice))
    bob_page = web_client(bob).get(MEMBERS).content.decode()
    assert "bob-ci" in bob_page and "alice-laptop" not in bob_page
    assert web_client(bob).post(f"/p/alpha/tokens/{alices.public_id}/revoke/").status_code == 404
    owner_page = web_client(alice).get(MEMBERS).content.decode()
    assert "bob-ci" in owner_page and "alice-laptop" in owner_page
    assert web_client(alice).post(f"/p/alpha/tokens/{bobs.public_id}/revoke/").status_code == 302
    bobs.refresh_from_db()
    assert bobs.revoked_at is not None


def test_outsiders_get_404(
    charlie: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(charlie)
    assert client.get(MEMBERS).status_code == 404
    assert client.post("/p/alpha/tokens/new/", {"name": "x"}).status_code == 404
    assert client.post(MEMBERS + "alice/remove/").status_code == 404


def test_a_token_expiry_is_typed_and_shown_in_the_projects_time_zone(
    bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    project.timezone = "Asia/Shanghai"  # UTC+8, no daylight saving
    project.save(update_fields=["timezone"])
    client = web_client(bob)
    form = client.get(MEMBERS).content.decode()
    assert "In the project&#x27;s time zone, Asia/Shanghai." in form
    created = client.post(
        "/p/alpha/tokens/new/",
        {"name": "ci", "this_project_only": "on", "expires_at": "2031-05-01T10:00"},
    )
    assert created.status_code == 201
    token = ApiToken.objects.get(name="ci")
    assert (
        token.expires_at is not None and token.expires_at.isoformat() == "2031-05-01T02:00:00+00:00"
    )
    row = re.search(rf'<tr id="token-{token.public_id}">(.*?)</tr>', created.content.decode(), re.S)
    assert row is not None and "2031-05-01 10:00" in row.group(1)
    never = token_create(user=bob, actor=Actor(user=bob), name="forever", project=project)[0]
    listing = client.get(MEMBERS).content.decode()
    row = re.search(rf'<tr id="token-{never.public_id}">(.*?)</tr>', listing, re.S)
    assert row is not None and "never" in row.group(1)


ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


def test_the_role_change_message_names_the_role_in_the_pages_language(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    page = web_client(alice).post(
        MEMBERS + "bob/role/",
        {"role": "viewer"},
        follow=True,
        **ZH,  # type: ignore[arg-type]
    )
    assert "bob 现在是 只读成员。" in page.content.decode()


def test_leave_remove_and_revoke_ask_first(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    token_create(user=alice, name="laptop", actor=Actor(user=alice), project=project)
    page = web_client(alice).get(MEMBERS).content.decode()
    assert 'data-confirm="Remove bob from the project?"' in page
    assert 'hx-confirm="Revoke the token “laptop”? Agents using it stop working at once."' in page
    leave = web_client(bob).get(MEMBERS).content.decode()
    assert 'data-confirm="Leave this project?' in leave
