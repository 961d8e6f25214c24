from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from memoryhub.memories.text import tokenize
from memoryhub.recall import scoring
from tests.recall.memories import add_memory

PROJECT = "/api/v1/projects/alpha/"
URL = PROJECT + "memories/"
SEARCH = URL + "search/"


def add(client: APIClient, content: str, **fields: Any) -> str:
    return add_memory(client, content, **fields)


def search(client: APIClient, **params: Any) -> list[dict[str, Any]]:
    response = client.get(SEARCH, params)
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def test_tokenizer_stems_drops_stopwords_and_makes_cjk_bigrams() -> None:
    assert tokenize("The services are DEPLOYING to Docker") == ["servic", "deploy", "docker"]
    assert tokenize("用中文写测试") == ["用中", "中文", "文写", "写测", "测试"]
    assert tokenize("a 中 b") == ["b"]  # a lone Han character makes no bigram


def test_idf_and_decay_match_hand_computed_values() -> None:
    assert scoring.idf(2, 2) == pytest.approx(math.log(1.2))
    assert scoring.idf(10, 1) == pytest.approx(math.log(1 + 9.5 / 1.5))
    now = datetime(2026, 1, 31, tzinfo=UTC)
    steps = {0.5: 1.0, 1.5: 0.9, 3: 0.8, 6: 0.65, 14: 0.5, 29: 0.35, 59: 0.25, 179: 0.15, 400: 0.08}
    for days, weight in steps.items():
        assert scoring.recency_weight(now - timedelta(days=days), now) == weight
    old = now - timedelta(days=400)
    assert scoring.decayed(1.0, best_raw=2.0, importance=1, updated_at=old, now=now) == 0.08
    assert scoring.decayed(1.0, best_raw=2.0, importance=3, updated_at=old, now=now) == 1.0
    assert scoring.decayed(1.8, best_raw=2.0, importance=1, updated_at=old, now=now) == 1.8


SIGNALS_OFF = {"signal_session": 0, "signal_neighbour": 0, "signal_subject": 1}


def test_bm25_scores_match_hand_computed_values(alice_client: APIClient) -> None:
    # The context signals off: today's BM25 × recency alone (tests/recall/test_signals.py).
    response = alice_client.patch(PROJECT, {"settings": {"recall": SIGNALS_OFF}}, format="json")
    assert response.status_code == 200, response.content
    a = add(alice_client, "deploy docker")  # terms: deploy docker (dl 2)
    b = add(alice_client, "docker compose docker")  # docker compos docker (dl 3)
    # N = 2, avgdl = 2.5, df(docker) = 2 → idf = ln(1.2); defaults k1 = 0.3, b = 0
    idf = math.log(1.2)
    results = search(alice_client, q="docker")
    assert [r["id"] for r in results] == [b, a]
    assert results[0]["score"] == pytest.approx(idf * 2 * 1.3 / (2 + 0.3))
    assert results[1]["score"] == pytest.approx(idf * 1 * 1.3 / (1 + 0.3))
    twice = search(alice_client, q="docker docker")  # query repeats count (meow-memory)
    assert twice[0]["score"] == pytest.approx(2 * results[0]["score"])


def test_meow_memorys_exact_ranking_is_a_project_setting(alice_client: APIClient) -> None:
    meow = {"recall": {"search_k1": 1.5, "search_b": 0.75, "search_decay": 1, **SIGNALS_OFF}}
    response = alice_client.patch(PROJECT, {"settings": meow}, format="json")
    assert response.status_code == 200, response.content
    a = add(alice_client, "deploy docker")
    b = add(alice_client, "docker compose docker")
    idf = math.log(1.2)
    score_a = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2.5))
    score_b = idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2.5))
    results = search(alice_client, q="docker")
    assert [(r["id"], r["score"]) for r in results] == [
        (b, pytest.approx(score_b)),
        (a, pytest.approx(score_a)),
    ]
    # Full decay: a year-old memory that is no super match keeps 8 % of its score.
    # N = 3, df(docker) = 3, avgdl = 2, dl = 1.
    old = "2024-01-01T00:00:00Z"
    c = add(alice_client, "docker", created_at=old, updated_at=old)
    scores = {r["id"]: r["score"] for r in search(alice_client, q="docker compose")}
    raw_c = math.log(1 + 0.5 / 3.5) * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 1 / 2))
    assert scores[c] == pytest.approx(0.08 * raw_c)


