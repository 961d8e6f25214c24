from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from rest_framework.test import APIClient

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.recall import injection
from memoryhub.recall.models import RecallSeen
from tests.recall.memories import add_at

P = "/api/v1/projects/alpha/"
INJECTION = P + "injection/"
T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
DATE = "2026-03-01"


def add(client: APIClient, content: str, kind: str, minute: int, **fields: Any) -> str:
    return add_at(client, content, kind, T0 + timedelta(minutes=minute), **fields)


def payload(client: APIClient, **params: Any) -> dict[str, Any]:
    params.setdefault("date", DATE)
    response = client.get(INJECTION, params)
    assert response.status_code == 200, response.content
    return dict(response.json())


def text(client: APIClient, **params: Any) -> str:
    params.setdefault("date", DATE)
    response = client.get(INJECTION, {**params, "format": "text"})
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    return response.content.decode()


@pytest.fixture
def no_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(injection, "load_instructions", lambda access: "")


@pytest.fixture
def instructions(monkeypatch: pytest.MonkeyPatch) -> str:
    value = "# Alpha rules\nUse ruff.\n"
    monkeypatch.setattr(injection, "load_instructions", lambda access: value)
    return value


@pytest.fixture
def bank(alice_client: APIClient, bob_client: APIClient) -> dict[str, str]:
    """A small fixed bank: alice's own memories, project memories, and things that must never
    be injected (bob's user memory, a proposed and a stale memory)."""
    ids = {
        "soul": add(alice_client, "Answer in the user's language.", "soul", 0),
        "user": add(alice_client, "Prefers short answers.", "user", 1, importance=2),
        "feedback": add(alice_client, "Do not add emojis to commit messages.", "feedback", 2),
        "rule3": add(alice_client, "Never force-push to main.", "rule", 3, importance=3),
        "rule1": add(alice_client, "Prefer small pull requests.", "rule", 4),
        "fact": add(alice_client, "The CI runs on\nPostgreSQL 16.", "fact", 5),
        "lesson": add(alice_client, "Run migrations after switching branches.", "lesson", 6),
        "reference": add(alice_client, "API docs: https://docs.example.com/api", "reference", 7),
        "overview": add(
            alice_client, "Alpha is a team memory server.", "project", 8, subcategory="overview"
        ),
        "proposed": add(alice_client, "Deploys use Kubernetes.", "fact", 9, status="proposed"),
        "stale": add(alice_client, "The CI runs on MySQL.", "fact", 10),
        "bob": add(bob_client, "Bob prefers tabs.", "user", 11, importance=5),
    }
    response = alice_client.post(
        P + f"memories/{ids['stale']}/stale/", {"reason": "moved"}, format="json"
    )
    assert response.status_code == 200
    return ids


MEWCODE_EXPECTED = """<memoryhub-context>
<system-reminder>
As you answer the user's questions, you can use the following context:
# mewcodeMd
Codebase and user instructions are shown below. Be sure to adhere to these instructions. \
IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as \
written.

# Alpha rules
Use ruff.

# autoMemory
### User preferences
- Prefers short answers.
- Answer in the user's language.
### Feedback and corrections
- Do not add emojis to commit messages.

### Project knowledge
- Never force-push to main.
- Alpha is a team memory server.
- Run migrations after switching branches.
- The CI runs on PostgreSQL 16.
- Prefer small pull requests.
### References
- API docs: https://docs.example.com/api

# currentDate
Today's date is 2026-03-01.

      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond \
to this context unless it is highly relevant to your task.
</system-reminder>
</memoryhub-context>"""


