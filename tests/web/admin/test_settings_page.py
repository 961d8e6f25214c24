"""Settings page: maintainers only; the sections refuse what the API refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.core.models import AuditEvent
from projects.models import Project, Role

SETTINGS = "/p/alpha/settings/"


def test_members_get_403_and_no_link(
    bob: User, charlie: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    assert web_client(bob).get(SETTINGS).status_code == 403
    assert web_client(bob).post(SETTINGS + "recall/", {"recall-search_k1": "1"}).status_code == 403
    assert SETTINGS not in web_client(bob).get("/p/alpha/sessions/").content.decode()
    assert web_client(charlie).get(SETTINGS).status_code == 404


def test_sections_save_through_the_projects_service(
    alice: User, project: Project, web_client: Callable[[User], Client], alice_client: APIClient
) -> None:
    client = web_client(alice)
    assert client.get(SETTINGS).status_code == 200
    saved = client.post(
        SETTINGS + "recall/", {"recall-search_k1": "1.5", "recall-search_b": "0.75"}
    )
    assert saved.status_code == 302
    project.refresh_from_db()
    assert project.settings["recall"] == {"search_k1": 1.5, "search_b": 0.75}
    assert AuditEvent.objects.filter(verb="project.updated").count() == 1
    client.post(SETTINGS + "review_required/", {"review_required-review_required": "on"})
    client.post(
        SETTINGS + "pipeline/",
        {"pipeline-retries": "5", "pipeline-dream_suppress_windows": "08:00-09:00, 13:00-14:00"},
    )
    client.post(SETTINGS + "sessions/", {"sessions-redact_secrets": "false"})
    api = alice_client.get("/api/v1/projects/alpha/").json()["settings"]
    assert api["review_required"] is True
    assert api["pipeline"] == {
        "retries": 5,
        "dream_suppress_windows": ["08:00-09:00", "13:00-14:00"],
    }
    assert api["sessions"] == {"redact_secrets": False}
    assert api["recall"] == {"search_k1": 1.5, "search_b": 0.75}
    page = client.get(SETTINGS).content.decode()
    assert 'value="1.5"' in page and "08:00-09:00, 13:00-14:00" in page


def test_bad_values_are_refused_as_by_the_api(
    alice: User, project: Project, web_client: Callable[[User], Client], alice_client: APIClient
) -> None:
    client = web_client(alice)
    cases = {
        "recall": ({"recall-search_k1": "99"}, "recall.search_k1 must be a number from 0 to 10."),
        "sessions": ({"sessions-keep_recent_turns": "-1"}, "non-negative integer"),
        "pipeline": ({"pipeline-dream_suppress_windows": "25:00-26:00"}, "dream"),
        "llm": ({"llm-timeout_seconds": "-1"}, "timeout_seconds"),
    }
    for section, (data, message) in cases.items():
        response = client.post(f"{SETTINGS}{section}/", data)
        assert response.status_code == 400, section
        assert message in response.content.decode(), (section, response.content.decode()[-3000:])
        # The page comes back at its top: a banner says where the errors are.
        assert f'has errors. <a href="#section-{section}">' in response.content.decode()
        api = alice_client.patch(
            "/api/v1/projects/alpha/",
            {"settings": {section: {k.split("-", 1)[1]: v for k, v in data.items()}}},
            format="json",
        )
        assert api.status_code == 400, section
    project.refresh_from_db()
    assert "recall" not in project.settings and "sessions" not in project.settings
    not_a_number = client.post(SETTINGS + "recall/", {"recall-search_k1": "abc"})
    assert not_a_number.status_code == 400 and "Enter a number." in not_a_number.content.decode()
    assert client.post(SETTINGS + "nope/").status_code == 404


OFFLINE_HINT = "This project extracts without an LLM."


def test_the_review_section_says_offline_extraction_needs_review_until_it_is_on(
    alice: User,
    project: Project,
    web_client: Callable[[User], Client],
    settings: Any,
    fake_llm: Any,
) -> None:
    client = web_client(alice)
    assert settings.LLM_PROVIDER == "offline"
    page = client.get(SETTINGS).content.decode()
    review = page.split('id="section-review_required"', 1)[1].split("</section>", 1)[0]
    assert OFFLINE_HINT in review
    zh = client.get(SETTINGS, HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "本项目在没有 LLM 的情况下提取记忆" in zh
    # a refused section re-renders the page with the same hint, also a refused LLM section
    refused = client.post(SETTINGS + "recall/", {"recall-search_k1": "99"})
    assert refused.status_code == 400 and OFFLINE_HINT in refused.content.decode()
    elsewhere = {"llm-provider": "openai", "llm-base_url": "http://llm.example"}
    refused = client.post(SETTINGS + "llm/", elsewhere)
    assert refused.status_code == 400 and "LLM_ALLOWED_BASE_URLS" in refused.content.decode()
    assert OFFLINE_HINT in refused.content.decode()

    client.post(SETTINGS + "review_required/", {"review_required-review_required": "on"})
    assert OFFLINE_HINT not in client.get(SETTINGS).content.decode()

    client.post(SETTINGS + "review_required/", {})  # review off again, and an LLM configured
    fake_llm.configure(settings)
    project.refresh_from_db()
    assert not project.settings.get("review_required")
    assert OFFLINE_HINT not in client.get(SETTINGS).content.decode()
    # a project that switches itself to the offline provider gets the hint back
    client.post(SETTINGS + "llm/", {"llm-provider": "offline"})
    project.refresh_from_db()
    assert project.settings["llm"]["provider"] == "offline"
    assert OFFLINE_HINT in client.get(SETTINGS).content.decode()


def test_owners_delete_the_project_from_the_settings_page(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    owner = web_client(alice)
    page = owner.get(SETTINGS).content.decode()
    assert 'action="/p/alpha/delete/"' in page
    assert 'href="/api/v1/projects/alpha/backup/"' in page  # a backup first, from the page
    refused = owner.post("/p/alpha/delete/", {"confirm": "alpha-typo"})
    assert refused.status_code == 400
    assert "Type the project&#x27;s slug" in refused.content.decode()
    assert Project.objects.filter(slug="alpha").exists()

    deleted = owner.post("/p/alpha/delete/", {"confirm": "alpha"}, follow=True)
    assert deleted.redirect_chain == [("/", 302)]
    assert "Project alpha deleted: 0 memories, 0 sessions, 2 members." in deleted.content.decode()
    assert not Project.objects.filter(slug="alpha").exists()
    assert owner.get(SETTINGS).status_code == 404
    assert AuditEvent.objects.get(verb="project.deleted").actor_user == alice


def test_maintainers_see_no_delete_section_and_cannot_delete(
    project: Project, web_client: Callable[[User], Client], role_user: Callable[[Role], User]
) -> None:
    maintainer = web_client(role_user(Role.MAINTAINER))
    assert "/p/alpha/delete/" not in maintainer.get(SETTINGS).content.decode()
    assert maintainer.post("/p/alpha/delete/", {"confirm": "alpha"}).status_code == 403
    assert Project.objects.filter(slug="alpha").exists()


def test_the_transcript_share_is_a_fraction(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    assert "(a fraction, 0–1)" in client.get(SETTINGS).content.decode()
    refused = client.post(SETTINGS + "pipeline/", {"pipeline-stage1_payload_percent": "70"})
    assert refused.status_code == 400
    assert "pipeline.stage1_payload_percent" in refused.content.decode()
    saved = client.post(SETTINGS + "pipeline/", {"pipeline-stage1_payload_percent": "0.5"})
    assert saved.status_code == 302
    project.refresh_from_db()
    assert project.settings["pipeline"]["stage1_payload_percent"] == 0.5
