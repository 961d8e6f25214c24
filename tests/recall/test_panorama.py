from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rest_framework.test import APIClient

from memoryhub.memories.models import Memory
from memoryhub.recall.language import Language, relative_time
from memoryhub.recall.models import RecallSeen
from tests.recall.memories import add_at

P = "/api/v1/projects/alpha/"
PANORAMA = P + "panorama/"
T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
AS_OF = "2026-02-04T10:30:00Z"


def add(client: APIClient, content: str, kind: str, minute: int, **fields: Any) -> str:
    return add_at(client, content, kind, T0 + timedelta(minutes=minute), **fields)


def project(client: APIClient, content: str, sub: str, minute: int, **fields: Any) -> str:
    return add(client, content, "project", minute, subcategory=sub, **fields)


def mark_done(client: APIClient, memory_id: str) -> None:
    response = client.post(P + f"memories/{memory_id}/stale/", {"reason": "done"}, format="json")
    assert response.status_code == 200


def test_relative_times() -> None:
    now = datetime(2026, 2, 4, tzinfo=UTC)
    cases = {
        timedelta(seconds=30): "刚刚",
        timedelta(minutes=5): "5分钟前",
        timedelta(hours=3): "3小时前",
        timedelta(days=3): "3天前",
        timedelta(days=65): "2个月前",
        timedelta(days=800): "2年前",
        -timedelta(hours=1): "刚刚",
    }
    for age, label in cases.items():
        assert relative_time(now - age, now, Language.ZH) == label


def test_panorama_groups_by_subcategory_with_todo_done_and_open(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    ids = {
        "structure": project(alice_client, "Apps live under memoryhub/.", "structure", 10),
        "overview_new": project(alice_client, "It serves coding agents.", "overview", 20),
        "overview_old": project(alice_client, "Alpha is a memory server.", "overview", 0),
        "rule": add(alice_client, "Never force-push.", "rule", 5, importance=3),
        "other": add(alice_client, "Uncategorised project note.", "project", 1),
        "open_b": project(alice_client, "Write the docs.", "todo", 40),
        "open_a": project(alice_client, "Add the panorama.", "todo", 30),
        "fact": add(alice_client, "Facts are not in the panorama.", "fact", 2),
    }
    done = [project(alice_client, f"Done task {i}.", "todo", 100 + i) for i in range(6)]
    for memory_id in done:
        mark_done(alice_client, memory_id)
    add(bob_client, "Bob's private rule.", "rule", 3, scope="user")
    archived = project(alice_client, "Archived decision.", "decisions", 50)
    alice_client.post(P + f"memories/{archived}/archive/", {"reason": "x"}, format="json")

    response = alice_client.get(PANORAMA, {"as_of": AS_OF})
    assert response.status_code == 200, response.content
    body = response.json()
    sections = body["sections"]
    assert list(sections) == [
        "overview",
        "structure",
        "decisions",
        "quotes",
        "ops",
        "todo",
        "other",
    ]
    assert [r["id"] for r in body["rules"]] == [ids["rule"]]
    assert [r["id"] for r in sections["overview"]] == [ids["overview_old"], ids["overview_new"]]
    assert [r["id"] for r in sections["structure"]] == [ids["structure"]]
    assert sections["decisions"] == sections["quotes"] == sections["ops"] == []
    assert [r["id"] for r in sections["todo"]["open"]] == [ids["open_a"], ids["open_b"]]
    # The five most recently updated stale todos, shown oldest first.
    assert [r["id"] for r in sections["todo"]["done"]] == done[1:]
    assert [r["id"] for r in sections["other"]] == [ids["other"]]
    assert sections["overview"][0]["relative"] == "3 d ago"  # English memories
    assert not RecallSeen.objects.exists()


def test_panorama_text_renders_like_meow(alice_client: APIClient) -> None:
    rule = add(alice_client, "Never force-push.", "rule", 5, importance=3)
    overview = project(alice_client, "Alpha is a memory server.", "overview", 0)
    todo = project(alice_client, "Add the panorama.", "todo", 30)
    finished = project(alice_client, "Ship search.", "todo", 20)
    mark_done(alice_client, finished)
    # Arrange a fixed time for the status change (the service stamps the wall clock).
    Memory.objects.filter(public_id=finished).update(
        updated_at=datetime(2026, 2, 4, 8, 0, tzinfo=UTC)
    )
    # meow's own (Chinese) framework words, asked for; English memories get English ones.
    body = alice_client.get(PANORAMA, {"as_of": AS_OF}, HTTP_ACCEPT_LANGUAGE="zh-CN").json()
    b = "/api/v1/projects/alpha"
    english = alice_client.get(PANORAMA, {"as_of": AS_OF}).json()["text"]
    assert english.startswith("[Project: Alpha]\n\nDesign principles:\n\n")
    assert f"[{overview}] 2026-02-01 09:00 UTC [3 d ago]" in english
    assert "[To do]\n\nDone:\n\n" in english and "\n\nTo do list:\n\n" in english
    assert english.endswith(f"the raw sessions: GET {b}/sessions/.)")
    assert body["text"] == (
        "【项目：Alpha】\n\n"
        "设计原则：\n\n"
        f"[alpha : rule] [{rule}] 2026-02-01 09:05 UTC [3天前]\nNever force-push.\n\n"
        "【概览 overview】\n\n"
        f"[alpha : project] [{overview}] 2026-02-01 09:00 UTC [3天前]\n"
        "Alpha is a memory server.\n\n"
        "【待办 todo】\n\n"
        "已完成：\n\n"
        f"[alpha : project] [{finished}] 2026-02-04 08:00 UTC [2小时前]\nShip search.\n\n"
        "To do list：\n\n"
        f"[alpha : project] [{todo}] 2026-02-01 09:30 UTC [3天前]\nAdd the panorama.\n\n"
        f"（记忆库：MemoryHub 项目 alpha。单条记忆的全文与修改历史：GET {b}/memories/{{id}}/ 与 "
        f"{b}/memories/{{id}}/history/；原始会话记录：GET {b}/sessions/。）"
    )


def test_panorama_limits_each_group_to_the_most_recent_rows(alice_client: APIClient) -> None:
    ids = [project(alice_client, f"Decision {i}.", "decisions", i) for i in range(4)]
    body = alice_client.get(PANORAMA, {"as_of": AS_OF, "limit": "2"}).json()
    assert [r["id"] for r in body["sections"]["decisions"]] == ids[2:]
    assert (
        "[Decisions]\n\n(Older entries are not listed: find them with memory_search.)\n\n"
        in body["text"]
    )