def test_mewcode_profile_is_the_seed_system_reminder(
    alice_client: APIClient, bank: dict[str, str], instructions: str
) -> None:
    body = payload(alice_client, profile="mewcode")
    assert body["text"] == MEWCODE_EXPECTED
    assert text(alice_client, profile="mewcode") == MEWCODE_EXPECTED
    assert [s["name"] for s in body["sections"]] == ["mewcodeMd", "autoMemory", "currentDate"]
    assert body["sections"][2] == {
        "name": "currentDate",
        "text": "# currentDate\nToday's date is 2026-03-01.",
        "token_estimate": int(len("# currentDate\nToday's date is 2026-03-01.") / 3.5),
    }
    assert body["memory_ids"] == [
        bank[k]
        for k in ["user", "soul", "feedback", "rule3", "overview", "lesson", "fact", "rule1"]
    ] + [bank["reference"]]
    assert body["token_estimate"] == int(len(MEWCODE_EXPECTED) / 3.5)


def test_mewcode_omits_empty_sections_and_injects_nothing_for_an_empty_bank(
    alice_client: APIClient, no_instructions: None
) -> None:
    assert payload(alice_client, profile="mewcode") == {
        "text": "",
        "sections": [],
        "memory_ids": [],
        "token_estimate": 0,
    }
    add(alice_client, "Docs live in docs/.", "reference", 0)
    assert payload(alice_client, profile="mewcode")["text"] == (
        "<memoryhub-context>\n<system-reminder>\n"
        "As you answer the user's questions, you can use the following context:\n"
        "# autoMemory\n### References\n- Docs live in docs/.\n\n"
        "# currentDate\nToday's date is 2026-03-01.\n\n"
        "      IMPORTANT: this context may or may not be relevant to your tasks. You should not "
        "respond to this context unless it is highly relevant to your task.\n</system-reminder>\n"
        "</memoryhub-context>"
    )


def test_mewcode_date_defaults_to_today_in_the_project_time_zone(
    alice_client: APIClient, no_instructions: None
) -> None:
    add(alice_client, "Docs live in docs/.", "reference", 0)
    response = alice_client.patch(P, {"timezone": "Pacific/Kiritimati"}, format="json")
    assert response.status_code == 200, response.content
    today = datetime.now(ZoneInfo("Pacific/Kiritimati")).date().isoformat()
    body = alice_client.get(INJECTION, {"profile": "mewcode"}).json()
    assert f"Today's date is {today}." in body["text"]


OMP_GUIDANCE = """# Memory Guidance
Root: memory://root

1. Open memory://root first: it lists what this project's memory holds.
2. Then read memory://root/MEMORY.md, and memory://root/skills/<name>/SKILL.md for a skill that \
fits the task, before you start on it.
3. Memory is a set of heuristics from earlier sessions; the repository and the user are the facts.
4. When memory changes your plan, say so and cite the artifact path together with the \
repository evidence that backs it.
5. When memory disagrees with the repository or the user, the memory is stale: follow the facts \
and correct the memory so it is regenerated.
6. Memory alone never proves anything: check it before you rely on it."""


def test_mewcode_headings_follow_the_memories_language(
    alice_client: APIClient, no_instructions: None
) -> None:
    """Issue 9 (behaviour change): English memories got MewCode's Chinese headings. The
    fixture bank above is English, so MEWCODE_EXPECTED now has English headings; a mostly
    Chinese bank keeps MewCode's own."""
    add(alice_client, "回答时使用用户的语言。", "user", 0)
    add(alice_client, "提交信息不要加表情。", "feedback", 1)
    add(alice_client, "部署前先运行数据库迁移。", "fact", 2)
    add(alice_client, "API docs: https://docs.example.com/api", "reference", 3)
    body = text(alice_client, profile="mewcode")
    for heading in ("### 用户偏好", "### 纠正反馈", "### 项目知识", "### 参考资料"):
        assert heading in body
    assert "### User preferences" not in body


