"""The injection preview's explained scores are the ranking's own numbers."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.recall import explain
from memoryhub.recall.injection import Profile
from memoryhub.recall.search import SearchQuery
from projects.models import Project
from projects.selectors import project_access
from tests.recall.memories import add_at, add_memory

SEARCH = "/api/v1/projects/alpha/memories/search/"


def _bank(client: APIClient) -> None:
    now = datetime.now(UTC)
    add_memory(client, "Deploy with docker compose, never by hand", importance=1)
    add_memory(client, "docker images are built in CI", importance=3)
    add_at(client, "The deploy docker script lives in ops/", "fact", now - timedelta(days=40))
    add_at(client, "Rotate docker registry credentials monthly", "fact", now - timedelta(days=9))
    add_memory(client, "Python 3.13 is the target runtime")


MEOW = {"search_k1": 1.5, "search_b": 0.75, "search_decay": 1}
SIGNALS_OFF = {"signal_session": 0, "signal_neighbour": 0, "signal_subject": 1}


@pytest.mark.parametrize("settings_", [{}, MEOW, {**MEOW, **SIGNALS_OFF}])
def test_it_explains_the_rankings_own_scores(
    alice_client: APIClient, alice: User, project: Project, settings_: dict[str, float]
) -> None:
    alice_client.patch(
        "/api/v1/projects/alpha/", {"settings": {"recall": settings_}}, format="json"
    )
    _bank(alice_client)
    as_of = datetime.now(UTC).replace(microsecond=0)
    ranked = alice_client.get(SEARCH, {"q": "deploy docker docker", "as_of": as_of.isoformat()})
    assert ranked.status_code == 200, ranked.content
    expected = [(r["id"], r["score"]) for r in ranked.json()["results"]]
    assert len(expected) == 4

    access = project_access(slug="alpha", actor=Actor(user=alice))
    project.refresh_from_db()
    access = project_access(slug="alpha", actor=Actor(user=alice))
    explained = explain.explain_search(
        access=access, query=SearchQuery(text="deploy docker docker", k=20, as_of=as_of)
    )
    assert [
        (str(e.memory.public_id), pytest.approx(e.score, rel=1e-9)) for e in explained.results
    ] == expected
    for e in explained.results:
        # The parts add up to the raw score the ranking computed, and the factor to the total.
        assert e.terms_total == pytest.approx(e.raw, rel=1e-9)
        assert e.raw * e.decay_factor == pytest.approx(e.base, rel=1e-12)
        signals = e.base + e.neighbours + e.session
        assert signals * e.subject == pytest.approx(e.score, rel=1e-12)
        if settings_.get("signal_session") == 0:
            assert e.score == e.base
        assert {p.term for p in e.terms} <= {"deploy", "docker"}
        for part in e.terms:
            assert part.idf == pytest.approx(
                math.log(1 + (explained.n_docs - part.df + 0.5) / (part.df + 0.5))
            )
    by_content = {e.memory.content: e for e in explained.results}
    important = by_content["docker images are built in CI"]
    assert important.exempt == "importance" and important.decay_factor == 1.0
    old = by_content["The deploy docker script lives in ops/"]
    assert old.recency_weight == 0.25 and old.age_days == pytest.approx(40, abs=0.01)
    docker = next(p for p in old.terms if p.term == "docker")
    assert docker.query_count == 2  # a repeated query word weighs twice


def test_preview_reads_only(alice_client: APIClient, alice: User, project: Project) -> None:
    _bank(alice_client)
    access = project_access(slug="alpha", actor=Actor(user=alice))
    before = list(Memory.objects.order_by("pk").values_list("hit_count", "last_accessed_at"))
    result = explain.preview(
        access=access, profile=Profile.DEFAULT, prompt="how do we deploy docker"
    )
    assert result.payload.text.startswith("<memoryhub-context>")
    assert result.search.results and result.recall.hits
    assert result.token_estimate > result.payload.token_estimate
    after = list(Memory.objects.order_by("pk").values_list("hit_count", "last_accessed_at"))
    assert before == after
