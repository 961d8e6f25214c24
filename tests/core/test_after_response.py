"""Deferred bookkeeping (memoryhub.core.after_response): inside a request it runs only when the
server closes the response; outside one it runs at once; a failure is logged, never raised."""

from __future__ import annotations

import logging
import os

import httpx
import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.core import after_response
from memoryhub.core.after_response import AfterResponseMiddleware
from memoryhub.memories.models import Memory
from tests.recall.memories import add_memory
from tests.reliability.servers import gunicorn
from tests.worker import database_url_of_test_db


def test_outside_a_request_deferred_work_runs_at_once() -> None:
    done: list[str] = []
    after_response.defer(lambda: done.append("now"))
    assert done == ["now"]


def test_inside_a_request_it_runs_when_the_response_is_closed() -> None:
    done: list[str] = []

    def view(request: HttpRequest) -> HttpResponse:
        after_response.defer(lambda: done.append("first"))
        after_response.defer(lambda: done.append("second"))
        return HttpResponse(b"results")

    response = AfterResponseMiddleware(view)(RequestFactory().get("/"))
    assert response.content == b"results"
    assert done == []  # the body exists, the bookkeeping has not run
    response.close()  # what the WSGI server calls once the body went out
    assert done == ["first", "second"]
    after_response.defer(lambda: done.append("later"))  # the request is over: at once
    assert done == ["first", "second", "later"]


def test_a_failing_piece_is_logged_and_the_rest_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[str] = []

    def boom() -> None:
        raise RuntimeError("database went away")

    def view(request: HttpRequest) -> HttpResponse:
        after_response.defer(boom)
        after_response.defer(lambda: done.append("counted"))
        return HttpResponse(b"ok")

    response = AfterResponseMiddleware(view)(RequestFactory().get("/"))
    with caplog.at_level(logging.ERROR, logger="memoryhub.core.after_response"):
        response.close()
    assert done == ["counted"]
    assert "deferred until after the response failed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_search_over_http_counts_its_hits_after_answering(
    alice: User, alice_client: APIClient
) -> None:
    """Through gunicorn (a real WSGI server closing the response): the search answers, and its
    hit counts are written once the server closed the response."""
    public_id = add_memory(alice_client, "Deploys go through ArgoCD on Fridays.")
    _, raw = token_create(user=alice, name="http", actor=Actor.for_system("test"))
    env = os.environ | {"DATABASE_URL": database_url_of_test_db(), "DEBUG": "false"}
    with gunicorn(env) as base:
        response = httpx.get(
            f"{base}/api/v1/projects/alpha/memories/search/",
            params={"q": "argocd deploys"},
            headers={"Authorization": f"Bearer {raw}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        assert [r["id"] for r in response.json()["results"]] == [public_id]
        # The next request on the same server starts after the first one's close().
        assert httpx.get(f"{base}/healthz", timeout=30).status_code in (200, 503)
    memory = Memory.objects.get(public_id=public_id)
    assert memory.hit_count == 1
    assert memory.last_accessed_at is not None