def test_omp_profile_is_the_memory_guidance_read_path(
    alice_client: APIClient, bank: dict[str, str]
) -> None:
    assert payload(alice_client, profile="omp")["memory_ids"] == [bank["lesson"]]
    newer = add(alice_client, "Pin the ruff  version in CI.", "lesson", 30)
    summary = "## User Profile\nalice likes short answers.\n"
    put = alice_client.put(P + "artifacts/memory_summary.md", {"content": summary}, format="json")
    assert put.status_code == 201
    body = payload(alice_client, profile="omp")
    expected = (
        f"{INJECTION_OPEN}\n{OMP_GUIDANCE}\n\n"
        "Memory summary:\n## User Profile\nalice likes short answers.\n\n"
        "Learned lessons (they may be stale—verify them before relying on them):\n"
        "- Pin the ruff version in CI.\n"
        "- Run migrations after switching branches.\n"
        f"{INJECTION_CLOSE}"
    )
    assert body["text"] == expected
    assert [s["name"] for s in body["sections"]] == ["guidance", "memory_summary", "learned"]
    assert body["memory_ids"] == [newer, bank["lesson"]]


def test_omp_caps_summary_and_lessons_at_5000_tokens(alice_client: APIClient) -> None:
    summary = "A" * 15_000 + "B" * 15_000
    alice_client.put(P + "artifacts/memory_summary.md", {"content": summary}, format="json")
    add(alice_client, "A lesson that no longer fits.", "lesson", 0)
    body = payload(alice_client, profile="omp")
    # 5,000 tokens × 4 chars: the first 60 % and the last 40 % around oh-my-pi's marker.
    cut = "A" * 12_000 + "\n\n...[truncated]...\n\n" + "B" * 8_000
    assert body["sections"][1]["text"] == "Memory summary:\n" + cut
    assert body["memory_ids"] == []  # the summary used up the shared budget
    assert "Learned lessons" not in body["text"]

    # A short summary leaves room: learnedBudget = 5000 − ceil(len(summary) / 4).
    alice_client.put(P + "artifacts/memory_summary.md", {"content": "x" * 19_960}, format="json")
    add(alice_client, "y" * 50, "lesson", 1)  # "- " + 50 chars = 13 tokens > 10
    fits = add(alice_client, "z" * 10, "lesson", 0)  # 12 chars = 3 tokens ≤ 10
    # (the older "A lesson…" line would bring the lessons to 44 chars = 11 tokens)
    body = payload(alice_client, profile="omp")
    assert body["memory_ids"] == [fits]
    # budget_tokens can only lower the cap.
    low = payload(alice_client, profile="omp", budget_tokens=100)
    assert (
        low["sections"][1]["text"]
        == "Memory summary:\n" + "x" * 240 + ("\n\n...[truncated]...\n\n") + "x" * 160
    )


def test_summary_injection_token_limit_is_a_recall_setting(alice_client: APIClient) -> None:
    """recall.summary_injection_token_limit sets the summary's cap in omp and default (issue 9:
    the pipeline's setting of that name was never read)."""
    alice_client.put(P + "artifacts/memory_summary.md", {"content": "s" * 3_000}, format="json")
    assert "s" * 3_000 in payload(alice_client, profile="omp")["text"]
    assert "s" * 3_000 in payload(alice_client, profile="default")["text"]
    response = alice_client.patch(
        P, {"settings": {"recall": {"summary_injection_token_limit": 100}}}, format="json"
    )
    assert response.status_code == 200
    cut = "s" * 240 + "\n\n...[truncated]...\n\n" + "s" * 160
    assert payload(alice_client, profile="omp")["sections"][1]["text"] == "Memory summary:\n" + cut
    assert cut in payload(alice_client, profile="default")["text"]


