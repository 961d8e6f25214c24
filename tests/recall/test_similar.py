from __future__ import annotations

import math
from collections import Counter
from typing import Any

from rest_framework.test import APIClient

from memoryhub.memories.similarity import meow_tokens as meow_tokenize
from memoryhub.memories.similarity import vector_cosine as cosine
from memoryhub.memories.text import tokenize
from memoryhub.recall.models import RecallSeen
from tests.recall.memories import add_memory

P = "/api/v1/projects/alpha/"


def add(client: APIClient, content: str, kind: str = "fact", **fields: Any) -> str:
    return add_memory(client, content, kind, **fields)


def similar(client: APIClient, memory_id: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(P + f"memories/{memory_id}/similar/", params)
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def test_meow_tokenizer_is_raw_bigrams_and_words() -> None:
    assert meow_tokenize("Deploying the 服务器配置, v2 好") == [
        "deploying",
        "the",
        "服务",
        "务器",
        "器配",
        "配置",
        "v2",
    ]
    # The bank tokenizer stems and drops stopwords; meow's does neither.
    assert tokenize("Deploying the") == ["deploy"]


def test_cosine_matches_hand_computed_values() -> None:
    a = Counter({"deploy": 1, "docker": 2})
    assert cosine(a, Counter({"docker": 1, "compose": 1})) == 2 / math.sqrt(10)
    assert cosine(a, Counter({"kubernetes": 1})) == 0.0
    assert cosine(a, Counter()) == 0.0


def test_it_scores_candidates_by_bigram_cosine(alice_client: APIClient) -> None:
    target = add(alice_client, "deploy docker docker")
    compose = add(alice_client, "docker compose")
    # Candidates are compared on title + content + keywords: {deploy: 2, with: 1, ansible: 2}.
    ansible = add(
        alice_client, "deploy with ansible", kind="lesson", title="Deploy", keywords=["Ansible"]
    )
    add(alice_client, "kubernetes only")  # shares nothing
    add(alice_client, "I deploy docker", kind="user")  # user and soul kinds are never candidates
    add(alice_client, "deploy docker docker", kind="soul")
    results = similar(alice_client, target)
    assert [(r["id"], r["score"]) for r in results] == [
        (compose, round(2 / math.sqrt(10), 3)),  # 0.632
        (ansible, round(2 / (math.sqrt(5) * 3), 3)),  # 0.298
    ]
    assert similar(alice_client, target, k=1)[0]["id"] == compose


def test_it_compares_chinese_text_by_bigrams(alice_client: APIClient) -> None:
    target = add(alice_client, "部署服务器")  # 部署 署服 服务 务器
    slow = add(alice_client, "服务器很慢")  # 服务 务器 器很 很慢
    assert [(r["id"], r["score"]) for r in similar(alice_client, target)] == [(slow, 0.5)]


def test_it_skips_what_the_session_saw_or_created(alice_client: APIClient) -> None:
    alice_client.post(P + "sessions/", {"external_id": "s1"}, format="json")
    target = add(alice_client, "redis cache settings")
    mine = add(alice_client, "redis cache ttl", source={"session": "s1"})
    other = add(alice_client, "redis cluster")
    first = similar(alice_client, target, session_id="s1")
    assert [r["id"] for r in first] == [other]
    searched = RecallSeen.objects.filter(reason=RecallSeen.Reason.SEARCHED)
    assert [str(s.memory.public_id) for s in searched] == [other]
    assert similar(alice_client, target, session_id="s1") == []  # now seen
    assert {r["id"] for r in similar(alice_client, target)} == {mine, other}


def test_it_cuts_content_and_validates_parameters(alice_client: APIClient) -> None:
    target = add(alice_client, "docker image build")
    add(alice_client, "docker " + "x" * 300)
    assert len(similar(alice_client, target)[0]["content"]) == 200
    assert len(similar(alice_client, target, content_max=0)[0]["content"]) == 307
    url = P + f"memories/{target}/similar/"
    assert alice_client.get(url, {"k": 21}).status_code == 400
    assert alice_client.get(url, {"session_id": "nope"}).status_code == 404
    missing = P + "memories/00000000-0000-0000-0000-000000000000/similar/"
    assert alice_client.get(missing).status_code == 404


def test_other_users_memories_are_neither_targets_nor_candidates(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    target = add(alice_client, "vim keybindings everywhere")
    bobs = add(bob_client, "vim keybindings please", kind="lesson", scope="user")
    assert similar(alice_client, target) == []
    assert bob_client.get(P + f"memories/{target}/similar/").status_code == 200
    assert alice_client.get(P + f"memories/{bobs}/similar/").status_code == 404
