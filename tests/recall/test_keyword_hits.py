"""meow-memory's keyword hit formula (seed-algorithms §5.4) against hand-computed values."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.recall import keyword_hits
from memoryhub.recall.keyword_hits import KeywordHit
from projects.selectors import project_access
from tests.recall.memories import add_memory

MEMORIES = "/api/v1/projects/alpha/memories/"
RECALL = "/api/v1/projects/alpha/recall/"
SESSIONS = "/api/v1/projects/alpha/sessions/"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LN_1_6 = math.log(1.6)  # idf with N = 3, df = 2
LN_8_3 = math.log(8 / 3)  # idf with N = 3, df = 1


def add(client: APIClient, keywords: list[str], **fields: Any) -> str:
    content = fields.pop("content", "A note about " + " and ".join(keywords or ["nothing"]) + ".")
    fields.setdefault("updated_at", NOW.isoformat())
    return add_memory(client, content, fields.pop("kind", "fact"), keywords=keywords, **fields)


def hits(alice: User, message: str, *, k: int = 10, now: datetime = NOW) -> list[KeywordHit]:
    access = project_access(slug="alpha", actor=Actor(user=alice))
    return keyword_hits.keyword_hits(access=access, message=message, session=None, now=now, k=k)


def scores(found: list[KeywordHit]) -> dict[str, float]:
    return {str(h.memory.public_id): h.score for h in found}


def recall(client: APIClient, query: str, session: str = "s1") -> list[dict[str, Any]]:
    response = client.post(RECALL, {"query": query, "session_id": session}, format="json")
    assert response.status_code == 200, response.content
    return [r for r in response.json()["results"] if r["type"] == "memory"]


@pytest.fixture
def session(alice_client: APIClient) -> str:
    assert alice_client.post(SESSIONS, {"external_id": "s1"}, format="json").status_code == 201
    return "s1"


def test_idf_and_the_intersection_score(alice_client: APIClient, alice: User) -> None:
    both = add(alice_client, ["docker", "kafka"])
    one = add(alice_client, ["docker"])
    add(alice_client, ["python", "flask"])  # a candidate without query terms: counts in N only
    found = hits(alice, "Docker and Kafka?")
    assert [str(h.memory.public_id) for h in found] == [both, one]
    assert found[0].raw == pytest.approx(LN_1_6 + LN_8_3)
    assert found[1].raw == pytest.approx(LN_1_6)
    assert scores(found) == pytest.approx({both: LN_1_6 + LN_8_3, one: LN_1_6})
    # Query terms count as often as they occur (qtf).
    twice = hits(alice, "docker docker kafka")
    assert twice[0].raw == pytest.approx(2 * LN_1_6 + LN_8_3)


def test_coverage_counts_every_term_of_the_surface(alice_client: APIClient, alice: User) -> None:
    long_list = add(alice_client, ["docker compose", "docker swarm"])  # docker compos docker swarm
    short_list = add(alice_client, ["docker", "kubernetes"])
    add(alice_client, ["python"])
    found = hits(alice, "docker")
    assert [h.coverage for h in found] == [0.5, 0.25]
    assert scores(found) == pytest.approx({short_list: LN_1_6 / 2, long_list: LN_1_6 / 4})


def test_importance_weight_and_top_two(alice_client: APIClient, alice: User) -> None:
    plain = add(alice_client, ["redis"], importance=1)
    important = add(alice_client, ["redis"], importance=3)
    medium = add(alice_client, ["redis"], importance=2)
    add(alice_client, ["python"])
    idf = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))
    found = hits(alice, "redis", k=10)
    assert scores(found) == pytest.approx({important: idf * 1.5, medium: idf * 1.25, plain: idf})
    assert [h.importance_weight for h in found] == [1.5, 1.25, 1.0]
    top = hits(alice, "redis", k=keyword_hits.HIT_TOP_K)
    assert [str(h.memory.public_id) for h in top] == [important, medium]


def test_title_bonus(alice_client: APIClient, alice: User) -> None:
    titled = add(alice_client, ["nginx"], title="Proxy")  # surface: nginx proxi
    untitled = add(alice_client, ["nginx", "tls"])  # surface: nginx tls
    add(alice_client, ["python"])
    found = hits(alice, "nginx proxy")
    # N = 3; df(nginx) = 2, df(proxi) = 1 (the title is part of the surface).
    assert scores(found) == pytest.approx(
        {titled: (LN_1_6 + LN_8_3) * 1.0 * 1.2, untitled: LN_1_6 * 0.5}
    )
    assert [h.title_bonus for h in found] == [1.2, 1.0]
    # No title term in the query: no bonus.
    assert {h.title_bonus for h in hits(alice, "nginx")} == {1.0}


def test_recency_decay_and_both_exemptions(alice_client: APIClient, alice: User) -> None:
    ten_days_ago = (NOW - timedelta(days=10)).isoformat()
    best = add(alice_client, ["celery", "beat"], updated_at=ten_days_ago)
    weak = add(alice_client, ["celery"], updated_at=ten_days_ago)
    important = add(alice_client, ["celery"], updated_at=ten_days_ago, importance=3)
    add(alice_client, ["python"])
    idf_celery = math.log(1 + 1.5 / 3.5)  # N = 4, df = 3
    idf_beat = math.log(1 + 3.5 / 1.5)  # df = 1
    found = {str(h.memory.public_id): h for h in hits(alice, "celery beat")}
    # best: raw ≥ 0.85 × max raw (it is the max) → no decay.
    assert found[best].recency == 1.0
    assert found[best].score == pytest.approx(idf_celery + idf_beat)
    # important: importance ≥ 3 → no decay, × 1.5.
    assert found[important].recency == 1.0
    assert found[important].score == pytest.approx(idf_celery * 1.5)
    # weak: 10 days old → the step table's 0.5.
    assert found[weak].recency == 0.5
    assert found[weak].score == pytest.approx(idf_celery * 0.5)
    # The same memories seen 12 hours after their update: no decay at all.
    fresh = scores(hits(alice, "celery beat", now=NOW - timedelta(days=9, hours=12)))
    assert fresh[weak] == pytest.approx(idf_celery)


@pytest.mark.parametrize(("fillers", "recency"), [(5, 0.15), (6, 1.0)])
def test_super_match_threshold_is_85_percent_of_the_best(
    alice_client: APIClient, alice: User, fillers: int, recency: float
) -> None:
    old = (NOW - timedelta(days=100)).isoformat()
    best = add(alice_client, ["alpha", "beta"], updated_at=old)
    runner_up = add(alice_client, ["alpha"], updated_at=old)
    for _ in range(fillers):
        add(alice_client, ["beta"], updated_at=old)
    n = fillers + 2
    idf_alpha = math.log(1 + (n - 2 + 0.5) / 2.5)
    idf_beta = math.log(1 + (n - fillers - 1 + 0.5) / (fillers + 1.5))
    ratio = idf_alpha / (idf_alpha + idf_beta)  # 5 fillers: 0.848; 6 fillers: 0.876
    assert (ratio >= 0.85) == (recency == 1.0)
    found = {str(h.memory.public_id): h for h in hits(alice, "alpha beta")}
    assert found[best].recency == 1.0
    assert found[runner_up].recency == recency
    assert found[runner_up].score == pytest.approx(idf_alpha * recency)


def test_candidates_are_every_active_visible_kind(
    alice_client: APIClient, bob_client: APIClient, alice: User
) -> None:
    """Every kind the pipeline writes can be recalled (issue 9: project, feedback and user
    memories were never candidates, so learned conventions were never recalled)."""
    expected = {
        add(alice_client, ["zookeeper"], kind="fact"),
        add(alice_client, ["zookeeper"], kind="lesson"),
        add(alice_client, ["zookeeper"], kind="rule"),
        add(alice_client, ["zookeeper"], kind="topic"),
        add(alice_client, ["zookeeper"], kind="fact", scope="user"),  # alice's own
        add(alice_client, ["zookeeper"], kind="project"),
        add(alice_client, ["zookeeper"], kind="reference"),
        add(alice_client, ["zookeeper"], kind="user"),
        add(alice_client, ["zookeeper"], kind="feedback"),
    }
    archived = add(alice_client, ["zookeeper"])
    assert alice_client.post(f"{MEMORIES}{archived}/archive/", {}, format="json").status_code == 200
    add(alice_client, ["zookeeper"], status="proposed")
    add(bob_client, ["zookeeper"], kind="fact", scope="user")  # bob's: never alice's candidate
    add(bob_client, ["zookeeper"], kind="user")  # bob's preference: never alice's either
    found = hits(alice, "zookeeper", k=20)
    assert {str(h.memory.public_id) for h in found} == expected
    # N = 9 candidates, all with the term: idf = ln(1 + 0.5 / 9.5).
    assert found[0].raw == pytest.approx(math.log(1 + 0.5 / 9.5))


def test_keywords_are_the_surface_and_legacy_rows_use_the_first_100_chars(
    alice_client: APIClient, alice: User
) -> None:
    with_keywords = add(alice_client, ["terraform"], content="We also use ansible for hosts.")
    legacy = add(alice_client, [], content="Ansible runs nightly. " + "x" * 100 + " vagrant")
    found = hits(alice, "ansible")
    assert [str(h.memory.public_id) for h in found] == [legacy]  # content outside the surface
    assert hits(alice, "vagrant") == []  # beyond the first 100 characters
    assert [str(h.memory.public_id) for h in hits(alice, "terraform")] == [with_keywords]


def test_chinese_keywords_match_chinese_messages(alice_client: APIClient, alice: User) -> None:
    zh = add(alice_client, ["数据库迁移", "部署"], content="部署前必须先运行数据库迁移")
    add(alice_client, ["database migration"], content="Run migrations before deploying")
    assert [str(h.memory.public_id) for h in hits(alice, "部署之前要做数据库迁移吗？")] == [zh]


def test_only_the_first_500_characters_of_the_message_count(
    alice_client: APIClient, alice: User
) -> None:
    add(alice_client, ["elasticsearch"])
    assert hits(alice, "x " * 250 + "elasticsearch") == []
    assert len(hits(alice, "x " * 240 + "elasticsearch")) == 1


def test_a_large_pool_scores_the_best_by_the_index(
    alice_client: APIClient, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword_hits, "EXACT_POSTINGS", 2)
    monkeypatch.setattr(keyword_hits, "POOL_LIMIT", 2)
    best = add(alice_client, ["grafana", "loki"], content="grafana loki")
    second = add(alice_client, ["grafana"], content="grafana")
    add(alice_client, ["prometheus"], content="grafana mentioned in passing")
    add(alice_client, ["tempo"], content="grafana mentioned in passing too")
    found = hits(alice, "grafana loki")
    assert [str(h.memory.public_id) for h in found] == [best, second]
    # df comes from the index here: all four memories have "grafana" (N = 4).
    assert found[1].raw == pytest.approx(math.log(1 + 0.5 / 4.5))


def test_it_skips_memories_written_by_the_same_session(
    alice_client: APIClient, session: str
) -> None:
    add(alice_client, ["jenkins"], source={"session": "s1"})
    other = add(alice_client, ["jenkins"], source={"session": "s2"})
    add(alice_client, ["python"])
    found = recall(alice_client, "jenkins")
    assert [r["id"] for r in found] == [other]
    assert found[0]["score"] == pytest.approx(math.log(2))  # N = 2 without s1's memory, df = 1


def test_top_two_then_already_injected_ones_are_dropped_until_compaction(
    alice_client: APIClient, session: str
) -> None:
    first = add(alice_client, ["postgres", "vacuum"], importance=2)
    second = add(alice_client, ["postgres", "vacuum", "autovacuum"], importance=3)
    third = add(alice_client, ["postgres"])
    # N = 3: idf(postgr) = ln(1 + 0.5 / 3.5), idf(vacuum) = ln 1.6; scores raw × coverage ×
    # importance weight: first 0.60 × 1 × 1.25, second 0.60 × 2/3 × 1.5, third 0.13.
    assert [r["id"] for r in recall(alice_client, "postgres vacuum")] == [first, second]
    # The same two rank first again and were injected: nothing is injected, the third one
    # does not move up (meow-memory filters after taking the top two).
    assert recall(alice_client, "postgres vacuum") == []
    # Another session has its own seen set.
    alice_client.post(SESSIONS, {"external_id": "s2"}, format="json")
    assert [r["id"] for r in recall(alice_client, "postgres vacuum", "s2")] == [first, second]
    # After a compaction the agent has forgotten them: they may be injected again.
    boundary = [{"type": "compact_boundary", "content": {"summary": "…", "keep": []}}]
    response = alice_client.post(SESSIONS + "s1/records/", boundary, format="json")
    assert response.status_code == 201, response.content
    assert [r["id"] for r in recall(alice_client, "postgres vacuum")] == [first, second]
    # "postgres" alone: coverage ranks third (1/1) and first (1/2) on top; first was just
    # injected again, so only third is left.
    assert [r["id"] for r in recall(alice_client, "postgres")] == [third]
