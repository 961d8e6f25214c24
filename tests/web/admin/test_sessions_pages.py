"""Sessions list and transcript viewer: roles, folding, escaping, extract now, query counts."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.pipeline.models import Job
from projects.models import Project, Role
from tests.web.admin.helpers import assert_escaped, push_session

LIST = "/p/alpha/sessions/"


def test_outsiders_get_404_everywhere(
    alice_client: APIClient, charlie: User, web_client: Callable[[User], Client]
) -> None:
    sid = push_session(alice_client)
    charlie_web = web_client(charlie)
    for url in (LIST, f"{LIST}{sid}/", "/p/missing/sessions/"):
        assert charlie_web.get(url).status_code == 404
    assert charlie_web.post(f"{LIST}{sid}/extract/").status_code == 404
    assert not Job.objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in(project: Project) -> None:
    response = Client().get(LIST)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_list_shows_status_author_counts_and_extraction(
    alice_client: APIClient, alice: User, web_client: Callable[[User], Client]
) -> None:
    push_session(alice_client, "s-1")
    response = web_client(alice).get(LIST)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Content-Security-Policy" in response.headers
    row = re.search(r"<tbody>(.*)</tbody>", html, re.S)
    assert row is not None
    cells = row.group(1)
    assert "s-1" in cells and "alice" in cells and ">7<" in cells  # seven records
    assert "not yet" in cells
    assert_escaped(html)  # the session's title is hostile


def test_the_transcript_folds_injected_blocks_and_tool_calls(
    alice_client: APIClient, role_user: Callable[[Role], User], web_client: Callable[[User], Client]
) -> None:
    sid = push_session(alice_client)
    viewer = role_user(Role.VIEWER)
    response = web_client(viewer).get(f"{LIST}{sid}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert_escaped(html)
    injected = re.search(r'<details class="injected">(.*?)</details>', html, re.S)
    assert injected is not None and "Deploy with docker compose" in injected.group(1)
    # What the user typed is apart from what was injected, and not folded.
    said = re.findall(r'<div class="said">(.*?)</div>', html, re.S)
    assert any("Please fix the flaky test" in s for s in said)
    assert not any("Deploy with docker compose" in s for s in said)
    call = re.search(r'<details class="tool-call">(.*?)</details>', html, re.S)
    assert call is not None
    assert "pytest -x" in call.group(1) and "42 passed in 3.1s" in call.group(1)
    assert html.count("42 passed in 3.1s") == 1  # the result is not shown twice
    boundary = re.search(r'class="boundary-summary">(.*?)</div>', html, re.S)
    assert boundary is not None and "We fixed the flaky test." in boundary.group(1)
    # A viewer reads but has no "Extract now".
    assert "Extract now" not in html
    assert web_client(viewer).post(f"{LIST}{sid}/extract/").status_code == 403


def test_extract_now_htmx_and_plain(
    alice_client: APIClient, alice: User, bob: User, web_client: Callable[[User], Client]
) -> None:
    sid = push_session(alice_client)
    alice_web = web_client(alice)
    assert "Extract now" in alice_web.get(f"{LIST}{sid}/").content.decode()
    # bob is a member but not the author: no button, and 403.
    assert "Extract now" not in web_client(bob).get(f"{LIST}{sid}/").content.decode()
    assert web_client(bob).post(f"{LIST}{sid}/extract/").status_code == 403
    response = alice_web.post(f"{LIST}{sid}/extract/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="extraction"') and "<html" not in html
    assert "Extraction queued" in html
    job = Job.objects.get(kind=Job.Kind.STAGE1)
    assert job.input_watermark == 7 and job.session is not None
    assert AuditEvent.objects.filter(verb="session.extract_requested").count() == 1
    plain = alice_web.get(f"{LIST}{sid}/extract/")
    assert plain.status_code == 405
    redirected = alice_web.post(f"{LIST}{sid}/extract/", follow=True)
    assert redirected.redirect_chain and redirected.status_code == 200


def test_list_htmx_returns_the_rows_only(
    alice_client: APIClient, alice: User, web_client: Callable[[User], Client]
) -> None:
    push_session(alice_client, "findme")
    push_session(alice_client, "other")
    response = web_client(alice).get(LIST, {"q": "findme"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="session-rows"') and "<html" not in html
    assert "findme" in html and "other" not in html


@pytest.mark.parametrize("page", ["list", "detail"])
def test_query_counts_do_not_grow_with_rows(
    page: str, alice_client: APIClient, alice: User, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)

    def count() -> int:
        url = LIST if page == "list" else f"{LIST}first/"
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx.captured_queries)

    push_session(alice_client, "first")
    alice_web_extract = client.post(f"{LIST}first/extract/")
    assert alice_web_extract.status_code == 302
    small = count()
    for i in range(6):
        push_session(alice_client, f"more-{i}")
        if page == "detail":
            alice_client.post(
                "/api/v1/projects/alpha/sessions/first/records/",
                [{"type": "user", "content": f"again {i}"}],
                format="json",
            )
    assert count() == small


def test_memories_and_transcript_link_both_ways(
    alice: User, alice_client: APIClient, web_client: Callable[[User], Client]
) -> None:
    sid = push_session(alice_client, "linked")
    response = alice_client.post(
        "/api/v1/projects/alpha/memories/",
        {
            "kind": "feedback",
            "content": "Never force-push to main.",
            "source": {"session": "linked", "record_start": 5},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    memory_id = response.json()["id"]
    client = web_client(alice)
    html = client.get(f"{LIST}{sid}/").content.decode()
    section = re.search(r'<section class="extracted".*?</section>', html, re.S)
    assert section is not None and "Never force-push to main." in section.group(0)
    assert "#record-5" in section.group(0) and 'id="record-5"' in html
    assert f"/p/alpha/memories/{memory_id}/" in section.group(0)
    memory_page = client.get(f"/p/alpha/memories/{memory_id}/").content.decode()
    assert "/p/alpha/sessions/linked/#record-5" in memory_page


def test_a_nul_character_in_the_address_is_a_400_not_a_database_error(
    alice_client: APIClient, alice: User, web_client: Callable[[User], Client]
) -> None:
    push_session(alice_client, "s-1")
    web = web_client(alice)
    # PostgreSQL refuses text with NUL even in a comparison: these were 500s.
    for url in (f"{LIST}?q=%00", f"{LIST}?q=abc%00def", f"{LIST}a%00b/", f"{LIST}?%00=1"):
        response = web.get(url)
        assert response.status_code == 400, url
    assert web.get(f"{LIST}?q=s-1").status_code == 200
