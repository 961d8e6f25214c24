"""The offline extractor: each rule in both languages, what must never be extracted, and
precision/recall on the dev corpus (tests/pipeline/corpus/, scored by bench/extractor_quality.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories.kinds import DEFAULT_SCOPE, Kind, Subcategory
from memoryhub.memories.text import tokenize
from memoryhub.pipeline.extractor import (
    ExtractedMemory,
    SourceRecord,
    auto_keywords,
    extract,
    offline_stage1,
    source_records,
)
from memoryhub.pipeline.prompts import validate_stage1_output, validate_typed

ROOT = Path(__file__).resolve().parents[2]


def _load_bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "extractor_quality", ROOT / "bench" / "extractor_quality.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["extractor_quality"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


# --- building sessions ----------------------------------------------------------------------


class Session:
    """Records in MewCode's wire shape, built turn by turn."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._calls = 0

    def user(self, text: str) -> Session:
        self.rows.append({"type": "user", "content": text})
        return self

    def say(self, text: str) -> Session:
        self.rows.append({"type": "assistant", "content": text})
        return self

    def tool(self, name: str, inp: dict[str, Any], result: str, *, error: bool = False) -> Session:
        self._calls += 1
        call = f"call_{self._calls}"
        self.rows.append(
            {
                "type": "assistant",
                "content": [{"type": "tool_use", "id": call, "name": name, "input": inp}],
            }
        )
        self.rows.append(
            {"type": "tool_result", "content": result, "tool_use_id": call, "is_error": error}
        )
        return self

    def bash(self, command: str, result: str = "", *, error: bool = False) -> Session:
        return self.tool("Bash", {"command": command}, result, error=error)

    def records(self) -> list[SourceRecord]:
        return source_records(self.rows)

    def extract(self) -> list[ExtractedMemory]:
        return extract(self.records())


def one(memories: list[ExtractedMemory], **expected: Any) -> ExtractedMemory:
    assert len(memories) == 1, [m.content for m in memories]
    memory = memories[0]
    for key, value in expected.items():
        assert getattr(memory, key) == value, (key, memory)
    return memory


def after_task(*texts: str) -> list[ExtractedMemory]:
    """Memories of user messages that follow a first task message and an assistant reply."""
    session = Session().user("Fix the failing build.").say("Looking into it.")
    for text in texts:
        session.user(text).say("OK.")
    return session.extract()


# --- preferences ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "importance"),
    [
        ("I prefer f-strings over .format() everywhere.", 2),
        ("I'd rather you keep functions under 40 lines.", 2),
        ("I usually run the full matrix with tox before pushing.", 2),
        ("I always write commit messages in English.", 3),
        ("我习惯变量命名用 snake_case。", 2),
        ("我更喜欢用原生 SQL 写复杂报表。", 2),
    ],
)
def test_preference(text: str, importance: int) -> None:
    memory = one(after_task(text), kind="user", rule="preference", importance=importance)
    assert memory.record_start == memory.record_end == 2


@pytest.mark.parametrize(
    "text",
    [
        "I like this approach.",
        "I prefer the second option.",
        "我喜欢这个写法。",
        "以后都这样写。",
        "Do you prefer tabs?",
        "Maybe we should always use tabs.",
        "I think I prefer spaces.",
    ],
)
def test_no_preference_from_praise_questions_or_hedges(text: str) -> None:
    assert after_task(text) == []


def test_preference_about_the_repo_is_a_rule_and_about_the_assistant_is_feedback() -> None:
    one(after_task("Going forward, use pathlib instead of os.path in this repo."), kind="rule")
    one(after_task("以后改生产配置之前一定要先问我。"), kind="feedback")


# --- scope: what a statement is about ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Always use pnpm, never npm.",
        "Never npm.",
        "Always open a pull request instead of pushing to main.",
        "Please always add type hints to new functions.",
        "From now on, write commit messages in English.",
        "Whenever you touch a component, update its Storybook story as well.",
        "Always use feature flags for risky changes.",  # an exploratory test's miss
        "以后写测试都用 pytest 的 parametrize。",
        "提交代码一律走 pull request。",
    ],
)
def test_team_conventions_are_project_scope(text: str) -> None:
    memory = one(after_task(text), kind="rule")
    assert DEFAULT_SCOPE[memory.kind] == "project"


@pytest.mark.parametrize(
    "text",
    [
        "I prefer pnpm over npm for my side projects.",
        "I always write commit messages in English.",
        "I hate default exports.",
        "我喜欢用 vim 写代码。",
        "我习惯先写测试再写实现。",
    ],
)
def test_a_persons_own_taste_is_user_scope(text: str) -> None:
    memory = one(after_task(text), kind="user")
    assert DEFAULT_SCOPE[memory.kind] == "user"


def test_a_correction_about_the_project_is_project_scope() -> None:
    session = (
        Session()
        .user("Schedule the digest.")
        .say("I'll schedule it at 06:00 UTC.")
        .user("No — schedules are in Europe/Madrid time, not UTC.")
        .say("Fixed.")
        .user("No, don't explain every step in your replies.")
    )
    fact, feedback = session.extract()
    assert (fact.kind, fact.rule, fact.subcategory) == ("project", "correction", "ops")
    assert "Europe/Madrid" in fact.content
    assert feedback.kind == "feedback"  # about how the assistant works with the speaker