@pytest.mark.parametrize(
    "recall, message",
    [
        ({"search_k1": -1}, "recall.search_k1 must be a number from 0 to 10."),
        ({"search_b": 2}, "recall.search_b must be a number from 0 to 1."),
        ({"search_decay": "strong"}, "recall.search_decay must be a number from 0 to 1."),
        ({"bm25": 1}, "Unknown recall setting 'bm25'."),
        ("fast", "project settings 'recall' must be an object."),
    ],
)
def test_bad_ranking_settings_are_refused_when_saved(
    alice_client: APIClient, recall: Any, message: str
) -> None:
    response = alice_client.patch(PROJECT, {"settings": {"recall": recall}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    assert response.json()["error"]["details"] == {"settings": [message]}
    assert alice_client.get(PROJECT).json()["settings"] == {}


def test_filters_that_remove_most_candidates_rank_again_among_visible_ones(
    alice_client: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    archived = [add(alice_client, "kafka kafka kafka kafka partition") for _ in range(6)]
    for memory_id in archived:
        alice_client.post(f"{URL}{memory_id}/archive/", {}, format="json")
    active = add(alice_client, "kafka consumer group notes for the payments team")
    # The best by BM25 are archived; the active one is found in the second pass.
    assert [r["id"] for r in search(alice_client, q="kafka partition", k=1)] == [active]
    assert len(search(alice_client, q="kafka partition", k=1, status="archived")) == 1


def test_recency_decay_and_its_exemptions(alice_client: APIClient) -> None:
    alice_client.patch(PROJECT, {"settings": {"recall": SIGNALS_OFF}}, format="json")
    old = "2024-01-01T00:00:00Z"
    weak_old = add(alice_client, "redis layer notes", created_at=old, updated_at=old)
    important_old = add(alice_client, "redis cache", importance=3, created_at=old, updated_at=old)
    fresh = add(alice_client, "redis")
    results = {
        r["id"]: r["score"]
        for r in search(alice_client, q="redis cache", as_of="2024-01-01T12:00:00Z")
    }
    assert set(results) == {weak_old, important_old, fresh}
    later = {r["id"]: r["score"] for r in search(alice_client, q="redis cache")}
    assert later[important_old] == pytest.approx(results[important_old])  # importance ≥ 3
    # Not a super match (< 0.85 × the best), old: the default strength 0.1 leaves
    # 0.9 + 0.1 × 0.08 of its score (it is 12 hours old at as_of: weight 1).
    assert later[weak_old] == pytest.approx(results[weak_old] * (0.9 + 0.1 * 0.08))


def test_filters(alice_client: APIClient) -> None:
    fact = add(alice_client, "postgres tuning notes", kind="fact")
    lesson = add(alice_client, "postgres vacuum lesson", kind="lesson")
    todo = add(alice_client, "postgres upgrade", kind="project", subcategory="todo")
    mine = add(alice_client, "postgres is my favourite", kind="user")
    alice_client.post(f"{URL}{fact}/archive/", {}, format="json")

    def ids(**params: Any) -> set[str]:
        params.setdefault("q", "postgres")
        return {r["id"] for r in search(alice_client, **params)}

    assert ids() == {lesson, todo, mine}
    assert ids(status="all") == {fact, lesson, todo, mine}
    assert ids(kind="lesson,fact") == {lesson}
    assert ids(subcategory="todo") == {todo}
    assert ids(scope="user") == {mine}
    assert ids(q="nothing matches this") == set()


def test_chinese_queries_match_chinese_memories(alice_client: APIClient) -> None:
    zh = add(alice_client, "部署前必须先运行数据库迁移")
    add(alice_client, "Run the database migrations before deploying")
    assert [r["id"] for r in search(alice_client, q="数据库迁移怎么做")][0] == zh


def test_user_memories_of_others_are_never_found(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    add(alice_client, "alice prefers vim keybindings", kind="user")
    shared = add(alice_client, "the team uses vim keybindings in the web ide")
    assert [r["id"] for r in search(bob_client, q="vim keybindings")] == [shared]


def test_with_a_session_the_first_five_are_blind_then_unseen_fill(
    alice_client: APIClient,
) -> None:
    alice_client.post("/api/v1/projects/alpha/sessions/", {"external_id": "s1"}, format="json")
    ids = [
        add(alice_client, f"kubernetes deployment note {'kubernetes ' * (12 - i)}")
        for i in range(12)
    ]
    first = [r["id"] for r in search(alice_client, q="kubernetes", k=7, session_id="s1")]
    assert first == ids[:7]
    second = [r["id"] for r in search(alice_client, q="kubernetes", k=7, session_id="s1")]
    assert second == ids[:5] + ids[7:9]  # five blind, then two not seen before
    without = [r["id"] for r in search(alice_client, q="kubernetes", k=7)]
    assert without == ids[:7]


def test_day_windows_beyond_the_calendar_are_refused_or_harmless(alice_client: APIClient) -> None:
    add(alice_client, "docker")
    response = alice_client.get(SEARCH, {"q": "docker", "days": "1000000"})
    assert response.status_code == 400
    assert "days" in response.json()["error"]["details"]
    early = search(alice_client, q="docker", days=1, as_of="0001-01-01T00:00:00Z")
    assert len(early) == 1  # the window starts before year 1: no lower bound


def test_search_rejects_bad_parameters(alice_client: APIClient) -> None:
    response = alice_client.get(SEARCH, {"k": "0", "kind": "nope"})
    assert response.status_code == 400
    assert set(response.json()["error"]["details"]) == {"q", "k", "kind"}
