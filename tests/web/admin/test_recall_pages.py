"""Recall files and instructions pages: frontmatter as fields, roles, include problems shown
in place, escaping."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.recall.models import InstructionFile, RecallFile
from projects.models import Project, Role
from tests.web.admin.helpers import HOSTILE, assert_escaped

FILES = "/p/alpha/recall-files/"
INSTRUCTIONS = "/p/alpha/instructions/"


def _form(**fields: str) -> dict[str, str]:
    return {"scope": "project", "path": "testing.md", "type": "project", **fields}


def test_it_creates_and_edits_a_file_with_frontmatter_fields(
    alice: User, project: Project, web_client: Callable[[User], Client], alice_client: APIClient
) -> None:
    client = web_client(alice)
    response = client.post(
        FILES + "new/",
        _form(name="Testing", description="How we test", body="Run pytest -x.\n"),
    )
    assert response.status_code == 302
    file = RecallFile.objects.get(path="testing.md")
    assert file.content == (
        "---\nname: Testing\ndescription: How we test\ntype: project\n---\nRun pytest -x.\n"
    )
    assert (file.name, file.description, file.type) == ("Testing", "How we test", "project")
    assert AuditEvent.objects.filter(verb="recall_file.created").count() == 1
    # Keys the form does not know survive an edit.
    alice_client.put(
        "/api/v1/projects/alpha/recall-files/project/testing.md",
        {"content": "---\nname: Testing\nowner: qa\n---\nbody\n"},
        format="json",
    )
    page = client.get(FILES + "project/testing.md")
    assert page.status_code == 200 and 'value="Testing"' in page.content.decode()
    client.post(FILES + "project/testing.md", _form(name="Tests", description="", body="new\n"))
    file.refresh_from_db()
    assert file.content == "---\nname: Tests\ntype: project\nowner: qa\n---\nnew\n"
    listing = client.get(FILES).content.decode()
    assert "testing.md" in listing and "Tests" in listing


def test_form_validation_and_service_errors(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    response = client.post(FILES + "new/", _form(name="two\nlines", body="x"))
    assert response.status_code == 400 and "Use a single line." in response.content.decode()
    response = client.post(FILES + "new/", _form(path="../escape.md", body="x"))
    assert response.status_code == 400
    assert not RecallFile.objects.exists()


def test_roles_viewer_writes_only_own_files(
    role_user: Callable[[Role], User], web_client: Callable[[User], Client], charlie: User
) -> None:
    viewer = web_client(role_user(Role.VIEWER))
    # Project scope is not offered to a viewer; a post naming it anyway is refused by role.
    assert viewer.post(FILES + "new/", _form(body="x")).status_code == 403
    mine = viewer.post(FILES + "new/", _form(scope="user", path="me.md", body="x"))
    assert mine.status_code == 302
    assert web_client(charlie).get(FILES).status_code == 404
    assert web_client(charlie).get(INSTRUCTIONS).status_code == 404


def test_hostile_recall_files_are_escaped(
    alice: User, alice_client: APIClient, web_client: Callable[[User], Client]
) -> None:
    alice_client.put(
        "/api/v1/projects/alpha/recall-files/project/x.md",
        {"content": f"---\nname: {HOSTILE}\ndescription: {HOSTILE}\n---\n{HOSTILE}\n"},
        format="json",
    )
    client = web_client(alice)
    assert_escaped(client.get(FILES).content.decode())
    assert_escaped(client.get(FILES + "project/x.md").content.decode())


def test_instructions_preview_marks_problems_in_place(
    alice: User,
    project: Project,
    web_client: Callable[[User], Client],
    role_user: Callable[[Role], User],
) -> None:
    client = web_client(alice)
    for path, content in (
        (
            "MEWCODE.md",
            "Root rules\n@include docs/a.md\n@include ../../etc/passwd\n@include gone.md",
        ),
        ("docs/a.md", "A " + HOSTILE + "\n@include b.md"),
        ("docs/b.md", "B\n@include a.md"),
    ):
        response = client.post(INSTRUCTIONS + "new/", {"path": path, "content": content})
        assert response.status_code == 302, response.content
    assert InstructionFile.objects.count() == 3
    saved = client.post(INSTRUCTIONS + "mine/", {"content": "My own rule"})
    assert saved.status_code == 302
    html = client.get(INSTRUCTIONS).content.decode()
    assert_escaped(html)
    assert "3 include problems" in html
    assert "docs/a.md → docs/b.md → docs/a.md" in html
    assert "../../etc/passwd" in html and "gone.md" in html
    assert "My own rule" in html
    # A viewer sees the files but no way to change project files, and cannot post.
    viewer = web_client(role_user(Role.VIEWER))
    page = viewer.get(INSTRUCTIONS).content.decode()
    assert "New instruction file" not in page
    assert viewer.post(INSTRUCTIONS + "new/", {"path": "X.md", "content": "x"}).status_code == 403
    edit = viewer.get(INSTRUCTIONS + "file/MEWCODE.md")
    assert (
        edit.status_code == 200
        and '<form method="post" class="form wide">' not in edit.content.decode()
    )


def test_files_are_deleted_through_the_services(
    alice: User,
    project: Project,
    role_user: Callable[[Role], User],
    web_client: Callable[[User], Client],
) -> None:
    client = web_client(alice)
    client.post(FILES + "new/", _form(body="x"))
    client.post(INSTRUCTIONS + "new/", {"path": "MEWCODE.md", "content": "rules"})
    viewer = web_client(role_user(Role.VIEWER))
    assert "Delete this file" not in viewer.get(FILES + "project/testing.md").content.decode()
    assert viewer.post(FILES + "delete/project/testing.md").status_code == 403
    assert viewer.post(INSTRUCTIONS + "delete/MEWCODE.md").status_code == 403
    assert client.post(FILES + "delete/project/testing.md").status_code == 302
    assert client.post(INSTRUCTIONS + "delete/MEWCODE.md").status_code == 302
    assert not RecallFile.objects.exists() and not InstructionFile.objects.exists()
    assert AuditEvent.objects.filter(verb="recall_file.deleted").count() == 1
    assert client.post(FILES + "delete/project/testing.md").status_code == 404


def test_a_new_file_offers_only_the_scopes_one_may_write(
    role_user: Callable[[Role], User], web_client: Callable[[User], Client], alice: User
) -> None:
    viewer = web_client(role_user(Role.VIEWER))
    form = viewer.get(FILES + "new/").content.decode()
    assert ">Private: only its owner sees it<" in form
    assert ">Project: every member sees it<" not in form
    # A project scope posted anyway (not from this form) is refused by role.
    assert viewer.post(FILES + "new/", _form(body="What I typed.")).status_code == 403
    assert not RecallFile.objects.exists()
    member_form = web_client(alice).get(FILES + "new/").content.decode()
    assert ">Project: every member sees it<" in member_form and ">Private:" in member_form


def test_the_type_options_speak_the_pages_language(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    html = web_client(alice).get(FILES + "new/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    for value, label in (("user", "用户"), ("feedback", "反馈"), ("reference", "参考")):
        assert f'<option value="{value}">{label}</option>' in html, value
    assert ">Feedback<" not in html