# --- conventions stated without a trigger word ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "needles"),
    [
        (
            "We always use Postgres 16 for local development, never SQLite.",
            "project",
            ("Postgres 16", "never SQLite"),
        ),
        ("Indent with tabs, never spaces, in the Makefile.", "rule", ("tabs", "Makefile")),
        ("Store prices in integer cents, never floats.", "rule", ("integer cents", "floats")),
        ("Prices are integer cents, never floats.", "rule", ("integer cents",)),
        ("Don't cat .env files.", "rule", (".env",)),
        ("Column names in snake_case, not camelCase.", "rule", ("snake_case",)),
        ("Named exports only.", "rule", ("Named exports",)),
        ("Schedules run in Europe/Madrid time, not UTC.", "project", ("Europe/Madrid",)),
        ("本地开发一律用 Postgres 16，不用 SQLite。", "rule", ("Postgres 16", "SQLite")),
        ("Makefile 里缩进用 tab，不用空格。", "rule", ("Makefile", "tab")),
        ("价格按整数分存，不用浮点数。", "rule", ("整数分",)),
        ("别 cat .env 文件。", "rule", (".env",)),
        ("输出的 JSON key 一律用 camelCase，跟前端保持一致。", "rule", ("camelCase",)),
    ],
)
def test_conventions_without_trigger_words(text: str, kind: str, needles: tuple[str, ...]) -> None:
    memory = one(after_task(text), kind=kind)
    for needle in needles:
        assert needle in memory.content


@pytest.mark.parametrize(
    "text",
    [
        "Fix it with a loop, not recursion.",
        "The bug is in views.py, not models.py.",
        "It failed on staging, not locally.",
        "Add a retry here, not in the client.",
        "Use tabs for now, not spaces.",
        "帮我把超时改成 30 秒，不是 60 秒。",
        "这次先用 SQLite，不用 Postgres。",
        "Thanks, not needed.",
    ],
)
def test_no_convention_from_task_requests_or_one_off_remarks(text: str) -> None:
    assert after_task(text) == []


# --- prohibitions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Never use datetime.now() in the reports module.", "rule"),
        ("Do not use float for money anywhere in this codebase.", "rule"),
        ("Also, never use `any` in our TypeScript code.", "rule"),
        ("Never run git push without asking me first.", "feedback"),
        ("Please don't apologize all the time.", "feedback"),
        ("Stop summarizing what you just did at the end of every reply.", "feedback"),
        ("禁止在 master 分支上直接改 yaml。", "rule"),
        ("不要引入 gomega。", "rule"),
        ("以后不要擅自帮我提交代码。", "feedback"),
    ],
)
def test_prohibition(text: str, kind: str) -> None:
    one(after_task(text), kind=kind, rule="prohibition", importance=3)


@pytest.mark.parametrize(
    "text",
    [
        "Don't run the e2e suite yet, it takes forever.",
        "Don't touch the tests for now.",
        "ok thanks, never mind then.",
        "Don't forget to update the changelog.",
        "先不要删，下个迭代再说。",
        "不要急，慢慢来。",
        "要不要把 requests 也删掉？",
    ],
)
def test_no_prohibition_when_transient_or_not_one(text: str) -> None:
    assert after_task(text) == []


def test_a_pronoun_object_is_no_prohibition_but_where_a_thing_lives_is_a_fact() -> None:
    # (a bare "is in the vault" sits at the statement model's threshold since the set-5 refit;
    # the place named makes it a location the model is sure of)
    memory = one(after_task("The password is in Vault under secret/ci, don't commit it."))
    assert (memory.kind, memory.rule) == ("project", "statement")
    assert memory.content == "The password is in Vault under secret/ci."


# --- corrections ----------------------------------------------------------------------------------


def test_correction_english() -> None:
    session = (
        Session()
        .user("Handle the empty cart.")
        .say("I'll redirect to /shop when the cart is empty.")
        .user("No, that's wrong — an empty cart should render EmptyCart, not redirect.")
    )
    # about the team's code, so a rule (project scope), not the speaker's feedback
    memory = one(session.extract(), kind="rule", rule="correction", importance=2)
    assert memory.content.startswith("An empty cart should render EmptyCart")
    assert (memory.record_start, memory.record_end) == (1, 2)  # the corrected turn → the user


def test_correction_chinese_and_emphatic() -> None:
    session = (
        Session()
        .user("给订单列表加筛选。")
        .say("我在 data 里加一个 status 字段。")
        .user("不对，我们项目统一用 Composition API，不是 Options API。")
        .say("好的。")
        .user("错了，我又说一遍：状态枚举在 src/constants/order.ts 里，不是自己定义。")
    )
    first, second = session.extract()
    assert (first.kind, first.rule, first.importance) == ("project", "correction", 2)
    assert first.content.startswith("我们项目统一用 Composition API")
    assert (second.kind, second.importance) == ("project", 3)  # facts of the project


def test_no_correction_for_a_plain_answer_to_a_question() -> None:
    session = (
        Session()
        .user("Rename get_user_by_mail.")
        .say("Done. Should I remove the old name entirely?")
        .user("No, leave the old name as a deprecated alias for one release.")
    )
    assert session.extract() == []


