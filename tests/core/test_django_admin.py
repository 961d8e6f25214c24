"""The Django admin shows what only services may write, and refuses to add, change or delete it
(it was a 500 on "Add memory": the form cannot make a valid row)."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.actors import Actor
from accounts.models import ApiToken, User
from accounts.services import token_create
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.memories.services import MemoryInput, memory_create
from projects.models import Project


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="x-very-long-pass"))
    return client


def test_memories_and_their_events_are_shown_and_never_written(
    admin_client: Client, project: Project, alice: User
) -> None:
    memory = memory_create(
        project=project, actor=Actor(user=alice), data=MemoryInput(kind="fact", content="uv")
    )
    event = MemoryEvent.objects.get(memory=memory)
    for model, pk in (("memory", memory.pk), ("memoryevent", event.pk)):
        base = f"/admin/memories/{model}/"
        assert admin_client.get(base).status_code == 200
        page = admin_client.get(f"{base}{pk}/change/")
        assert page.status_code == 200 and b'name="_save"' not in page.content  # view only
        assert admin_client.get(f"{base}add/").status_code == 403
        assert admin_client.post(f"{base}add/", {}).status_code == 403
        assert admin_client.post(f"{base}{pk}/delete/", {"post": "yes"}).status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert MemoryEvent.objects.filter(pk=event.pk).exists()


def test_tokens_are_not_made_or_changed_in_the_admin(admin_client: Client, alice: User) -> None:
    token_create(user=alice, actor=Actor(user=alice), name="laptop")
    assert admin_client.get("/admin/accounts/apitoken/").status_code == 200
    assert admin_client.get("/admin/accounts/apitoken/add/").status_code == 403
    token = ApiToken.objects.get()
    change = f"/admin/accounts/apitoken/{token.pk}/change/"
    assert admin_client.post(change, {"name": "x", "read_only": "on"}).status_code == 403
    token.refresh_from_db()
    assert (token.name, token.read_only) == ("laptop", False)
