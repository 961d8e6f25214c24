"""The meow payload's framework words are meow-memory's own, in the language of the memories
they frame: its Chinese words (【关于你】, 【关于user】 — "user" is the layer's name in meow's
prompts/zh/labels.md) for a Chinese bank, its English ones for any other, by the rule of the
mewcode headings (at least half Chinese). The relative times memory_search shows follow the
same rule (memoryhub.recall.language)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from memoryhub.recall.language import Language, accept_language, relative_time, text_language
from tests.recall.memories import add_memory

INJECTION = "/api/v1/projects/alpha/injection/"


def meow(client: APIClient) -> str:
    response = client.get(INJECTION, {"profile": "meow"})
    assert response.status_code == 200, response.content
    return str(response.json()["text"])


def test_an_english_bank_gets_meows_english_words(alice_client: APIClient) -> None:
    add_memory(alice_client, "Prefers short answers.", "user")
    add_memory(alice_client, "Never force-push to main.", "rule", importance=3)

    text = meow(alice_client)

    assert "[About the user]\n- [" in text and "[Design principles]\n- [" in text
    assert "【" not in text and "user】" not in text  # it read 【关于user】 over English memories
    assert text.splitlines()[1] == "===== LONG-TERM MEMORY ====="
    assert "- Projects you can see: alpha\n" in text


def test_a_chinese_bank_keeps_meows_chinese_words(alice_client: APIClient) -> None:
    add_memory(alice_client, "回答要简短，先给结论。", "user")
    add_memory(alice_client, "永远不要强推 main 分支。", "rule", importance=3)
    add_memory(alice_client, "Answer plainly.", "soul")  # one English memory of three

    text = meow(alice_client)

    assert "【关于你】\n- [" in text and "【关于user】\n- [" in text and "【设计原则】\n- [" in text
    assert text.splitlines()[1] == "===== 长期记忆 ====="
    assert "- 你可以查看的项目：alpha\n" in text


def test_an_empty_bank_is_worded_in_english(alice_client: APIClient) -> None:
    assert "[Memory guide]\n- To recall details" in meow(alice_client)


@pytest.mark.parametrize(
    ("texts", "language"),
    [
        ([], Language.EN),
        (["Use ruff.", "用 ruff 格式化。"], Language.ZH),  # half: Chinese, like mewcode's
        (["Use ruff.", "Use mypy.", "用 ruff 格式化。"], Language.EN),
    ],
)
def test_the_language_of_memories(texts: list[str], language: Language) -> None:
    assert text_language(texts) == language


@pytest.mark.parametrize(
    ("age", "english", "chinese"),
    [
        (timedelta(seconds=30), "just now", "刚刚"),
        (timedelta(minutes=4), "4 min ago", "4分钟前"),
        (timedelta(hours=5), "5 h ago", "5小时前"),
        (timedelta(days=3), "3 d ago", "3天前"),
        (timedelta(days=65), "2 mo ago", "2个月前"),
        (timedelta(days=800), "2 yr ago", "2年前"),
        (-timedelta(minutes=5), "just now", "刚刚"),  # another clock a little ahead
    ],
)
def test_relative_times_in_both_languages(age: timedelta, english: str, chinese: str) -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert relative_time(now - age, now, Language.EN) == english
    assert relative_time(now - age, now, Language.ZH) == chinese


@pytest.mark.parametrize(
    ("header", "language"),
    [
        ("", None),
        ("*", None),
        ("fr-FR, de", None),
        ("zh-CN,zh;q=0.9,en;q=0.8", Language.ZH),
        ("en-US,en;q=0.9,zh-CN;q=0.8", Language.EN),
        ("fr, zh-Hans;q=0.5, en;q=0.4", Language.ZH),
        ("en;q=0.2, zh-TW;q=0.7", Language.ZH),
        ("zh;q=0, en", Language.EN),
        ("zh;q=0", None),
        ("zh;q=nan, en;q=0.1", Language.EN),
    ],
)
def test_the_language_a_request_asks_for(header: str, language: Language | None) -> None:
    assert accept_language(header) == language
