from __future__ import annotations

from django.test import Client

from accounts.models import User
from projects.models import Project


def test_home_links_the_docs_and_lists_my_projects(alice: User, project: Project) -> None:
    client = Client()
    anonymous = client.get("/")
    assert anonymous.status_code == 200
    assert b"/api/docs/" in anonymous.content and b"Sign in" in anonymous.content
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert "alpha" in page and "owner" in page
