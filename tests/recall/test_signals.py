"""The context signals of the ranking (memoryhub.recall.signals, issue 14): each one changes the
order the way it should on a small bank (real PostgreSQL, through the API), the weights are
validated project settings, and one ranking serves every path that ranks memories."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.integrations.mcp import operations
from memoryhub.integrations.mcp.caller import Caller
from memoryhub.recall import explain, signals
from memoryhub.recall.search import SearchQuery
from projects.models import Project
from projects.selectors import project_access
from tests.recall.memories import add_memory

PROJECT = "/api/v1/projects/alpha/"
SEARCH = PROJECT + "memories/search/"
OFF = {"signal_session": 0, "signal_neighbour": 0, "signal_subject": 1}


def use(client: APIClient, **recall: float) -> None:
    response = client.patch(PROJECT, {"settings": {"recall": recall}}, format="json")
    assert response.status_code == 200, response.content


def ranked(client: APIClient, q: str) -> list[str]:
    response = client.get(SEARCH, {"q": q})
    assert response.status_code == 200, response.content
    return [r["content"] for r in response.json()["results"]]


def add(
    client: APIClient, content: str, session: str = "", record: int | None = None, **f: Any
) -> str:
    if session:
        f["source"] = {"session": session, "record_start": record}
    return add_memory(client, content, **f)


def test_session_coherence_prefers_the_memory_whose_session_the_query_is_about(
    alice_client: APIClient,
) -> None:
    # Both candidates match "kafka" alone, equally; the older one wins the tie without signals.
    add(alice_client, "kafka topic naming", "chat-2", 0)
    add(alice_client, "lunch is at noon on fridays", "chat-2", 1)
    add(alice_client, "kafka topic for billing", "chat-1", 0)
    add(alice_client, "the retention of the billing events is seven days", "chat-1", 1)
    use(alice_client, **OFF)
    before = ranked(alice_client, "kafka topic retention")
    assert before.index("kafka topic naming") < before.index("kafka topic for billing")
    use(alice_client, **{**OFF, "signal_session": 0.3})
    after = ranked(alice_client, "kafka topic retention")
    assert after.index("kafka topic for billing") < after.index("kafka topic naming")


def test_neighbour_smoothing_brings_the_answer_after_a_matching_question(
    alice_client: APIClient,
) -> None:
    add(alice_client, "Which port does the staging database listen on?", "chat", 0)
    add(alice_client, "5433, behind the bastion host.", "chat", 1)
    add(alice_client, "Unrelated: the office plants need water.", "chat", 2)
    add(alice_client, "The staging database is rebuilt nightly.", "other", 0)
    use(alice_client, **OFF)
    assert "5433, behind the bastion host." not in ranked(alice_client, "staging database port")
    use(alice_client, **{**OFF, "signal_neighbour": 0.3})
    after = ranked(alice_client, "staging database port")
    # It shares no word with the query: its neighbour lends it 0.3 of its score.
    assert "5433, behind the bastion host." in after
    assert "Unrelated: the office plants need water." not in after  # not a neighbour of a match
    assert after.index("Which port does the staging database listen on?") == 0


@pytest.mark.parametrize(
    "fields",
    [
        {"metadata": {"subject": "Postgres"}},  # a subject field
        {"title": "Postgres"},  # the title
    ],
)
def test_subject_boost_prefers_the_memory_about_what_the_query_names(
    alice_client: APIClient, fields: dict[str, Any]
) -> None:
    # A title that the query does not name in full is no subject match ("ci" is not asked for).
    add(alice_client, "postgres version 16 runs in CI", title="Postgres in CI")
    add(alice_client, "postgres version 16 runs locally", **fields)
    use(alice_client, **OFF)
    assert ranked(alice_client, "postgres version")[0] == "postgres version 16 runs in CI"
    use(alice_client, **{**OFF, "signal_subject": 1.5})
    assert ranked(alice_client, "postgres version")[0] == "postgres version 16 runs locally"
    # Named in part only: no boost ("postgres" is the subject, "mysql version" does not name it).
    use(alice_client, **{**OFF, "signal_subject": 1.5})
    assert ranked(alice_client, "mysql version")[0] == "postgres version 16 runs in CI"


def test_subject_boost_reads_a_leading_name_label(alice_client: APIClient) -> None:
    add(alice_client, "Melanie: Caroline went to the pottery class")
    add(alice_client, "Caroline: Melanie went to the pottery class")
    use(alice_client, **OFF)
    assert ranked(alice_client, "What did Caroline do at the pottery class?")[0].startswith(
        "Melanie:"
    )
    use(alice_client, **{**OFF, "signal_subject": 1.5})
    assert ranked(alice_client, "What did Caroline do at the pottery class?")[0].startswith(
        "Caroline:"
    )


def test_subject_text_precedence() -> None:
    assert signals.subject_text(title="T", content="Ann: x", metadata={"subject": "S"}) == "S"
    assert signals.subject_text(title="T", content="Ann: x", metadata={}) == "T"
    assert signals.subject_text(title="", content="Ann Lee: hi", metadata={}) == "Ann Lee"
    # Not labels: a URL, a time, a lower-case start, a long sentence before a colon.
    for content in ("http://x.org: y", "12:30 lunch", "note: x", "We decided on this: x y"):
        assert signals.subject_text(title="", content=content, metadata={}) == ""


@pytest.mark.parametrize(
    "recall, message",
    [
        ({"signal_session": -0.1}, "recall.signal_session must be a number from 0 to 5."),
        ({"signal_neighbour": 2}, "recall.signal_neighbour must be a number from 0 to 1."),
        ({"signal_subject": 0.5}, "recall.signal_subject must be a number from 1 to 5."),
        ({"signal_subject": "big"}, "recall.signal_subject must be a number from 1 to 5."),
    ],
)
def test_signal_weights_are_validated_settings(
    alice_client: APIClient, recall: dict[str, Any], message: str
) -> None:
    response = alice_client.patch(PROJECT, {"settings": {"recall": recall}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    assert alice_client.get(PROJECT).json()["settings"] == {}


def test_one_ranking_serves_search_hindsight_mcp_the_dashboard_and_the_preview(
    alice_client: APIClient,
    alice: User,
    project: Project,
) -> None:
    """The neighbour that shares no word with the query is found, at the same rank, by every
    path that ranks memories: only the one ranking (search.ranked) joins neighbours."""
    add(alice_client, "Which port does the staging database listen on?", "chat", 0)
    add(alice_client, "5433, behind the bastion host.", "chat", 1)
    add(alice_client, "The staging database is rebuilt nightly.", "other", 0)
    query = "staging database port"
    rest = ranked(alice_client, query)
    assert "5433, behind the bastion host." in rest  # the default ranking has the signals on

    hindsight = alice_client.post(
        "/v1/default/banks/alpha/memories/recall", {"query": query}, format="json"
    )
    assert hindsight.status_code == 200, hindsight.content
    assert [r["text"] for r in hindsight.json()["results"]] == rest

    mcp = operations.memory_search(
        Caller(actor=Actor(user=alice)),
        "alpha",
        query=query,
        k=20,
        kinds=(),
        statuses=(),
        days=None,
        session_id=None,
        content_max=0,
    )
    by_rank = sorted(mcp.data["results"], key=lambda r: r["rank"])
    assert [r["content"] for r in by_rank] == rest

    access = project_access(slug="alpha", actor=Actor(user=alice))
    preview = explain.explain_search(access=access, query=SearchQuery(text=query, k=20))
    assert [e.memory.content for e in preview.results] == rest
    joined = next(e for e in preview.results if e.memory.content.startswith("5433"))
    assert joined.raw == 0 and joined.neighbours > 0

    person = Client()
    person.force_login(alice)
    page = person.get(reverse("web:memories", kwargs={"slug": "alpha"}), {"q": query})
    assert page.status_code == 200
    html = page.content.decode()
    positions = [html.index(content) for content in rest]
    assert positions == sorted(positions)