def test_no_correction_in_the_first_message_or_a_transient_reply() -> None:
    # Nothing to correct yet: never feedback. (The session's opening sentence is the task, so
    # the statement model leaves it alone; a second sentence is judged as usual.)
    first = Session().user("No, the config is in settings/base.py.").extract()
    assert first == []
    second = Session().user("Fix the import. No, the config is in settings/base.py.").extract()
    assert [(m.kind, m.rule) for m in second] == [("project", "statement")]
    session = Session().user("Add a flag.").say("Added --json.").user("No, just the README.")
    assert session.extract() == []


# --- facts, references, to-dos, profile, remember -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "subcategory", "needle"),
    [
        ("We use Postgres 16 for everything.", "structure", "Postgres 16"),
        ("We deploy to Fly.io on every merge.", "ops", "Fly.io"),
        ("Our CI runs on GitHub Actions.", "ops", "GitHub Actions"),
        ("We decided to keep serde pinned in the workspace manifest.", "decisions", "serde"),
        ("The design tokens live in src/theme/tokens.ts.", "structure", "tokens.ts"),
        ("我们项目使用 uv 作为包管理器。", "structure", "uv"),
        ("我们的服务都部署在阿里云 ACK 上。", "ops", "ACK"),
        ("帮我改一下副本数，我们决定统一用 Helm 发布。", "decisions", "Helm"),
    ],
)
def test_fact(text: str, subcategory: str, needle: str) -> None:
    memory = one(after_task(text), kind="project", rule="fact", subcategory=subcategory)
    assert needle in memory.content
    assert "帮我" not in memory.content  # only the clause that states the fact


@pytest.mark.parametrize(
    "text",
    [
        "Do we use django-filter anywhere?",
        "If we use Redis here, the tests need a server.",
        "I think we use Celery for that.",
        "Our tests are failing again.",
        "我们用这个方法试试。",
        "The bug is in src/app/views.py.",
    ],
)
def test_no_fact(text: str) -> None:
    assert after_task(text) == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("FYI the on-call runbook is at https://wiki.acme.dev/runbooks/orders", "wiki.acme.dev"),
        ("Our API conventions are documented in docs/api-guidelines.md.", "docs/api-guidelines.md"),
        ("Also see the Idempotency section of the README.", "README"),
        ("部署流程见 docs/deploy.md 的“灰度发布”一节。", "docs/deploy.md"),
        ("接口文档在 https://apidocs.shop.cn/orders 。", "apidocs.shop.cn"),
    ],
)
def test_reference(text: str, needle: str) -> None:
    memory = one(after_task(text), kind="reference", rule="reference")
    assert needle in memory.content
    assert needle in memory.title


@pytest.mark.parametrize(
    "text",
    [
        "It returned a 500 at http://localhost:8000/webhooks.",
        "Check https://github.com/acme/payments/pull/412, my earlier attempt.",
        "Can you read https://docs.python.org/3/library/re.html?",
    ],
)
def test_no_reference(text: str) -> None:
    assert after_task(text) == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Later we need to add XLSX export too.", "XLSX"),
        ("TODO: stream rows instead of building the file in memory.", "stream rows"),
        ("At some point we should drop Python 3.10 support.", "Python 3.10"),
        ("之后要把旧的图形验证码接口下线。", "图形验证码"),
        ("回头再补一下埋点。", "埋点"),
    ],
)
def test_todo(text: str, needle: str) -> None:
    memory = one(after_task(text), kind="project", rule="todo", subcategory="todo")
    assert memory.content.startswith("TODO: ")
    assert needle in memory.content
    assert not memory.content.startswith("TODO: TODO")


def test_no_todo_for_ideas_and_vague_deferrals() -> None:
    assert after_task("We'll probably want a JSON export eventually, just an idea.") == []
    assert after_task("下个迭代再说。") == []


def test_profile_and_remember() -> None:
    one(after_task("I'm a backend engineer on the payments team."), kind="user", rule="profile")
    one(after_task("我是做支付的后端开发工程师。"), kind="user", rule="profile")
    memory = one(after_task("记住：线上 Redis 开了 ACL，应用账号是 app。"), rule="remember")
    assert (memory.kind, memory.subcategory, memory.importance) == ("project", "ops", 3)
    inner = one(after_task("Remember that we use pnpm, not npm."), kind="project")
    assert inner.importance == 3  # stressed by the user


# --- commands and lessons -------------------------------------------------------------------------


def test_successful_build_and_test_commands_become_ops() -> None:
    session = (
        Session()
        .user("Make the tests pass.")
        .bash("ls src", "app.py")
        .bash("cat setup.cfg", "[flake8]")
        .bash("git status", "clean")
        .bash("uv run pytest tests/test_app.py -q", "3 passed")
        .bash("uv run pytest -q", "30 passed")
        .bash("ruff check .", "All checks passed!")
        .bash("npm run build", "built in 2s", error=True)
        .bash("pip install freezegun", "Successfully installed freezegun")
        .bash("pip install -r requirements-dev.txt", "Successfully installed")
        .bash("cd web && pnpm lint", "")
    )
    memories = session.extract()
    assert [m.content for m in memories] == [
        "Run tests with `uv run pytest -q`.",  # the shortest of the family
        "Lint with `ruff check .`.",
        "Install dependencies with `pip install -r requirements-dev.txt`.",
        "Lint with `cd web && pnpm lint`.",
    ]
    assert all(m.kind == "project" and m.subcategory == "ops" for m in memories)
    assert all(m.rule == "command" and m.importance == 1 for m in memories)
    assert (memories[0].record_start, memories[0].record_end) == (9, 10)