def test_meow_profile_is_the_first_turn_long_term_block(
    alice_client: APIClient, bank: dict[str, str], charlies_project: Any
) -> None:
    rule2 = add(alice_client, "Keep the API backwards compatible.", "rule", 20, importance=2)
    body = payload(alice_client, profile="meow")
    b = "/api/v1/projects/alpha"
    # English memories: meow-memory's English words (its prompts/en/labels.md); a Chinese
    # bank keeps its Chinese ones (tests/recall/test_meow_payload_language.py).
    expected = (
        f"{INJECTION_OPEN}\n"
        "===== LONG-TERM MEMORY =====\n"
        "[About you]\n"
        f"- [{bank['soul']}] Answer in the user's language.\n"
        "[About the user]\n"
        f"- [{bank['user']}] Prefers short answers.\n"
        "[Design principles]\n"
        f"- [{bank['rule3']}] Never force-push to main.\n"
        f"- [{rule2}] Keep the API backwards compatible.\n"
        "[Memory guide]\n"
        f"- To recall details, search by keywords with memory_search (GET {b}/memories/search/"
        f"?q=…), then read one in full with memory_read (GET {b}/memories/{{id}}/).\n"
        "- Before working on a project, call memory_project for the project at a glance "
        f"(GET {b}/panorama/).\n"
        "- Projects you can see: alpha\n"
        "===== END OF LONG-TERM MEMORY =====\n"
        f"{INJECTION_CLOSE}"
    )
    assert body["text"] == expected
    assert [s["name"] for s in body["sections"]] == ["soul", "user", "rules", "guide"]
    assert body["memory_ids"] == [bank["soul"], bank["user"], bank["rule3"], rule2]


