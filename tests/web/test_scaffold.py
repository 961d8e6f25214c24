"""The dashboard's frame: home, sign-in, CSP, language switch, project access and navigation."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from accounts.models import User
from projects.models import Project, Role
from tests.web.conftest import PASSWORD, without_csrf


def test_home_links_the_docs_and_invites_to_sign_in(db: None) -> None:
    page = Client().get("/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "/api/docs/" in body and reverse("web:login") in body


def test_home_lists_my_projects_with_counts(
    alice: User, project: Project, charlies_project: Project, web_client: Callable[[User], Client]
) -> None:
    body = web_client(alice).get("/").content.decode()
    assert "alpha" in body and "owner" in body
    assert "charlie-lab" not in body  # not a member


def test_sign_in_sign_out_and_change_password(alice: User) -> None:
    client = Client()
    form = client.get(reverse("web:login"))
    assert form.status_code == 200 and b'name="password"' in form.content
    bad = client.post(reverse("web:login"), {"username": "alice", "password": "nope"})
    assert bad.status_code == 200 and b"form-errors" in bad.content
    ok = client.post(reverse("web:login"), {"username": "alice", "password": PASSWORD})
    assert ok.status_code == 302 and ok["Location"] == reverse("web:home")
    changed = client.post(
        reverse("web:password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a new long passphrase 42",
            "new_password2": "a new long passphrase 42",
        },
    )
    assert changed.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("a new long passphrase 42")
    out = client.post(reverse("web:logout"))
    assert out.status_code == 302
    assert client.get(reverse("web:project", kwargs={"slug": "x"})).status_code == 302


def test_every_page_has_a_strict_csp_and_no_inline_code(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    for url in ("/", reverse("web:project", kwargs={"slug": "alpha"})):
        response = client.get(url)
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp
        assert "unsafe-inline" not in csp
        body = response.content.decode()
        assert "<script>" not in body and " style=" not in body and "<style" not in body
        assert 'hx-headers=\'{"X-CSRFToken": "' in body


def test_project_pages_hide_projects_from_outsiders(
    charlie: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(charlie)
    pages = []
    for slug in ("alpha", "no-such-project"):
        response = client.get(reverse("web:project", kwargs={"slug": slug}))
        assert response.status_code == 404
        # The page names its own URL (the language switch returns to it); nothing else differs.
        pages.append(without_csrf(response.content).replace(f"/p/{slug}/".encode(), b"URL"))
    assert pages[0] == pages[1]


def test_project_nav_lists_only_pages_that_exist_and_the_role_may_open(
    alice: User, role_user: Callable[[Role], User], web_client: Callable[[User], Client]
) -> None:
    url = reverse("web:project", kwargs={"slug": "alpha"})
    owner_page = web_client(alice).get(url).content.decode()
    viewer_page = web_client(role_user(Role.VIEWER)).get(url).content.decode()
    assert 'aria-current="page"' in owner_page
    assert reverse("web:project", kwargs={"slug": "alpha"}) in viewer_page


def test_language_follows_accept_language_and_the_switch(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    chinese = client.get("/", headers={"accept-language": "zh-CN,zh;q=0.9"}).content.decode()
    assert 'lang="zh-Hans"' in chinese and "你的项目" in chinese
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    english = client.get("/", headers={"accept-language": "zh-CN"}).content.decode()
    assert 'lang="en"' in english and "Your projects" in english
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    assert "你的项目" in client.get("/").content.decode()


def test_chinese_pages_name_roles_scopes_and_formats_in_chinese(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    members = client.get(reverse("web:members", kwargs={"slug": "alpha"})).content.decode()
    assert ">所有者</span>" in members and ">维护者</option>" in members
    recall = client.get(reverse("web:recall_file_new", kwargs={"slug": "alpha"})).content.decode()
    assert "私有：仅所有者可见" in recall
    assert "visible to its owner only" not in recall
    interchange = client.get(reverse("web:interchange", kwargs={"slug": "alpha"})).content.decode()
    assert "按类型划分的主题文件" in interchange and "typed topic files" not in interchange