def test_chained_commands_that_do_different_things_are_never_joined() -> None:
    session = (
        Session()
        .user("Lint and ship it.")
        .bash("pnpm lint && pnpm run deploy:staging", "✓ no lint errors\ndeployed to staging")
        .bash("cd api && uv sync && uv run pytest -q; git status", "12 passed")
    )
    contents = [m.content for m in session.extract()]
    assert contents == [
        "Lint with `pnpm lint`.",
        "Deploy with `pnpm run deploy:staging`.",
        "Install dependencies with `cd api && uv sync`.",
        "Run tests with `cd api && uv run pytest -q`.",
    ]


def test_output_that_reports_failure_is_not_success() -> None:
    session = Session().user("Run it.").bash("pytest", "E   AssertionError\n1 failed, 2 passed")
    assert session.extract() == []


def test_environment_error_then_fix_is_a_lesson() -> None:
    session = (
        Session()
        .user("Run the report tests.")
        .bash(
            "pytest tests/test_reports.py",
            "E   OperationalError: connection to server failed: Connection refused",
            error=True,
        )
        .say("Postgres isn't running; the tests need the db service. Starting it.")
        .bash("docker compose up -d db", "Container db-1  Started")
        .bash("pytest tests/test_reports.py", "12 passed")
    )
    lesson = next(m for m in session.extract() if m.kind == "lesson")
    assert lesson.rule == "error_fix"
    assert "Connection refused" in lesson.content
    assert "Postgres isn't running" in lesson.content
    assert "Ran `docker compose up -d db`" in lesson.content
    assert (lesson.record_start, lesson.record_end) == (1, 7)


def test_lesson_across_command_variants_and_in_chinese() -> None:
    session = (
        Session()
        .user("装依赖")
        .bash("npm install", 'npm ERR! Unsupported URL Type "workspace:"', error=True)
        .say("这是 pnpm workspace，npm 装不了，改用 pnpm。")
        .bash("pnpm install", "Done in 6.2s")
    )
    lesson = next(m for m in session.extract() if m.kind == "lesson")
    assert "`npm install` failed" in lesson.content
    assert "改用 pnpm" in lesson.content
    assert "`pnpm install` succeeded" in lesson.content


def test_no_lesson_for_a_code_failure_or_without_an_explanation() -> None:
    code_bug = (
        Session()
        .user("Fix the slug.")
        .bash("pytest -q", "E   AssertionError: assert '' == 'x'\n1 failed", error=True)
        .say("save() doesn't set the slug yet; fixing.")
        .bash("pytest -q", "5 passed")
    )
    assert [m.kind for m in code_bug.extract()] == ["project"]
    silent = (
        Session()
        .user("Run the tests.")
        .bash("pytest -q", "ModuleNotFoundError: No module named 'x'", error=True)
        .bash("pytest -q", "5 passed")
    )
    assert [m.kind for m in silent.extract()] == ["project"]


def test_a_failure_fixed_without_editing_a_file_is_an_environment_lesson() -> None:
    # No environment words in the output, but the same command worked again once a variable
    # was exported (no file edited in between): the environment was the problem.
    session = (
        Session()
        .user("The digest stopped.")
        .bash("celery -A digest inspect scheduled", "Error: No nodes replied.", error=True)
        .say("No workers replied: the broker points at localhost, the workers use redis.internal.")
        .bash("export BROKER=redis://redis.internal/2 && celery -A digest inspect scheduled", "OK")
    )
    lesson = one([m for m in session.extract() if m.kind == "lesson"], rule="error_fix")
    assert "redis.internal" in lesson.content and "No nodes replied" in lesson.content
    # The same failure fixed by editing a file is the code's problem, not a lesson.
    edited = (
        Session()
        .user("The digest stopped.")
        .bash("celery -A digest inspect scheduled", "Error: No nodes replied.", error=True)
        .say("The app name is wrong in celery.py; fixing.")
        .tool("EditFile", {"path": "celery.py", "old": "dgst", "new": "digest"}, "Edited celery.py")
        .bash("celery -A digest inspect scheduled", "OK")
    )
    assert [m for m in edited.extract() if m.kind == "lesson"] == []


# --- what must never become a memory --------------------------------------------------------------


def test_assistant_claims_are_never_memories() -> None:
    session = (
        Session()
        .user("Add caching.")
        .say("We use Redis for caching. I prefer tabs. Never use ORMs. See docs/cache.md.")
    )
    assert session.extract() == []


def test_injected_blocks_are_skipped() -> None:
    block = (
        f"{INJECTION_OPEN}\n<system-reminder>\n- The team prefers tabs.\n- We use MySQL 5.7."
        f"\n</system-reminder>\n{INJECTION_CLOSE}\n\n"
    )
    session = (
        Session()
        .user(block + "Add pagination to /users.")
        .say("Done.")
        .user(block + "I prefer small PRs, so split this.")
        .say("OK.")
        .user(f"{INJECTION_OPEN}\n- 我们用 Oracle 数据库\n- 以后都用 tab 缩进")  # never closed
    )
    memory = one(session.extract(), kind="user")
    assert memory.content == "I prefer small PRs, so split this."


