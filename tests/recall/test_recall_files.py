"""Recall files (directory memories): storage, sync, the LLM selector and the reminder text."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.core.models import AuditEvent
from memoryhub.llm.models import LlmCall
from memoryhub.recall import recall_files
from memoryhub.recall.models import RecallFile
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory
from tests.fake_llm import FakeLlm

P = "/api/v1/projects/alpha/"
FILES = P + "recall-files/"
RECALL = P + "recall/"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FRESHNESS_3_DAYS = (
    "This memory is 3 days old. Memories are point-in-time observations, not live state — "
    "claims about code behavior or file:line citations may be outdated. Verify against current "
    "code before asserting as fact."
)


def md(name: str, description: str, type_: str = "feedback", body: str = "Body.") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n"


def put(client: APIClient, scope: str, path: str, content: str, mtime: datetime = NOW) -> Any:
    response = client.put(
        f"{FILES}{scope}/{path}", {"content": content, "mtime": mtime.isoformat()}, format="json"
    )
    assert response.status_code in (200, 201), response.content
    return response.json()


def recall(client: APIClient, query: str, session: str = "s1", **extra: Any) -> dict[str, Any]:
    extra.setdefault("as_of", NOW.isoformat())
    response = client.post(RECALL, {"query": query, "session_id": session, **extra}, format="json")
    assert response.status_code == 200, response.content
    return dict(response.json())


def picked(body: dict[str, Any]) -> list[str]:
    return [r["path"] for r in body["results"] if r["type"] == "file"]


@pytest.fixture(autouse=True)
def sessions(alice_client: APIClient, bob_client: APIClient) -> None:
    for external_id in ("s1", "s2"):
        response = alice_client.post(P + "sessions/", {"external_id": external_id}, format="json")
        assert response.status_code == 201
    assert bob_client.post(P + "sessions/", {"external_id": "b1"}, format="json").status_code == 201


# --- frontmatter and manifest ----------------------------------------------------------------
def test_it_reads_name_description_and_type_from_the_frontmatter() -> None:
    parsed = recall_files.parse_frontmatter(
        '---\nname: "Testing"\ndescription: How we test: pytest, no mocks\n'
        "type: feedback\nextra: ignored\n---\nbody"
    )
    assert parsed == recall_files.Frontmatter(
        name="Testing", description="How we test: pytest, no mocks", type="feedback"
    )
    assert recall_files.parse_frontmatter(md("x", "y", "opinion")).type == ""
    assert recall_files.parse_frontmatter("---\r\nname: crlf\r\n---\r\nbody").name == "crlf"
    assert recall_files.parse_frontmatter("no frontmatter\nname: x") == recall_files.Frontmatter()
    assert recall_files.parse_frontmatter("\n---\nname: x\n---\n").name == ""  # not at the start


def test_only_the_first_30_lines_are_read() -> None:
    padding = "".join(f"k{i}: v\n" for i in range(27))  # lines 2-28
    assert recall_files.parse_frontmatter(f"---\nname: x\n{padding}---\n").name == "x"  # ends L30
    longer = f"---\nname: x\nk: v\n{padding}---\n"  # closing line is line 31
    assert recall_files.parse_frontmatter(longer).name == ""


def test_the_manifest_line_format() -> None:
    file = RecallFile(
        scope="project",
        path="notes/testing.md",
        type="feedback",
        description="How we test",
        updated_at=datetime(2026, 2, 26, 12, 0, 0, 42_999, tzinfo=UTC),
    )
    assert recall_files.manifest_line(file) == (
        "- [project-scope] [feedback] notes/testing.md (2026-02-26T12:00:00.042Z): How we test"
    )
    bare = RecallFile(scope="user", path="a.md", updated_at=NOW)
    assert recall_files.manifest_line(bare) == "- [user-scope] a.md (2026-03-01T12:00:00.000Z)"


# --- storage ---------------------------------------------------------------------------------
def test_files_are_stored_with_their_frontmatter_and_mtime(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    created = alice_client.put(
        FILES + "project/notes/testing.md", {"content": md("Testing", "How we test")}, format="json"
    )
    assert created.status_code == 201
    body = created.json()
    assert (body["scope"], body["path"], body["name"], body["type"]) == (
        "project",
        "notes/testing.md",
        "Testing",
        "feedback",
    )
    assert body["description"] == "How we test"
    mtime = NOW - timedelta(days=2)
    replaced = put(alice_client, "project", "notes/testing.md", md("Tests", "New"), mtime)
    assert replaced["name"] == "Tests"
    assert replaced["updated_at"] == "2026-02-27T12:00:00Z"
    assert bob_client.get(FILES + "project/notes/testing.md").json()["content"] == md(
        "Tests", "New"
    )
    verbs = AuditEvent.objects.filter(target_type="recall_file").values_list("verb", flat=True)
    assert list(verbs) == ["recall_file.created", "recall_file.updated"]

    put(alice_client, "user", "me.md", md("Me", "About alice", "user"))
    assert bob_client.get(FILES + "user/me.md").status_code == 404
    assert [f["path"] for f in bob_client.get(FILES).json()["results"]] == ["notes/testing.md"]
    listing = alice_client.get(FILES, {"scope": "user"}).json()["results"]
    assert [(f["scope"], f["path"]) for f in listing] == [("user", "me.md")]
    assert "content" not in listing[0]

    assert alice_client.delete(FILES + "project/notes/testing.md").status_code == 204
    assert alice_client.get(FILES + "project/notes/testing.md").status_code == 404
    assert alice_client.get(FILES + "team/me.md").status_code == 404  # unknown scope


@pytest.mark.parametrize("path", ["notes.txt", "../up.md", "a/../../b.md", "/abs.md"])
def test_it_rejects_bad_paths(alice_client: APIClient, path: str) -> None:
    response = alice_client.post(
        FILES + "sync/",
        {"scope": "project", "files": [{"path": path, "content": "x"}]},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert RecallFile.objects.count() == 0


def test_viewers_write_only_their_own_files(
    alice: User, project: Project, make_client: Any
) -> None:
    dave = UserFactory.create(username="dave")
    access = project_access(slug="alpha", actor=Actor(user=alice))
    membership_add(access=access, user=dave, role=Role.VIEWER)
    dave_client = make_client(dave)
    content = {"content": md("x", "y")}
    assert dave_client.put(FILES + "project/x.md", content, format="json").status_code == 403
    assert dave_client.put(FILES + "user/x.md", content, format="json").status_code == 201
    sync = {"scope": "project", "files": [{"path": "x.md", "content": "x"}]}
    assert dave_client.post(FILES + "sync/", sync, format="json").status_code == 403
    sync["scope"] = "user"
    assert dave_client.post(FILES + "sync/", sync, format="json").status_code == 200


def test_sync_mirrors_a_directory_all_or_nothing(alice_client: APIClient) -> None:
    put(alice_client, "project", "old.md", md("Old", "gone soon"))
    put(alice_client, "project", "keep.md", md("Keep", "same"))
    bad = {
        "scope": "project",
        "files": [{"path": "new.md", "content": "x"}, {"path": "../evil.md", "content": "x"}],
        "delete_missing": True,
    }
    response = alice_client.post(FILES + "sync/", bad, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["details"]) == ["../evil.md"]
    assert sorted(RecallFile.objects.values_list("path", flat=True)) == ["keep.md", "old.md"]

    mtime = NOW - timedelta(days=5)
    good = {
        "scope": "project",
        "files": [
            {"path": "keep.md", "content": md("Keep", "same"), "mtime": NOW.isoformat()},
            {"path": "new/one.md", "content": md("One", "first"), "mtime": mtime.isoformat()},
        ],
        "delete_missing": True,
    }
    response = alice_client.post(FILES + "sync/", good, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "created": ["new/one.md"],
        "updated": [],
        "unchanged": ["keep.md"],
        "deleted": ["old.md"],
    }
    one = RecallFile.objects.get(path="new/one.md")
    assert (one.name, one.updated_at) == ("One", mtime)
    assert AuditEvent.objects.filter(verb="recall_files.synced").count() == 1
    # Nothing changed: nothing to audit.
    assert alice_client.post(FILES + "sync/", good, format="json").json()["unchanged"] == [
        "keep.md",
        "new/one.md",
    ]
    assert AuditEvent.objects.filter(verb="recall_files.synced").count() == 1


def test_user_sync_touches_only_the_callers_directory(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    put(bob_client, "user", "bob.md", md("Bob", "bob's"))
    put(alice_client, "project", "team.md", md("Team", "shared"))
    sync = {"scope": "user", "files": [{"path": "a.md", "content": "a"}], "delete_missing": True}
    assert alice_client.post(FILES + "sync/", sync, format="json").json()["deleted"] == []
    assert RecallFile.objects.count() == 3


# --- the selector ----------------------------------------------------------------------------
@pytest.fixture
def library(alice_client: APIClient, bob_client: APIClient) -> None:
    put(
        alice_client, "project", "notes/testing.md", md("Testing", "How the team tests with pytest")
    )
    put(
        alice_client,
        "project",
        "deploy.md",
        md("Deploys", "Deploying to production", "project"),
        NOW - timedelta(days=1),
    )
    put(alice_client, "user", "editor.md", md("Editor", "Alice prefers vim", "user"))
    put(bob_client, "user", "secret.md", md("Bob", "Bob's private notes on pytest", "user"))
    put(alice_client, "project", "MEMORY.md", "- [Testing](notes/testing.md) — how we test")


def test_it_asks_the_smol_model_with_the_manifest(
    alice_client: APIClient, library: None, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, smol_model="fake-smol")
    fake_llm.reply(json.dumps({"selected_memories": ["notes/testing.md"]}))
    body = recall(alice_client, "How do we run the tests?", recent_tools=["Bash", "Edit"])
    assert picked(body) == ["notes/testing.md"]
    [request] = fake_llm.requests
    assert request.model == "fake-smol"
    system, user = request.messages
    assert system == {"role": "system", "content": recall_files.SELECTOR_SYSTEM_PROMPT}
    assert user["content"] == (
        "Query: How do we run the tests?\n\nAvailable memories:\n"
        "- [project-scope] [feedback] notes/testing.md (2026-03-01T12:00:00.000Z): "
        "How the team tests with pytest\n"
        "- [user-scope] [user] editor.md (2026-03-01T12:00:00.000Z): Alice prefers vim\n"
        "- [project-scope] [project] deploy.md (2026-02-28T12:00:00.000Z): "
        "Deploying to production\n\n"
        "Recently used tools: Bash, Edit"
    )
    [call] = LlmCall.objects.all()
    assert (call.purpose, call.role, call.outcome) == ("recall_select", "smol", "ok")


def test_it_accepts_paths_and_basenames_and_ignores_the_rest(
    alice_client: APIClient, library: None, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings)
    answer = {"selected_memories": ["testing.md", "./deploy.md", "secret.md", "nope.md", 7]}
    fake_llm.reply("Here you go:\n```json\n" + json.dumps(answer) + "\n```")
    assert picked(recall(alice_client, "tests and deploys")) == ["notes/testing.md", "deploy.md"]


@pytest.mark.parametrize(
    "answer",
    [
        "I think testing.md would help.",
        '{"selected_memories": "testing.md"}',
        '["testing.md"]',
        '{"selected": ["testing.md"]}',
    ],
)
def test_garbage_answers_select_nothing(
    alice_client: APIClient, library: None, fake_llm: FakeLlm, settings: Any, answer: str
) -> None:
    fake_llm.configure(settings)
    fake_llm.reply(answer)
    body = recall(alice_client, "tests")
    assert picked(body) == []
    assert len(fake_llm.requests) == 1  # no repair request: the budget is spent
    assert LlmCall.objects.get().outcome == "invalid_output"


def test_a_slow_selector_selects_nothing_within_the_budget(
    alice_client: APIClient, project: Project, library: None, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)
    response = alice_client.patch(P, {"settings": {"llm": {"timeout_seconds": 0.3}}}, format="json")
    assert response.status_code == 200
    fake_llm.delay(3, json.dumps({"selected_memories": ["testing.md"]}))
    body = recall(alice_client, "tests")
    # Cut off by the 0.3 s budget (the reply comes after 3 s): recorded as a timeout.
    assert body["results"] == [] and body["text"] == ""
    assert LlmCall.objects.get().outcome == "timeout"


def test_the_budget_is_shared_by_the_sdks_attempts(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, timeout=60, max_retries=1)
    response = alice_client.patch(P, {"settings": {"llm": {"timeout_seconds": 1}}}, format="json")
    assert response.status_code == 200
    project.refresh_from_db()
    fake_llm.delay(3, "late")
    fake_llm.delay(3, "late")
    files = [RecallFile(scope="project", path="a.md", updated_at=NOW)]
    assert recall_files.select(project=project, query="a", files=files) == []
    # A budget of 1 s shared by 2 attempts: 0.5 s each.
    assert "did not answer within 0.5 s (2 attempts)" in LlmCall.objects.get().error


def test_provider_errors_and_budgets_select_nothing(
    alice_client: APIClient, project: Project, library: None, fake_llm: FakeLlm, settings: Any
) -> None:
    fake_llm.configure(settings, max_retries=0)
    fake_llm.fail(500)
    assert picked(recall(alice_client, "tests")) == []
    fake_llm.configure(settings, daily_token_budget=1)
    LlmCall.objects.update(tokens_in=10)
    assert picked(recall(alice_client, "tests", session="s2")) == []
    assert list(LlmCall.objects.values_list("outcome", flat=True).order_by("id")) == [
        "error",
        "budget_exhausted",
    ]


def test_the_offline_selector_picks_by_shared_terms(
    alice_client: APIClient, bob_client: APIClient, library: None
) -> None:
    # Offline provider (the test default): name + description terms shared with the query.
    body = recall(alice_client, "Which editor does Alice use for tests?")
    # testing.md shares "test"; editor.md shares "editor" and "alic": most shared first.
    assert picked(body) == ["editor.md", "notes/testing.md"]
    assert picked(recall(alice_client, "Which editor does Alice use for tests?", "s2")) == [
        "editor.md",
        "notes/testing.md",
    ]
    assert picked(recall(bob_client, "private pytest notes", "b1")) == [
        "secret.md",
        "notes/testing.md",
    ]
    assert picked(recall(alice_client, "kubernetes", "s1")) == []  # nothing shared


def test_offline_selection_is_capped_at_five() -> None:
    files = [
        RecallFile(scope="project", path=f"f{i}.md", description=f"redis {'x' * i}", updated_at=NOW)
        for i in range(7)
    ]
    assert recall_files.offline_selection("redis", files) == [f"f{i}.md" for i in range(5)]


def test_surfaced_files_are_not_offered_again_until_compaction(
    alice_client: APIClient, library: None
) -> None:
    assert picked(recall(alice_client, "pytest tests")) == ["notes/testing.md"]
    assert picked(recall(alice_client, "pytest tests")) == []
    assert picked(recall(alice_client, "pytest tests", "s2")) == ["notes/testing.md"]
    boundary = [{"type": "compact_boundary", "content": {"summary": "…", "keep": []}}]
    assert alice_client.post(P + "sessions/s1/records/", boundary, format="json").status_code == 201
    assert picked(recall(alice_client, "pytest tests")) == ["notes/testing.md"]


def test_candidates_are_the_newest_200(
    alice_client: APIClient, fake_llm: FakeLlm, settings: Any
) -> None:
    files = [
        {
            "path": f"m{i:03d}.md",
            "content": md(f"M{i}", f"memory {i}"),
            "mtime": (NOW - timedelta(minutes=i)).isoformat(),
        }
        for i in range(201)
    ]
    sync = {"scope": "project", "files": files}
    assert alice_client.post(FILES + "sync/", sync, format="json").status_code == 200
    fake_llm.configure(settings)
    fake_llm.reply(json.dumps({"selected_memories": []}))
    recall(alice_client, "anything")
    manifest = fake_llm.requests[0].messages[1]["content"].split("Available memories:\n")[1]
    lines = manifest.split("\n")
    assert len(lines) == 200
    assert lines[0].startswith("- [project-scope] [feedback] m000.md ")
    assert lines[-1].startswith("- [project-scope] [feedback] m199.md ")


# --- the reminder ----------------------------------------------------------------------------
def test_files_older_than_a_day_carry_the_staleness_warning(alice_client: APIClient) -> None:
    content = md("Testing", "How we test pytest")
    put(alice_client, "project", "testing.md", content, NOW - timedelta(days=3, hours=1))
    body = recall(alice_client, "pytest")
    assert body["text"] == (
        f"{INJECTION_OPEN}\n<system-reminder>\n"
        "The following relevant memories from prior conversations may help:\n\n"
        "## Memory: testing.md (saved 3 days ago)\n\n"
        f"{FRESHNESS_3_DAYS}\n\n"
        f"{content}\n\n---\n\n"
        f"</system-reminder>\n{INJECTION_CLOSE}"
    )
    [result] = body["results"]
    assert result == {
        "type": "file",
        "scope": "project",
        "path": "testing.md",
        "name": "Testing",
        "description": "How we test pytest",
        "memory_type": "feedback",
        "updated_at": "2026-02-26T11:00:00Z",
        "age_days": 3,
    }


@pytest.mark.parametrize(
    ("age", "label"), [(timedelta(hours=30), "yesterday"), (timedelta(0), "today")]
)
def test_recent_files_have_no_staleness_warning(
    alice_client: APIClient, age: timedelta, label: str
) -> None:
    put(alice_client, "project", "notes.md", md("Notes", "pytest notes"), NOW - age)
    text = recall(alice_client, "pytest")["text"]
    assert f"## Memory: notes.md (saved {label})\n" in text
    assert "days old" not in text


def test_even_an_unexpected_error_selects_nothing(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(request: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(recall_files.llm, "complete", crash)
    files = [RecallFile(scope="project", path="a.md", description="a", updated_at=NOW)]
    assert recall_files.select(project=project, query="a", files=files) == []
