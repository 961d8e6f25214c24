"""Validation as the real Hindsight server does it (hindsight-api-slim's pydantic models behind
FastAPI, read at vectorize-io/hindsight da9a588c, api/http.py), over real HTTP against a live
server: a number where a string belongs is a 422 `string_type` (pydantic does not coerce it; DRF's
CharField would store "5"), an empty `items` list is a successful retain of nothing (RetainRequest
has no minimum and api_retain answers success with items_count 0), and a bad query parameter is
located in "query" as FastAPI locates it."""

from __future__ import annotations

from typing import Any

import httpx
from hindsight_client import Hindsight

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.sessions.models import AgentSession
from projects.models import Project

V = "/v1/default/banks"


def hindsight_http(live_server: Any, user: User) -> httpx.Client:
    _, raw = token_create(user=user, name="hindsight", actor=Actor.for_system("test"))
    return httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Bearer {raw}"}, timeout=30
    )


def test_a_number_for_a_string_is_422_string_type(
    live_server: Any, alice: User, project: Project
) -> None:
    with hindsight_http(live_server, alice) as http:
        retained = http.post(
            f"{V}/alpha/memories",
            json={"items": [{"content": 5, "metadata": {"turn": 3}, "tags": [7]}]},
        )
        recalled = http.post(f"{V}/alpha/memories/recall", json={"query": 5})

    assert retained.status_code == 422, retained.text
    assert retained.json() == {
        "detail": [
            {"loc": loc, "msg": "Input should be a valid string", "type": "string_type"}
            for loc in (
                ["body", "items", 0, "content"],
                ["body", "items", 0, "metadata", "turn"],
                ["body", "items", 0, "tags", 0],
            )
        ]
    }
    assert not AgentSession.objects.filter(project=project).exists()  # nothing was stored
    assert recalled.status_code == 422
    assert recalled.json()["detail"][0]["loc"] == ["body", "query"]


def test_an_empty_retain_is_a_success_of_nothing_as_in_hindsight(
    live_server: Any, alice: User, project: Project
) -> None:
    _, raw = token_create(user=alice, name="hindsight", actor=Actor.for_system("test"))
    client = Hindsight(base_url=live_server.url, api_key=raw, timeout=30)
    try:
        answer = client.retain_batch("alpha", items=[], retain_async=True)
    finally:
        client.close()

    assert (answer.success, answer.items_count, answer.operation_id) == (True, 0, None)
    assert not AgentSession.objects.filter(project=project).exists()


def test_bad_query_parameters_are_located_in_the_query(
    live_server: Any, alice: User, project: Project
) -> None:
    with hindsight_http(live_server, alice) as http:
        letters = http.get(f"{V}/alpha/memories/list", params={"limit": "abc"})
        negative = http.get(f"{V}/alpha/documents", params={"offset": "-1"})
        kind = http.get(f"{V}/alpha/memories/list", params={"type": "banana"})
        detail = http.get(f"{V}/alpha/mental-models", params={"detail": "everything"})
        fine = http.get(f"{V}/alpha/memories/list", params={"limit": "5", "offset": "0"})

    assert letters.status_code == 422
    assert letters.json() == {
        "detail": [
            {
                "loc": ["query", "limit"],
                "msg": "Input should be a valid integer, unable to parse string as an integer",
                "type": "int_parsing",
            }
        ]
    }
    assert negative.json()["detail"] == [
        {
            "loc": ["query", "offset"],
            "msg": "Input should be greater than or equal to 0",
            "type": "greater_than_equal",
        }
    ]
    assert kind.status_code == detail.status_code == 422
    assert kind.json()["detail"][0]["loc"] == ["query", "type"]
    assert detail.json()["detail"][0]["loc"] == ["query", "detail"]
    assert fine.status_code == 200 and fine.json()["limit"] == 5