def test_flagged_record_without_a_visible_marker_is_skipped_whole() -> None:
    record = SourceRecord(
        index=0, type="user", content="We use Postgres 16.", contains_injection=True
    )
    assert extract([record]) == []
    clean = SourceRecord(index=0, type="user", content="We use Postgres 16.")
    assert len(extract([clean])) == 1


def test_system_reminders_code_blocks_and_quotes_are_not_user_statements() -> None:
    text = (
        "<system-reminder>We use MySQL.</system-reminder>\n"
        "```\n# never use print\nwe use it here\n```\n"
        "> I prefer tabs\n"
        "Please look at the stack trace."
    )
    assert after_task(text) == []


def test_secrets_are_redacted_and_secret_sentences_dropped() -> None:
    token = "gh" + "p_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    session = (
        Session()
        .user(f"We use the token {token} for the registry.")
        .say("OK.")
        .bash(
            f"DEPLOY_TOKEN={token} ./scripts/deploy.sh staging",
            "error: HTTP 401 Unauthorized",
            error=True,
        )
        .say("The token lacks the write:packages scope.")
        .bash("./scripts/deploy.sh staging", "rolled out")
        .bash("redis-cli -h cache -a 'S3cr3t#pw!' ping", "(error) WRONGPASS", error=True)
        .say("The instance uses ACL; pass --user app.")
        .bash("redis-cli -h cache --user app -a 'S3cr3t#pw!' ping", "PONG")
    )
    memories = session.extract()
    dumped = json.dumps([asdict(m) for m in memories], ensure_ascii=False)
    assert token not in dumped and token[4:12] not in dumped
    assert "S3cr3t" not in dumped
    assert "[REDACTED]" in dumped
    assert "We use the token" not in dumped  # a sentence about a secret is dropped
    assert {m.kind for m in memories} == {"lesson", "project"}


# --- boundaries, dedupe, keywords, determinism ----------------------------------------------------


def test_compact_boundary_tail_is_read_once_with_the_boundary_index() -> None:
    rows: list[dict[str, Any]] = [
        {"type": "user", "content": "Run the tests."},
        {"type": "user", "content": "I prefer pytest -x locally."},
        {
            "type": "compact_boundary",
            "content": {
                "summary": "We use Postgres. I prefer tabs.",  # an LLM's summary: ignored
                "keep": [
                    {"type": "user", "content": "I prefer pytest -x locally."},  # a copy
                    {"type": "user", "content": "We use Celery for background jobs."},  # new
                ],
            },
        },
    ]
    memories = extract(source_records(rows))
    assert [(m.kind, m.record_start) for m in memories] == [("user", 1), ("project", 2)]


def test_near_duplicates_merge_keeping_the_first_and_the_highest_importance() -> None:
    memories = after_task(
        "I prefer small, focused commits.",
        "I prefer small focused commits!",
        "Remember: I prefer small focused commits.",
    )
    memory = one(memories, kind="user")
    assert memory.content == "I prefer small, focused commits."
    assert memory.record_start == 2  # the first one stays
    assert memory.importance == 3  # "remember" raised it
    different = after_task("I prefer small commits.", "I prefer squash merges on main.")
    assert len(different) == 2


def test_keywords() -> None:
    text = (
        "The nightly `export_ledger` job deploys to staging via GitHub Actions and writes "
        "parquet files to s3://acme-ledger/exports before the warehouse loader runs."
    )
    keywords = auto_keywords(text)
    assert 8 <= len(keywords) <= 13
    assert len(set(keywords)) == len(keywords)
    assert keywords[0] in ("export", "ledger")  # identifiers first
    assert "deploys" in keywords  # the surface word, not the stem "deploy"
    assert not {"the", "to", "and", "before"} & set(keywords)
    for keyword in keywords:
        assert tokenize(keyword)  # every keyword is a bank term
    assert auto_keywords("Use it.", fallback="user") == ("user",)
    chinese = auto_keywords("我们的数据库是 PostgreSQL 15，报表查询走只读副本。")
    assert "postgresql" in chinese and "报表" in chinese and "只读" in chinese
    assert "们的" not in chinese  # bigrams of function characters rank last or drop


def test_every_memory_has_keywords_title_and_a_range() -> None:
    for session in bench.load_corpus():
        first, last = session.records[0].index, session.records[-1].index
        for memory in extract(session.records):
            assert len(memory.keywords) in range(8, 14), memory  # as the README promises
            assert len({k.casefold() for k in memory.keywords}) == len(memory.keywords)
            assert memory.title and len(memory.title) <= 61
            assert first <= memory.record_start <= memory.record_end <= last
            assert memory.importance in range(1, 5)
            assert memory.kind in Kind.values
            assert (memory.kind == "project") == bool(memory.subcategory)
            if memory.subcategory:
                assert memory.subcategory in Subcategory.values


def test_extraction_is_deterministic() -> None:
    for session in bench.load_corpus():
        assert extract(session.records) == extract(list(session.records))


