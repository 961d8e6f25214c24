"""Creating memories through the API, for recall's tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rest_framework.test import APIClient

MEMORIES = "/api/v1/projects/alpha/memories/"


def add_memory(client: APIClient, content: str, kind: str = "fact", **fields: Any) -> str:
    """POST a memory to project alpha; its public id."""
    response = client.post(MEMORIES, {"content": content, "kind": kind, **fields}, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def add_at(client: APIClient, content: str, kind: str, when: datetime, **fields: Any) -> str:
    """A memory created and last updated at `when` (an import of history)."""
    stamp = when.isoformat()
    return add_memory(client, content, kind, created_at=stamp, updated_at=stamp, **fields)
