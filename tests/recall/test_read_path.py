"""The hot read path's shortcuts (issue 15): hand-written statements and plain-dict rows must
answer exactly what the querysets and serializers did, and nothing may outlive a permission
change: a revoked token or a removed member is refused on the very next request."""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timedelta

import pytest
from django.http import Http404
from rest_framework.test import APIClient

from accounts import selectors as account_selectors
from accounts.actors import Actor
from accounts.models import ApiToken, User
from accounts.services import token_create, token_revoke
from memoryhub.core.cache import RedisCache
from memoryhub.memories.models import Memory
from memoryhub.recall.api.search import SearchResultSerializer
from memoryhub.recall.models import RecallSeen
from memoryhub.recall.search import Hit
from memoryhub.recall.selectors import injected_memory_ids
from memoryhub.recall.services import recall_payload_mark_injected
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from projects.selectors import membership_get, project_access
from projects.services import membership_remove
from tests.conftest import bearer_client
from tests.recall.memories import add_memory

SEARCH = "/api/v1/projects/alpha/memories/search/"
SESSIONS = "/api/v1/projects/alpha/sessions/"


def test_search_rows_are_exactly_the_serializers_output(alice_client: APIClient) -> None:
    add_memory(
        alice_client,
        "Deploys go through the staging cluster first.",
        title="Staging first",
        keywords=["deploy", "staging"],
        metadata={"subject": "deploys", "n": 3},
        importance=3,
    )
    add_memory(alice_client, "中文部署说明：先部署到测试环境。", keywords=["部署"])
    response = alice_client.get(SEARCH, {"q": "deploy staging 部署"})
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 2
    memories = {str(m.public_id): m for m in Memory.objects.all()}
    for row in results:
        hit = Hit(memory=memories[row["id"]], score=row["score"], raw=0.0)
        assert row == SearchResultSerializer(hit).data


def test_a_revoked_token_is_refused_on_the_next_request(alice: User, project: Project) -> None:
    token, raw = token_create(user=alice, name="t", actor=Actor.for_system("test"))
    client = bearer_client(raw)
    assert client.get(SEARCH, {"q": "anything"}).status_code == 200
    token_revoke(token=token, actor=Actor(user=alice))
    assert client.get(SEARCH, {"q": "anything"}).status_code == 401


def test_a_removed_member_is_refused_at_once_like_an_outsider(
    alice: User, bob: User, project: Project, bob_client: APIClient
) -> None:
    assert bob_client.get(SEARCH, {"q": "anything"}).status_code == 200
    access = project_access(slug="alpha", actor=Actor(user=alice))
    membership_remove(access=access, membership=membership_get(project=project, username="bob"))
    gone = bob_client.get(SEARCH, {"q": "anything"})
    missing = bob_client.get("/api/v1/projects/no-such-project/memories/search/", {"q": "x"})
    assert gone.status_code == missing.status_code == 404
    assert gone.json() == missing.json()


def test_the_membership_read_with_the_token_serves_one_access_check_only(
    alice: User, bob: User, project: Project
) -> None:
    """What authentication read with the token is used by that request's project_access and
    never again (an MCP stdio server keeps its token object for the whole process)."""
    _, raw = token_create(user=bob, name="t", actor=Actor.for_system("test"))
    token = account_selectors.token_find_usable(raw=raw, project_slug="alpha")
    assert isinstance(token, ApiToken)
    assert token.prefetched_access is not None
    assert token.prefetched_access.role == "member"
    actor = Actor(user=token.user, token=token)
    access = project_access(slug="alpha", actor=actor)
    assert access.project == project and access.role == "member"
    assert token.prefetched_access is None
    owner = project_access(slug="alpha", actor=Actor(user=alice))
    membership_remove(access=owner, membership=membership_get(project=project, username="bob"))
    with pytest.raises(Http404):
        project_access(slug="alpha", actor=actor)


def test_a_membership_read_for_another_project_is_not_used(
    alice: User, bob: User, project: Project, charlie: User, charlies_project: Project
) -> None:
    _, raw = token_create(user=charlie, name="t", actor=Actor.for_system("test"))
    token = account_selectors.token_find_usable(raw=raw, project_slug="alpha")
    assert token is not None and token.prefetched_access is not None
    assert token.prefetched_access.role is None  # not a member of alpha
    access = project_access(slug="charlie-lab", actor=Actor(user=charlie, token=token))
    assert access.project == charlies_project and access.role == "owner"


def test_the_token_statement_builds_what_the_orm_loads(alice: User, project: Project) -> None:
    created, raw = token_create(user=alice, name="t", project=project, actor=Actor(user=alice))
    token = account_selectors.token_find_usable(raw=raw, project_slug="alpha")
    assert token is not None
    fresh = ApiToken.objects.select_related("user").get(pk=created.pk)
    for field in ApiToken._meta.concrete_fields:
        assert getattr(token, field.attname) == getattr(fresh, field.attname), field.name
    for field in User._meta.concrete_fields:
        assert getattr(token.user, field.attname) == getattr(fresh.user, field.attname)
    assert token.prefetched_access.project.settings == project.settings
    assert account_selectors.token_find_usable(raw=raw[:-1] + "x") is None