def test_offline_answers_pass_the_llm_validators() -> None:
    """The pipeline sends the offline memories through validate_typed and the offline stage-1
    object through validate_stage1_output, like an LLM's answer."""
    for session in bench.load_corpus():
        memories = extract(session.records)
        answer = {
            "memories": [{k: v for k, v in asdict(m).items() if k != "rule"} for m in memories]
        }
        record_range = (session.records[0].index, session.records[-1].index)
        validated = validate_typed(json.loads(json.dumps(answer)), record_range=record_range)
        assert [(m.kind, m.content) for m in validated] == [(m.kind, m.content) for m in memories]
        rollout = offline_stage1(session.records, memories)
        assert validate_stage1_output(json.loads(json.dumps(rollout))) == rollout


# --- offline stage-1 output and memories.md -------------------------------------------------------


def test_offline_stage1_shape() -> None:
    session = (
        Session()
        .user("Add a health check endpoint.")
        .bash("go test -race ./...", "ok")
        .user("Our CI runs on GitHub Actions. I prefer table-driven tests.")
    )
    records = session.records()
    rollout = offline_stage1(records, extract(records))
    assert set(rollout) == {"rollout_summary", "rollout_slug", "raw_memory"}
    assert rollout["rollout_slug"] == "add_health_check_endpoint"
    raw = rollout["raw_memory"]
    assert raw.startswith("# Add a health check endpoint\n")
    for heading in (
        "Memory context:",
        "User preferences:\n- I prefer table-driven tests.",
        "## Task: Add a health check endpoint",
        "Outcome: success",
        "Key steps:\n- Run tests with `go test -race ./...`.",
        "Things that did not work / things that can be improved:\n- none",
        "Reusable knowledge:\n- Our CI runs on GitHub Actions.",
        "Pointers and references (annotate why each item matters):\n- none",
    ):
        assert heading in raw
    assert "Add a health check endpoint" in rollout["rollout_summary"]


def test_offline_stage1_is_empty_without_memories() -> None:
    records = Session().user("What's the difference between rebase and merge?").records()
    assert offline_stage1(records, []) == {
        "rollout_summary": "",
        "rollout_slug": None,
        "raw_memory": "",
    }


# --- the dev corpus -------------------------------------------------------------------------------

# Measured when the floors were set (bench/extractor_quality.py, issue 14 round 4, 142 sessions,
# 919 planted): overall 89.8 % / 85.6 %; the in-house splits dev 100.0 % / 87.1 % (round 4 stopped
# keeping a toolchain's default command such as `cargo build`, which the first writer planted),
# "holdout" (ho31-ho38) 100.0 % / 91.7 %; the five independent writers' sessions, tuned on (sets 5,
# 6 and 7, dev-set-8, dev-set-10), together about 80 % / 78 %. Fresh batches of a new writer scored
# before tuning came out at 38-49 % precision (dev-set-10), so these floors guard against
# regressions, not generalisation. The floors leave a margin of a few points.
PRECISION_FLOOR = 0.87
RECALL_FLOOR = 0.83
DEV_PRECISION_FLOOR = 0.95
DEV_RECALL_FLOOR = 0.85
HOLDOUT_PRECISION_FLOOR = 0.94
HOLDOUT_RECALL_FLOOR = 0.85
INDEPENDENT_PRECISION_FLOOR = 0.76
INDEPENDENT_RECALL_FLOOR = 0.75


@pytest.fixture(scope="module")
def corpus() -> list[Any]:
    return bench.load_corpus()


def test_corpus_is_well_formed(corpus: list[Any]) -> None:
    assert len(corpus) >= 20
    assert sum(1 for s in corpus if s.language in ("zh", "mixed")) >= 5
    for session in corpus:
        assert session.planted or session.distractors, session.name
        for planted in session.planted:
            assert planted["kind"] in Kind.values, session.name
            assert planted["scope"] == DEFAULT_SCOPE[planted["kind"]], session.name
            for kind in planted.get("also_kinds", ()):  # an alternative kind of the same scope
                assert DEFAULT_SCOPE[kind] == planted["scope"], session.name
            assert planted["must_contain"], session.name
            if planted.get("subcategory"):
                assert planted["subcategory"] in Subcategory.values
        for distractor in session.distractors:
            assert distractor["must_not_contain"] and distractor["why"], session.name


def test_corpus_precision_and_recall(corpus: list[Any]) -> None:
    report = bench.score(corpus)
    overall = report.overall
    assert overall.precision >= PRECISION_FLOOR, bench.render(report, details=True)
    assert overall.recall >= RECALL_FLOOR, bench.render(report, details=True)
    dev = report.by_split["dev"]
    assert dev.precision >= DEV_PRECISION_FLOOR, bench.render(report, details=True)
    assert dev.recall >= DEV_RECALL_FLOOR, bench.render(report, details=True)
    holdout = report.by_split["holdout"]
    assert holdout.precision >= HOLDOUT_PRECISION_FLOOR, bench.render(report, details=True)
    assert holdout.recall >= HOLDOUT_RECALL_FLOOR, bench.render(report, details=True)
    independent = [t for name, t in report.by_split.items() if "independent writer" in name]
    assert len(independent) == 5
    tp = sum(t.tp for t in independent)
    precision = tp / sum(t.predicted for t in independent)
    recall = sum(t.tp_planted for t in independent) / sum(t.planted for t in independent)
    assert precision >= INDEPENDENT_PRECISION_FLOOR, bench.render(report, details=True)
    assert recall >= INDEPENDENT_RECALL_FLOOR, bench.render(report, details=True)
    # (`kubectl top` in ho32 was taken for a deploy until deploy tools needed a deploying verb.)
    # Known hits: dv8_16's error_fix lesson quotes the failed `xcodebuild … name=iPhone 15`
    # command, and "iPhone 15" is that writer's distractor for a one-off instruction; dv10_13's
    # "NetUpdateFrequency 是默认的 100，不是这个" is taken for a convention.
    assert report.distractor_hits <= 2, bench.render(report, details=True)