def test_meow_guide_lists_every_project_the_caller_can_see(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    assert alice_client.post("/api/v1/projects/", {"slug": "beta"}, format="json").status_code
    body = payload(alice_client, profile="meow")
    assert "- Projects you can see: alpha, beta\n" in body["text"]
    assert "- Projects you can see: alpha\n" in payload(bob_client, profile="meow")["text"]


DEFAULT_EXPECTED = """<memoryhub-context>
Team memory from MemoryHub for project alpha. It is background from earlier sessions: when it \
disagrees with the repository or the user, they win.

# Instructions
# Alpha rules
Use ruff.

# About the user
- [user] Prefers short answers.
- [feedback] Do not add emojis to commit messages.
- [soul] Answer in the user's language.

# Design rules
- Never force-push to main.

# Memory summary (memory://root/memory_summary.md)
Prefer the summary.

# Project memories
- [project] Alpha is a team memory server.
- [reference] API docs: https://docs.example.com/api
- [lesson] Run migrations after switching branches.
- [fact] The CI runs on PostgreSQL 16.
</memoryhub-context>"""


def test_default_profile_combines_everything_in_priority_order(
    alice_client: APIClient, bank: dict[str, str], instructions: str
) -> None:
    alice_client.put(
        P + "artifacts/memory_summary.md", {"content": "Prefer the summary.\n"}, format="json"
    )
    body = payload(alice_client)
    assert body["text"] == DEFAULT_EXPECTED
    assert [s["name"] for s in body["sections"]] == [
        "instructions",
        "user",
        "rules",
        "memory_summary",
        "project",
    ]
    assert body["memory_ids"] == [
        bank[k]
        for k in ["user", "feedback", "soul", "rule3", "overview", "reference", "lesson", "fact"]
    ]


def test_default_lists_a_memory_the_summary_states_only_once(
    alice_client: APIClient, bank: dict[str, str], no_instructions: None
) -> None:
    """Issue 9: the offline summary repeats the most important memories, and the default
    payload listed them again in its own sections."""
    summary = (
        "Most important:\n- Never force-push to main. (importance 3)\n- Prefers short answers."
    )
    alice_client.put(P + "artifacts/memory_summary.md", {"content": summary}, format="json")
    body = payload(alice_client)
    assert body["text"].count("Never force-push to main.") == 1
    assert body["text"].count("Prefers short answers.") == 1
    assert body["text"].count("Alpha is a team memory server.") == 1
    assert bank["rule3"] not in body["memory_ids"] and bank["overview"] in body["memory_ids"]


def test_the_same_text_written_many_times_is_injected_once(
    alice_client: APIClient, no_instructions: None
) -> None:
    """An exploratory test: 160 identical rules from concurrent agents filled the payload."""
    ids = [
        add(alice_client, "Always run the linter before committing.", "rule", i, importance=3)
        for i in range(5)
    ]
    other = add(alice_client, "Never force-push to main.", "rule", 9, importance=3)
    for profile in ("default", "mewcode", "meow"):
        body = payload(alice_client, profile=profile)
        assert body["text"].count("Always run the linter before committing.") == 1, profile
        assert other in body["memory_ids"], profile
        assert len(set(ids) & set(body["memory_ids"])) == 1, profile


def test_default_budget_drops_lowest_priority_first(
    alice_client: APIClient, bank: dict[str, str], instructions: str
) -> None:
    alice_client.put(P + "artifacts/memory_summary.md", {"content": "S" * 700}, format="json")
    order = ["instructions", "user", "rules", "memory_summary", "project"]
    full = payload(alice_client)
    assert full["token_estimate"] < 8000
    previous_ids, previous_rank = full["memory_ids"], len(order)
    for budget in range(full["token_estimate"], 99, -7):
        body = payload(alice_client, budget_tokens=budget)
        assert body["token_estimate"] <= budget
        names = [s["name"] for s in body["sections"]]
        # What survives is always a head of the priority order, shrinking with the budget.
        assert names == order[: len(names)]
        assert len(names) <= previous_rank
        assert body["memory_ids"] == full["memory_ids"][: len(body["memory_ids"])]
        assert len(body["memory_ids"]) <= len(previous_ids)
        previous_ids, previous_rank = body["memory_ids"], len(names)
    # The project memories go first, the summary is cut before it goes, then rules and users.
    at_300 = payload(alice_client, budget_tokens=300)
    assert [s["name"] for s in at_300["sections"]] == order[:4]
    assert "...[truncated]..." in at_300["sections"][3]["text"]
    assert at_300["memory_ids"] == [bank[k] for k in ["user", "feedback", "soul", "rule3"]]


def test_every_payload_is_wrapped_in_the_injection_tag(
    alice_client: APIClient, bank: dict[str, str], instructions: str
) -> None:
    alice_client.put(P + "artifacts/memory_summary.md", {"content": "summary"}, format="json")
    for profile in ["mewcode", "omp", "meow", "default"]:
        for body in [
            payload(alice_client, profile=profile)["text"],
            text(alice_client, profile=profile),
        ]:
            assert body.startswith(INJECTION_OPEN + "\n")
            assert body.endswith("\n" + INJECTION_CLOSE)
            assert body.count(INJECTION_OPEN) == 1


def test_it_never_injects_proposed_stale_or_other_users_memories(
    alice_client: APIClient, bob_client: APIClient, bank: dict[str, str], instructions: str
) -> None:
    hidden = {bank["proposed"], bank["stale"], bank["bob"]}
    for profile in ["mewcode", "omp", "meow", "default"]:
        body = payload(alice_client, profile=profile)
        assert not hidden & set(body["memory_ids"])
        for words in ["Kubernetes", "MySQL", "tabs"]:
            assert words not in body["text"]
    bobs = payload(bob_client, profile="meow")
    assert bank["bob"] in bobs["memory_ids"]
    assert bank["user"] not in bobs["memory_ids"] and "short answers" not in bobs["text"]


def test_payload_bytes_are_stable_across_calls_and_no_op_updates(
    alice_client: APIClient, bank: dict[str, str], instructions: str
) -> None:
    for profile in ["mewcode", "omp", "meow", "default"]:
        for fmt in ["json", "text"]:
            params = {"profile": profile, "format": fmt, "date": DATE}
            first = alice_client.get(INJECTION, params)
            again = alice_client.get(INJECTION, params)
            assert first.content == again.content
            assert first["ETag"] == again["ETag"]
    before = alice_client.get(INJECTION, {"profile": "mewcode", "date": DATE})
    same = alice_client.patch(
        P + f"memories/{bank['fact']}/",
        {"content": "The CI runs on\nPostgreSQL 16."},
        format="json",
    )
    assert same.status_code == 200
    after = alice_client.get(INJECTION, {"profile": "mewcode", "date": DATE})
    assert after.content == before.content and after["ETag"] == before["ETag"]
    alice_client.patch(P + f"memories/{bank['fact']}/", {"content": "CI: PG 17."}, format="json")
    changed = alice_client.get(INJECTION, {"profile": "mewcode", "date": DATE})
    assert changed["ETag"] != before["ETag"]


def test_it_answers_304_to_a_matching_if_none_match(
    alice_client: APIClient, bank: dict[str, str], no_instructions: None
) -> None:
    session = alice_client.post(P + "sessions/", {"external_id": "s1"}, format="json")
    assert session.status_code == 201
    params = {"profile": "meow", "date": DATE, "session_id": "s1"}
    first = alice_client.get(INJECTION, params, HTTP_IF_NONE_MATCH='"something-else"')
    assert first.status_code == 200
    etag = first["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    seen = RecallSeen.objects.filter(reason=RecallSeen.Reason.INJECTED)
    assert seen.count() == len(first.json()["memory_ids"]) == 3
    seen.delete()
    cached = alice_client.get(INJECTION, params, HTTP_IF_NONE_MATCH=etag)
    assert cached.status_code == 304
    assert cached.content == b""
    assert cached["ETag"] == etag
    assert not seen.exists()  # a 304 injects nothing, so nothing is marked
    weak = alice_client.get(INJECTION, params, HTTP_IF_NONE_MATCH=f'"x", W/{etag}')
    assert weak.status_code == 304
    text_etag = alice_client.get(INJECTION, {**params, "format": "text"})["ETag"]
    assert text_etag != etag


def test_it_marks_injected_memories_for_the_session(
    alice_client: APIClient, bank: dict[str, str], no_instructions: None
) -> None:
    assert alice_client.get(INJECTION, {"session_id": "nope"}).status_code == 404
    alice_client.post(P + "sessions/", {"external_id": "s1"}, format="json")
    body = payload(alice_client, profile="default", session_id="s1")
    marked = RecallSeen.objects.filter(reason=RecallSeen.Reason.INJECTED).values_list(
        "memory__public_id", flat=True
    )
    assert {str(m) for m in marked} == set(body["memory_ids"])


def test_it_validates_parameters(alice_client: APIClient) -> None:
    cases: list[dict[str, str | int]] = [
        {"profile": "vim"},
        {"format": "xml"},
        {"budget_tokens": 5},
        {"date": "x"},
    ]
    for params in cases:
        response = alice_client.get(INJECTION, params)
        assert response.status_code == 400, params
        assert response.json()["error"]["code"] == "validation_error"


def test_an_unchanged_bank_answers_from_the_cache_and_every_change_rebuilds(
    alice_client: APIClient, bank: dict[str, str]
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    params = {"profile": "default", "date": DATE}
    first = alice_client.get(INJECTION, params)
    with CaptureQueriesContext(connection) as cached:
        again = alice_client.get(INJECTION, params)
    assert again.content == first.content
    # Nothing of the payload is read again: no memory, instruction file or artifact rows.
    assert not [q for q in cached.captured_queries if "memories_memory" in q["sql"]]
    assert not [q for q in cached.captured_queries if '"content"' in q["sql"]]

    def changed_after(change: Any) -> bool:
        before = alice_client.get(INJECTION, params)
        done = change()
        assert not hasattr(done, "status_code") or done.status_code < 300, done.content
        return alice_client.get(INJECTION, params)["ETag"] != before["ETag"]

    assert changed_after(lambda: add(alice_client, "Deploys go through ArgoCD.", "fact", 30))
    assert changed_after(
        lambda: alice_client.put(
            P + "instructions/files/MEWCODE.md", {"content": "Use uv."}, format="json"
        )
    )
    assert changed_after(
        lambda: alice_client.put(
            P + "artifacts/memory_summary.md", {"content": "The summary."}, format="json"
        )
    )
    assert changed_after(
        lambda: alice_client.patch(
            P + f"memories/{bank['fact']}/", {"content": "CI: PG 18."}, format="json"
        )
    )