def test_the_rate_limit_cache_reuses_one_redis_client() -> None:
    # The real Redis the suite runs beside (CI sets REDIS_URL); tests throttle in memory.
    cache = RedisCache(os.environ["REDIS_URL"], {"KEY_PREFIX": f"test-{uuid.uuid4()}"})
    cache.set("a", [1.5, 2.5], 30)
    assert cache.get("a") == [1.5, 2.5]
    cache.set("b", 1, 30)
    assert cache._cache.get_client(write=True) is cache._cache.get_client(write=True)
    assert cache.get("b") == 1
    cache.delete_many(["a", "b"])
    assert cache.get("a") is None


def test_marking_seen_again_redates_only_rows_of_an_earlier_day_or_before_a_compaction(
    alice_client: APIClient,
) -> None:
    assert alice_client.post(SESSIONS, {"external_id": "s1"}, format="json").status_code == 201
    memory = Memory.objects.get(public_id=add_memory(alice_client, "Redis runs on port 6380."))
    session = AgentSession.objects.get(external_id="s1")
    injected = RecallSeen.Reason.INJECTED

    def stamp() -> datetime:
        return RecallSeen.objects.get(session=session, memory=memory, reason=injected).created_at

    recall_payload_mark_injected(session=session, memory_pks=[memory.pk, memory.pk])
    first = stamp()
    recall_payload_mark_injected(session=session, memory_pks=[memory.pk])
    assert stamp() == first  # the same day, no compaction since: left as it was
    yesterday = first - timedelta(days=1)
    RecallSeen.objects.filter(session=session).update(created_at=yesterday)
    recall_payload_mark_injected(session=session, memory_pks=[memory.pk])
    assert stamp() > first  # shown again on a later day: dated today (the hits chart)
    boundary = [{"type": "compact_boundary", "content": {"summary": "…", "keep": []}}]
    response = alice_client.post(SESSIONS + "s1/records/", boundary, format="json")
    assert response.status_code == 201, response.content
    assert injected_memory_ids(session=session, among=[memory.pk]) == set()
    recall_payload_mark_injected(session=session, memory_pks=[memory.pk])
    assert injected_memory_ids(session=session, among=[memory.pk]) == {memory.pk}


def test_hindsight_recall_refuses_a_removed_member_at_once(
    alice: User, bob: User, project: Project, alice_client: APIClient, bob_client: APIClient
) -> None:
    """Hindsight reads the membership of the bank in the URL with the token, too; an unknown
    bank answers an empty recall (as Hindsight does), and so does a bank one left."""
    add_memory(alice_client, "The billing service deploys on Fridays.")
    recall = "/v1/default/banks/alpha/memories/recall"
    before = bob_client.post(recall, {"query": "billing deploys"}, format="json")
    assert before.status_code == 200 and len(before.json()["results"]) == 1
    access = project_access(slug="alpha", actor=Actor(user=alice))
    membership_remove(access=access, membership=membership_get(project=project, username="bob"))
    gone = bob_client.post(recall, {"query": "billing deploys"}, format="json")
    missing = bob_client.post(
        "/v1/default/banks/no-such-bank/memories/recall", {"query": "billing"}, format="json"
    )
    assert (gone.status_code, gone.json()) == (missing.status_code, missing.json())
    assert gone.json() == {"results": []}


@pytest.mark.django_db(transaction=True)
def test_a_payload_handed_out_again_skips_the_seen_write_until_the_session_moves_on(
    alice_client: APIClient,
) -> None:
    """Outside a test's transaction (as in the server), an injection that this process already
    marked for the session today writes nothing and sends no statement for it; a new record
    in the session (a compaction is one) makes the next injection mark again."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    assert alice_client.post(SESSIONS, {"external_id": "s1"}, format="json").status_code == 201
    memory = Memory.objects.get(public_id=add_memory(alice_client, "Redis runs on port 6380."))
    params = {"profile": "default", "session_id": "s1"}
    injection = "/api/v1/projects/alpha/injection/"
    seen_table = RecallSeen._meta.db_table

    def seen_statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert alice_client.get(injection, params).status_code == 200
        return sum(seen_table in q["sql"] for q in captured.captured_queries)

    assert seen_statements() == 1
    assert RecallSeen.objects.filter(memory=memory, reason=RecallSeen.Reason.INJECTED).exists()
    assert seen_statements() == 0  # the same payload, the same session, the same day
    RecallSeen.objects.all().delete()
    boundary = [{"type": "compact_boundary", "content": {"summary": "…", "keep": []}}]
    response = alice_client.post(SESSIONS + "s1/records/", boundary, format="json")
    assert response.status_code == 201, response.content
    assert seen_statements() == 1
    assert RecallSeen.objects.filter(memory=memory, reason=RecallSeen.Reason.INJECTED).exists()