def test_no_corpus_secret_reaches_any_output(corpus: list[Any]) -> None:
    sessions_with_secrets = [s for s in corpus if s.secrets]
    assert len(sessions_with_secrets) >= 3
    for session in sessions_with_secrets:
        memories = extract(session.records)
        output = json.dumps(
            [asdict(m) for m in memories] + [offline_stage1(session.records, memories)],
            ensure_ascii=False,
        )
        for secret in session.secrets:
            # any 8-character piece of the secret's body would be a leak
            body = secret.split("_", 1)[-1] if "_" in secret[:8] else secret
            for i in range(len(body) - 7):
                assert body[i : i + 8] not in output, (session.name, secret)


# --- one injected-block detection, shared with ingestion ------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        {"type": "user", "content": f"{INJECTION_OPEN}\n- We use tabs.\n{INJECTION_CLOSE}\nhi"},
        {"type": "user", "content": [{"type": "text", "text": f"ok {INJECTION_OPEN} x"}]},
        {
            "type": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {INJECTION_OPEN: "x"}}
            ],
        },
        {
            "type": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "Bash",
                    "input": {"command": f"echo '{INJECTION_OPEN}'"},
                }
            ],
        },
        {"type": "user", "content": "We use Postgres 16, no marker here."},
    ],
    ids=["string", "text-block", "key", "tool-input", "none"],
)
def test_the_extractor_flags_injected_blocks_exactly_as_ingestion_does(
    alice_client: Any, record: dict[str, Any]
) -> None:
    from memoryhub.sessions.models import SessionRecord

    sessions = "/api/v1/projects/alpha/sessions/"
    alice_client.post(sessions, {"external_id": "inj"}, format="json")
    response = alice_client.post(f"{sessions}inj/records/", [record], format="json")
    assert response.status_code == 201, response.content
    stored = SessionRecord.objects.get()
    (read,) = source_records([{"type": stored.type, "content": stored.content}])
    assert read.contains_injection == stored.contains_injection
    assert stored.contains_injection == (INJECTION_OPEN in json.dumps(record))


def test_ingestion_and_the_extractor_share_one_detector() -> None:
    from memoryhub.core import markers
    from memoryhub.pipeline.extractor import records
    from memoryhub.sessions import services

    assert records.contains_injection is markers.contains_injection
    assert services.contains_injection is markers.contains_injection
    assert not hasattr(services, "_contains_injection")


# --- scoring other extractors: an LLM's answers, a reviewer's memories ---------------------------


def _corpus_of(directory: Path, name: str = "dv01_airflow_partitions") -> Any:
    """A corpus of one corpus session (copied), and that session as the bench loads it."""
    source = bench.CORPUS / f"{name}.jsonl"
    for path in (source, source.with_suffix(".expected.json")):
        (directory / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (session,) = bench.load_corpus(directory)
    return session


def _answer_item(session: Any, planted: dict[str, Any], kind: str) -> dict[str, Any]:
    first, last = bench.record_range(session)
    item = {
        "kind": kind,
        "content": "Remember: " + " ".join(planted["must_contain"]),
        "title": "planted",
        "keywords": ["planted"],
        "importance": 2,
        "record_start": first,
        "record_end": last,
    }
    if kind == "project":
        item["subcategory"] = "ops"
    return item


def _write(directory: Path, session: Any, answer: Any) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / f"{session.name}.memories.json").write_text(json.dumps(answer), encoding="utf-8")
    return directory


def test_the_bench_asks_the_configured_llm_as_stage_one_does_and_scores_its_answers(
    fake_llm: Any, settings: Any, tmp_path: Path, capsys: Any
) -> None:
    session = _corpus_of(tmp_path)
    right, wrong_kind = session.planted[0], session.planted[1]
    other = "lesson" if wrong_kind["kind"] != "lesson" else "reference"
    answer = {"memories": [_answer_item(session, right, right["kind"])]}
    answer["memories"].append(_answer_item(session, wrong_kind, other))
    fake_llm.reply("```json\n" + json.dumps(answer) + "\n```")  # fences are stripped
    fake_llm.configure(settings)
    out = tmp_path / "answers"
    numbers = tmp_path / "numbers.json"

    assert bench.main(["--corpus", str(tmp_path), "--llm", str(out), "--json", str(numbers)]) == 0

    (request,) = fake_llm.requests
    assert request.body["model"] == "fake-default"
    assert request.body["messages"] == bench.typed_prompt(session)  # the product's own request
    assert request.body["max_tokens"] == 4096 and "temperature" not in request.body  # as stage 1
    assert "must_contain" not in json.dumps(request.body)  # the labels never reach the model
    kept = json.loads((out / "dv01_airflow_partitions.memories.json").read_text(encoding="utf-8"))
    assert kept == answer
    scored = json.loads(numbers.read_text(encoding="utf-8"))
    assert (scored["predicted"], scored["true_positives"]) == (2, 1)  # a wrong kind is no match
    assert scored["recall"] == pytest.approx(1 / len(session.planted))
    assert f"Memories in {out}" in capsys.readouterr().out


def test_the_bench_sends_an_invalid_llm_answer_back_once_as_the_pipeline_does(
    fake_llm: Any, settings: Any, tmp_path: Path
) -> None:
    session = _corpus_of(tmp_path)
    planted = session.planted[0]
    item = _answer_item(session, planted, planted["kind"])
    invalid = json.dumps({"memories": [{**item, "keywords": ["Planted", "planted"]}]})
    fake_llm.reply(invalid)
    fake_llm.reply(json.dumps({"memories": [item]}))
    fake_llm.configure(settings)
    out = tmp_path / "answers"

    bench.ask_llm([session], out)
    report = bench.score([session], bench.read_predictions(out))

    first, repair = fake_llm.requests
    assert repair.body["messages"][:2] == first.body["messages"]
    assert repair.body["messages"][2] == {"role": "assistant", "content": invalid}
    assert repair.body["messages"][3]["role"] == "user"
    assert "duplicate" in repair.body["messages"][3]["content"]
    assert (report.overall.predicted, report.overall.tp) == (1, 1)


def test_the_bench_needs_an_llm_for_llm_mode(settings: Any, tmp_path: Path) -> None:
    session = _corpus_of(tmp_path)
    settings.LLM_PROVIDER = "offline"
    with pytest.raises(SystemExit, match="needs an LLM"):
        bench.ask_llm([session], tmp_path / "answers")


def test_the_bench_counts_an_answer_the_validator_refuses_as_no_memories(tmp_path: Path) -> None:
    session = _corpus_of(tmp_path)
    item = _answer_item(session, session.planted[0], session.planted[0]["kind"])
    outside = {**item, "record_end": bench.record_range(session)[1] + 5}
    without_records = {k: v for k, v in item.items() if k not in ("record_start", "record_end")}
    for n, answer in enumerate(
        [{"memories": [outside]}, {"memories": [item, without_records]}, {"unparsed": "Sure!"}]
    ):
        answers = _write(tmp_path / f"answers{n}", session, answer)

        report = bench.score([session], bench.read_predictions(answers))

        assert (report.overall.predicted, report.overall.tp) == (0, 0), answer


def test_the_bench_scores_a_reviewers_memories_and_writes_the_llm_requests(
    tmp_path: Path,
) -> None:
    session = _corpus_of(tmp_path)
    planted = session.planted[0]
    memories = [
        {"kind": planted["kind"], "content": " / ".join(planted["must_contain"])},
        {"kind": "no-such-kind", "content": "dropped: not a kind"},
        {"kind": "rule", "content": "Nothing that was planted."},
    ]
    given = _write(tmp_path / "given", session, {"memories": memories})

    report = bench.score([session], bench.read_reviewed(given))

    assert (report.overall.predicted, report.overall.tp) == (2, 1)
    _write(given, session, {"memories": "not a list"})
    with pytest.raises(SystemExit, match="expected"):
        bench.score([session], bench.read_reviewed(given))
    assert bench.main(["--corpus", str(tmp_path), "--llm-prompts", str(tmp_path / "p")]) == 0
    written = json.loads((tmp_path / "p" / f"{session.name}.prompt.json").read_text())
    assert written == bench.typed_prompt(session)
    assert [m["role"] for m in written] == ["system", "user"]


def test_the_bench_matches_by_scope_only_when_asked(tmp_path: Path) -> None:
    session = _corpus_of(tmp_path)
    planted = next(p for p in session.planted if p["scope"] == "project")
    same_scope = "lesson" if planted["kind"] != "lesson" else "rule"
    content = " / ".join(planted["must_contain"])
    memories = [{"kind": same_scope, "content": content}, {"kind": "user", "content": content}]
    predict = bench.read_reviewed(_write(tmp_path / "given", session, {"memories": memories}))

    assert bench.score([session], predict).overall.tp == 0
    (scored,) = bench.score([session], predict, by_scope=True).sessions
    assert scored.matches == {0: session.planted.index(planted)}  # the user memory matches nothing


def test_the_bench_compares_by_scope_in_its_child_too(tmp_path: Path, capsys: Any) -> None:
    # a session where the offline extractor finds more by scope than by kind
    session = _corpus_of(tmp_path, "dv10_13_unreal_ammo_replication")
    by_kind, by_scope = (bench.score([session], by_scope=s).overall.tp for s in (False, True))
    assert by_scope > by_kind

    assert bench.main(["--corpus", str(tmp_path), "--by-scope", "--compare", str(ROOT)]) == 0

    overall = next(
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| overall |") and line.count("|") > 7
    )
    cells = [c.strip() for c in overall.strip("|").split("|")]
    assert cells[2:5] == cells[5:8]  # the child (this checkout again) scored by scope as well
