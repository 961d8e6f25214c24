"""The extractor's statement model (memoryhub/pipeline/extractor/statements.py): durable
statements recognised by their structure in English and Chinese, one-off requests and reports
left alone, project vs user scope, the rule/project split, the no-join rule for commands, and
the shipped weights being exactly what bench/fit_statement_model.py fits on the tuned corpus.
None of the sentences below is in the corpus.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryhub.memories.kinds import DEFAULT_SCOPE
from memoryhub.pipeline.extractor import (
    ExtractedMemory,
    extract,
    source_records,
    statement_weights,
    statements,
)

ROOT = Path(__file__).resolve().parents[2]


def _after_task(text: str, *, commands: tuple[tuple[str, str], ...] = ()) -> list[ExtractedMemory]:
    rows: list[dict[str, Any]] = [
        {"type": "user", "content": "Fix the failing build."},
        {"type": "assistant", "content": "Looking into it."},
        {"type": "user", "content": text},
        {"type": "assistant", "content": "OK."},
    ]
    for i, (command, output) in enumerate(commands):
        call = f"call_{i}"
        rows.append(
            {
                "type": "assistant",
                "content": [
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}
                ],
            }
        )
        rows.append({"type": "tool_result", "content": output, "tool_use_id": call})
    return extract(source_records(rows))


def _only(text: str) -> ExtractedMemory:
    memories = _after_task(text)
    assert len(memories) == 1, [(m.kind, m.rule, m.content) for m in memories]
    return memories[0]


# --- durable statements no trigger rule catches ------------------------------------------------


@pytest.mark.parametrize(
    "text", ["订单号由 Snowflake 算法生成，存成 bigint。", "缓存的 key 前缀是服务名加版本号。"]
)
def test_bare_chinese_descriptions_are_statement_like_but_below_the_threshold(text: str) -> None:
    # Kept as project knowledge until round 4; the refit on two more independent writers (set 7,
    # dev-set-10), who rarely keep a bare description of one thing, put them at 0.5-0.7: still
    # far above a request or a report, no longer above the threshold.
    probability = statements.score(statement_weights.DURABLE, text)
    assert 0.5 <= probability < statements.THRESHOLD
    assert statements.score(statement_weights.DURABLE, "帮我把重试次数改成 5。") < 0.5


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # generic present-tense statements about the team's code: rule when they prescribe
        ("Release notes are written in English and Chinese.", "rule"),
        ("Background jobs are idempotent and safe to retry.", "rule"),
        ("所有定时任务由 xxl-job 调度。", "rule"),
        ("金额字段以分为单位存储。", "rule"),
        ("控制器里只做参数校验，业务逻辑放在 service 层。", "rule"),
        ("Use the `logger` from utils/log.py.", "rule"),
        ("发版前先在预发环境验一遍。", "rule"),
        # …project knowledge when they describe a particular thing
        ("It's a Django 5 monolith with Celery for background jobs.", "project"),
        # the speaker about themself: their own taste
        ("For me, table-driven tests are easier to read.", "user"),
        ("I'm more of a vim person.", "user"),
    ],
)
def test_a_durable_statement_is_recognised_by_its_structure(text: str, kind: str) -> None:
    memory = _only(text)
    assert memory.kind == kind
    # the speaker's taste with a tool ("For me, …") is also caught by the habit rule first
    assert memory.rule == "statement" or (kind, memory.rule) in {
        ("user", "preference"),
        ("project", "fact"),  # "It's a Django 5 monolith": the fact rule knows it first
        ("rule", "convention"),  # "所有定时任务由 xxl-job 调度": a norm for every thing of a kind
    }
    assert memory.content.rstrip("。.") == text.rstrip("。.")
    assert 8 <= len(memory.keywords) <= 13


@pytest.mark.parametrize(
    "text",
    [
        # requests and tasks
        "Add a loading spinner to the settings page.",
        "Let's rename the module later.",
        "帮我把重试次数改成 5。",
        "这个函数先别动。",
        # questions, status and problem reports, past events
        "Why does the cache miss so often?",
        "The import job keeps running out of memory.",
        "The build was green yesterday.",
        "I'm looking at the failing test now.",
        "登录页又白屏了。",
        "刚才那个报错是网络问题。",
        # remarks about the moment, and pointers back at the conversation
        "Thanks, that works.",
        "以后都这样写。",
        # instructions about one particular thing of this task, however norm-like their form
        "Put the helper in utils.py.",
        "Name the new flag --dry-run.",
        "Keep the old endpoint around for a while.",
        "Use a map here instead of the switch.",
        "这个 PR 里不用改测试。",
    ],
)
def test_one_off_sentences_are_left_alone(text: str) -> None:
    assert _after_task(text) == []


def test_scope_follows_what_a_statement_is_about() -> None:
    team = _only("Release notes are written in English and Chinese.")
    person = _only("For me, table-driven tests are easier to read.")
    assert DEFAULT_SCOPE[team.kind] == "project"
    assert DEFAULT_SCOPE[person.kind] == "user"
    # the same shape of fact: the team's service, or the speaker's own setup
    ours = _only("Our API gateway is Kong with the OIDC plugin.")
    mine = _only("My editor is Neovim with LazyVim.")
    assert (ours.kind, mine.kind) == ("project", "user")
    assert (ours.rule, mine.rule) == ("fact", "fact")


def test_a_statement_pointing_at_a_lasting_page_is_a_reference() -> None:
    memory = _only("The incident process is at https://handbook.acme.io/ops/incidents")
    assert memory.kind == "reference"
    assert memory.title == "Reference: https://handbook.acme.io/ops/incidents"


def test_a_clause_after_a_semicolon_joins_the_statement_before_it() -> None:
    memory = _only("Money is integer cents end to end; floats only show up in the templates.")
    assert "integer cents" in memory.content and "templates" in memory.content


# --- the pieces of the model ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Nobody calls the payments API directly.", {"en_universal", "name", "en_neg_norm"}),
        ("Feature modules live under src/features/.", {"en_location", "path"}),
        ("Keep controllers thin.", {"en_convention_start", "en_keep_state"}),
        ("接口请求都走 src/api 里的封装。", {"zh_universal", "path", "lang_zh"}),
        ("帮我把超时改成 30 秒。", {"zh_request", "zh_edit"}),
    ],
)
def test_features_name_the_classes_a_sentence_falls_in(text: str, expected: set[str]) -> None:
    assert expected <= set(statements.features(text))


@pytest.mark.parametrize(
    ("text", "norm"),
    [
        ("Handlers never touch the database.", True),
        ("Prefabs are edited in prefab mode only, not in the scene.", True),
        ("日志里不打手机号。", True),
        ("The design tokens live in src/theme/tokens.ts.", False),
        ("We're on Node 20 with pnpm workspaces.", False),
        ("流水线跑在 GitLab CI 上。", False),
    ],
)
def test_is_norm_tells_what_to_do_from_how_things_are(text: str, norm: bool) -> None:
    assert statements.is_norm(text) is norm


def test_the_decision_can_be_explained_by_the_features_that_fired() -> None:
    text = "Handlers never touch the database."
    fired = statements.explain(statement_weights.DURABLE, text)
    assert {name for name, _ in fired} == set(statements.features(text))
    total = sum(weight for _, weight in fired)
    assert statements.score(statement_weights.DURABLE, text) == pytest.approx(
        1 / (1 + 2.718281828459045 ** (-total))
    )


def test_the_shipped_weights_are_what_the_fit_script_fits_on_the_tuned_corpus() -> None:
    spec = importlib.util.spec_from_file_location(
        "fit_statement_model", ROOT / "bench" / "fit_statement_model.py"
    )
    assert spec and spec.loader
    fit_script = importlib.util.module_from_spec(spec)
    sys.modules["fit_statement_model"] = fit_script
    spec.loader.exec_module(fit_script)
    rows = fit_script.training_rows()
    assert rows and all(row["split"] != "holdout" for row in rows)  # validation never fitted on
    assert fit_script.fit(rows, "durable") == statement_weights.DURABLE


# --- commands: never joined, and a look is no deploy --------------------------------------------


def test_chained_commands_stay_apart_and_looking_at_a_cluster_is_no_deploy() -> None:
    memories = _after_task(
        "Ship it.",
        commands=(
            ("kubectl top pods -n import", "NAME  CPU  MEMORY\nworker-1  120m  1400Mi"),
            ("pnpm lint && pnpm run deploy:staging", "ok\ndeployed to staging"),
        ),
    )
    assert [m.content for m in memories] == [
        "Lint with `pnpm lint`.",
        "Deploy with `pnpm run deploy:staging`.",
    ]
    # a line with a restart of a running deployment was run once: none of it is kept (set 5's
    # writer labels "tflint && kubectl … rollout restart …" a one-off)
    restart = (("make lint && kubectl rollout restart deploy/api", "ok\ndeployment restarted"),)
    assert _after_task("Ship it.", commands=restart) == []


@pytest.mark.parametrize(
    ("command", "content"),
    [
        ("pnpm --filter web test", "Run tests with `pnpm --filter web test`."),
        ("yarn workspace api lint", "Lint with `yarn workspace api lint`."),
        ("cargo nextest run", "Run tests with `cargo nextest run`."),
        ("deno task build", "Build with `deno task build`."),
        ("php vendor/bin/phpunit", "Run tests with `php vendor/bin/phpunit`."),
        ("staticcheck ./...", "Lint with `staticcheck ./...`."),
        ("gcloud run deploy api --source .", "Deploy with `gcloud run deploy api --source .`."),
    ],
)
def test_commands_are_known_by_their_task_word_not_only_by_a_tool_list(
    command: str, content: str
) -> None:
    memories = _after_task("Ship it.", commands=((command, "ok"),))
    assert [m.content for m in memories] == [content]


@pytest.mark.parametrize(
    "command", ["kubectl top pods", "kubectl get pods -n prod", "fly status", "test -f go.mod"]
)
def test_looking_commands_are_not_remembered(command: str) -> None:
    assert _after_task("Check it.", commands=((command, "ok"),)) == []


# --- scoring another directory of sessions -----------------------------------------------------


def test_the_bench_scores_another_directory_with_its_split_as_a_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location(
        "extractor_quality", ROOT / "bench" / "extractor_quality.py"
    )
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    sys.modules["extractor_quality"] = bench
    spec.loader.exec_module(bench)
    corpus = ROOT / "tests" / "pipeline" / "corpus"
    for name in ("en03_go_healthz", "zh04_k8s_replicas"):
        (tmp_path / f"{name}.jsonl").write_text(
            (corpus / f"{name}.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
        )
        expected = json.loads((corpus / f"{name}.expected.json").read_text(encoding="utf-8"))
        expected["split"] = "holdout"
        (tmp_path / f"{name}.expected.json").write_text(json.dumps(expected), encoding="utf-8")
    out = tmp_path / "numbers.json"
    assert bench.main(["--corpus", str(tmp_path), "--json", str(out)]) == 0
    numbers = json.loads(out.read_text(encoding="utf-8"))
    assert set(numbers["by_split"]) == {"holdout"}
    assert numbers["by_split"]["holdout"]["planted"] == 12
    assert "| split: holdout |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--corpus", str(tmp_path / "missing")])


# --- set-5 failure classes: things of the moment, and kinds by what a statement is about ---------


@pytest.mark.parametrize(
    "text",
    [
        # the speaker's state this week
        "I'm on call this week, so I'll be slow to reply.",
        "I have a dentist appointment at four.",
        "我下午要开会，四点以后再看结果。",
        "我这周在上海出差，回复可能慢。",
        # status updates and problem reports
        "Looks good, the duplicates are gone now.",
        "Ticket is DATA-4412.",
        "The backfill container never got its service account although the job is running.",
        "The app doesn't come up after the rollout.",
        "好了，不 NaN 了。",
        "新的 ingress 没有 DNS 记录，但是 pod 已经 Running 了。",
        # a step of the task at hand
        "Last thing: run make lint before you stop.",
        "Use the staging bucket for this backfill.",
        "最后把 README 里的版本号更新一下。",
        "The sensor board resets every few hours and I can't see why.",
        "Run pnpm build && pnpm release --tag v3.2.0 once it's green.",
        "订单页又白屏了，不知道为什么。",
        "iOS 推送从昨晚开始有一半收不到。",
        "CI 上 assembleRelease 卡在 R8 那一步二十分钟。",
        "I'll merge after lunch.",
        "Users get logged out after ten minutes even though the refresh token is valid.",
        "The frontend team says they send the refresh request on every 401.",
        "It is currently deployed to the eu-west cluster only.",
    ],
)
def test_states_statuses_and_task_steps_are_not_standing(text: str) -> None:
    assert statements.not_standing(text)
    assert _after_task(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "The on-call runbook is at https://wiki.acme.dev/runbooks/orders-svc",
        "Random seeds are fixed through seed_everything(42) at the top of every entry point.",
        "发版只在工作日上午，周五下午不发。",
    ],
)
def test_standing_statements_that_mention_a_time_or_a_state_word_stay(text: str) -> None:
    assert not statements.not_standing(text)
    assert _after_task(text) != []


@pytest.mark.parametrize(
    "text",
    [
        "This bit us before: the scheduler runs in UTC, so dates come from the logical date.",
        "Got bitten by this last quarter: external-dns only picks up annotated ingresses.",
        "这个坑我们踩过：混合精度下 loss 必须先 scale 再 backward。",
        "Mixed bulk requests have burned us before: deletes must go in their own batch.",
        "上次就是因为分区字段用了本地时间才对不上：分区一律按 UTC 日期。",
        "A missing index took the site down on Black Friday, so every ForeignKey gets reviewed.",
        "以前吃过大批量 insert 的亏：每批最多十万行，不然 merge 跟不上。",
    ],
)
def test_a_pitfall_the_team_learned_is_a_lesson(text: str) -> None:
    memory = _only(text)
    assert (memory.kind, memory.rule) == ("lesson", "lesson")
    assert DEFAULT_SCOPE[memory.kind] == "project"


@pytest.mark.parametrize(
    "text",
    [
        "Skip pasting whole files at me, a diff is plenty.",
        "Hand me the kubectl commands and I'll run them, that's my job, not yours.",
        "Don't trigger backfills yourself.",
        "When you propose changes, show a unified diff rather than the whole file.",
        "别写一大段解释，直接给结论。",
        "学习率别自己动。",
        "Just give me the failing line and the fix, no essay.",
        "改动分成小的 commit 给我看。",
        "Please don't rewrite my specs to a different style.",
        "别给我贴整段 SQL，改了哪几行说清楚就行。",
        "Skip the explanation of how JWTs work, I know that part.",
        "Write the migration but leave applying it to me.",
        "结论放前面，细节我自己会看代码。",
    ],
)
def test_how_the_assistant_should_work_with_the_speaker_is_feedback(text: str) -> None:
    memory = _only(text)
    assert memory.kind == "feedback"
    assert DEFAULT_SCOPE[memory.kind] == "user"


def test_where_the_team_keeps_a_kind_of_record_is_a_reference() -> None:
    memory = _only("Incidents go on the Data Quality board in Linear.")
    assert (memory.kind, memory.title) == ("reference", "Reference: Linear")
    zh = _only("事故复盘都写到飞书的 SRE 知识库里。")
    assert (zh.kind, zh.title) == ("reference", "Reference: 飞书")


def test_a_one_off_deploy_with_concrete_arguments_is_no_standing_deploy_command() -> None:
    memories = _after_task(
        "Ship it.",
        commands=(
            ("make lint && make deploy-dags ENV=prod", "lint ok\ndeployed 14 dags"),
            ("./deploy.sh v2.4.1", "deployed v2.4.1"),
            ("./deploy.sh staging", "deployed to staging"),
        ),
    )
    # the lint chained before a one-off deploy was run once for that release too (round 3: the
    # independent writers label such a line a distractor, lint and all)
    assert [m.content for m in memories] == ["Deploy with `./deploy.sh staging`."]


def test_a_comma_clause_that_leans_on_the_one_before_joins_its_memory() -> None:
    user = _only("I read task logs in the Grafana Loki view, I barely open the Airflow UI.")
    assert user.kind == "user"
    assert (
        user.content == "I read task logs in the Grafana Loki view, i barely open the Airflow UI."
    )
    rule = _only("证书统一放在 Vault 的 secret/push 下，不要提交到仓库。")
    assert (rule.kind, rule.content) == (
        "rule",
        "证书统一放在 Vault 的 secret/push 下，不要提交到仓库。",
    )
    # one sentence, one memory: a clause of the same scope joins the memory before it (the
    # independent writers of sets 5, 6 and dev-set-8 label "X 一律用 A，不要 B" as one memory) …
    assert len(_after_task("状态管理用 Zustand，别再引入 Redux。")) == 1
    # … but the speaker's taste and the team's rule stay apart
    kinds = [m.kind for m in _after_task("I can't stand default exports; named exports only.")]
    assert kinds == ["user", "rule"]


def test_a_habit_about_something_said_before_is_no_user_memory() -> None:
    assert statements.judge_statement("I read them line by line.") is None
    kept = statements.judge_statement("I keep a scratch Kibana dashboard for myself.")
    assert kept is not None and kept[0] == "user"


def test_what_the_system_is_stays_project_knowledge_however_it_goes_on() -> None:
    memory = _only("The app is a single-activity Compose app, navigation goes through the NavHost.")
    assert memory.kind == "project"
    assert _only(
        "Workers are plain goroutines reading from NATS JetStream, no framework."
    ).kind == ("project")


def test_a_reason_given_for_a_norm_is_no_problem_report() -> None:
    text = "Handlers must ack only after the database commit, otherwise we lose jobs on crash."
    assert not statements.one_off(text)
    assert statements.one_off("The handler loses jobs on crash.")
    assert _only(text).kind == "rule"


def test_a_bare_clause_and_a_fact_after_a_rule_join_the_memory_before_them() -> None:
    feedback = _only("改 UI 之前先截图给我确认，别直接提交。")
    assert (feedback.kind, feedback.content) == (
        "feedback",
        "改 UI 之前先截图给我确认，别直接提交。",
    )
    rule = _only(
        "Admin classes only search indexed columns; free-text search belongs in the search view."
    )
    assert rule.kind == "rule" and "Free-text search" in rule.content


# --- issue 14 round 3: classes from the independent writers' sessions ------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "On anything billing: we use Linear for the backlog, it's all under the BILL team.",
            "Linear",
        ),
        ("The storage runbooks are in the ops wiki under Infra/Storage/Runbooks.", "wiki"),
        ("Bugs for this go on the Trello board 'Lanternfall QA'.", "Trello"),
        ("指标口径以飞书上那份《财务指标字典》为准，先去那里查。", "飞书"),
        ("每次 offline eval 的结果都记在 MLflow 的 ranker-eval experiment 里。", "MLflow"),
    ],
)
def test_a_place_where_records_live_is_a_reference(text: str, needle: str) -> None:
    memory = _only(text)
    assert memory.kind == "reference"
    assert needle in memory.title


def test_a_record_place_clause_after_a_statement_is_a_reference_of_its_own() -> None:
    memories = _after_task(
        "pluginval at strictness 5 is our bar before a release, and the results go on the "
        "'Host Matrix' page in the wiki."
    )
    assert [m.kind for m in memories][-1] == "reference"
    assert "Host Matrix" in memories[-1].content and "pluginval" not in memories[-1].content
    # a request to look somewhere is no pointer
    assert _after_task("Can you check the Grafana dashboard for the orders service?") == []


@pytest.mark.parametrize(
    "text",
    [
        "Everything UI in huddle is LiveView; there is no separate JS frontend to touch.",
        "It's all Jetpack Compose, there are no XML layouts left.",
        "The monolith is still on Django 4.2 LTS, so nothing from 5.x.",
        "The inventories are split per site, each with its own group_vars.",
        "实车是 robot-03，ssh 要从 bastion.lab 跳过去。",
    ],
)
def test_what_the_system_is_is_project_knowledge_not_a_rule(text: str) -> None:
    assert _only(text).kind == "project"


def test_an_incident_told_with_its_norm_is_one_lesson() -> None:
    (memory,) = _after_task(
        "Lock updates always go in their own PR. In the spring we mixed one into a feature "
        "branch and bisecting a regression afterwards was miserable."
    )
    assert memory.kind == "lesson" and "bisecting" in memory.content
    (zh,) = _after_task(
        "拼 SQL 的地方一律用 $wpdb->prepare，去年就是有个查询直接拼了参数，被人注入过一次。"
    )
    assert zh.kind == "lesson"
    # a story on its own says no norm
    assert (
        _after_task("之前有人删字段以后把 3 号又拿去给新字段用了，老客户端解析出来全是错的数据。")
        == []
    )


def test_the_sessions_opening_sentence_is_the_task() -> None:
    opening = [{"type": "user", "content": "I need a 'Void invoice' admin action on invoices."}]
    assert extract(source_records(opening)) == []
    assert _after_task("Users need a way to export CSV.") == []
    assert _after_task("财务那边要一张按月汇总的退款表。") == []


@pytest.mark.parametrize(
    "text",
    [
        "Skip the play-by-play. Just show me the diff at the end.",
        "You don't need to paste the whole test output back to me, a one-line pass/fail is plenty.",
        "When you change a prefab, name it in your reply.",
        "以后改动涉及三个以上文件的时候，先给我列个计划，我点头了再动手。",
        "Could you explain the migration stuff in plain words as you go?",
        "回答的时候先给结论再讲原因。",
    ],
)
def test_a_standing_instruction_on_how_to_report_is_one_feedback(text: str) -> None:
    (memory,) = _after_task(text)
    assert memory.kind == "feedback"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I reason about StateFlow way better than LiveData.", "user"),
        ("曲线我一般在 TensorBoard 里看，MLflow 的页面我基本不打开。", "user"),
        ("Personally I don't ship a migration without a test in this repo, none of us do.", "rule"),
    ],
)
def test_the_speakers_habit_is_theirs_and_a_shared_norm_the_teams(text: str, kind: str) -> None:
    assert _only(text).kind == kind


def test_a_command_the_speaker_states_is_one_memory_and_narrow_runs_are_not_kept() -> None:
    memories = _after_task(
        "Run make lint before you push anything.", commands=(("make lint", "All checks passed"),)
    )
    assert [(m.kind, m.rule) for m in memories] == [("project", "convention")]
    stated = _only("For the tests, CI runs them like this: `pytest -q tests/unit`")
    assert (stated.kind, stated.rule) == ("project", "command")
    narrow = _after_task(
        "Ship it.",
        commands=(("bundle exec rspec spec/jobs/digest_job_spec.rb", "3 examples, 0 failures"),),
    )
    assert narrow == []


@pytest.mark.parametrize(
    "text",
    [
        "Looks good, merge it.",
        "The test is still failing with the same error.",
        "Change the timeout to 30s for now.",
        "The customer is on the enterprise plan, so this is urgent.",
        "I'm out thu/fri btw so this needs to land before thursday.",
        "fwiw I already bounced staging by hand this morning.",
        "Run `tflint && kubectl rollout restart deploy/api`.",
        "测试还是挂了，同样的错误。",
        "跑一下 ./mvnw spotless:apply && git push origin hotfix/dup-credit",
        "我下午再看。",
    ],
)
def test_remarks_about_the_moment_are_no_memories(text: str) -> None:
    assert _after_task(text) == []


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (
            "If you see 'connection refused', Redis isn't running; start it with make redis.",
            ["lesson"],
        ),
        ("遇到 ECONNREFUSED 报错，一般是本地的 mock server 没起。", ["lesson"]),
        ("If the tests fail, tell me.", []),
        ("If you see the login page, it worked.", []),
    ],
)
def test_a_troubleshooting_tip_is_a_lesson_and_other_conditionals_are_nothing(
    text: str, kinds: list[str]
) -> None:
    assert [m.kind for m in _after_task(text)] == kinds


# --- round 4: what a reviewer on a new writer's sessions would not keep -----------------------


def test_a_toolchains_default_command_is_no_memory_but_one_with_the_projects_arguments_is() -> None:
    memories = _after_task(
        "Thanks.",
        commands=(
            ("cargo build", "Finished dev"),
            ("cargo test", "test result: ok"),
            ("sbt test", "[success]"),
            ("cmake --build --preset win-dev", "Build succeeded"),
        ),
    )
    assert [m.content for m in memories] == ["Build with `cmake --build --preset win-dev`."]


def test_a_test_run_narrowed_to_one_file_is_no_memory_whatever_its_language() -> None:
    commands = (("flutter test test/push/push_service_test.dart", "All tests passed!"),)
    assert _after_task("Thanks.", commands=commands) == []


def test_a_command_the_speaker_asked_for_is_that_feedback_not_a_second_memory() -> None:
    memories = _after_task(
        "改完给我看之前先跑 `./gradlew spotlessApply`，不然 diff 里一堆 format noise。",
        commands=(("./gradlew spotlessApply", "BUILD SUCCESSFUL"),),
    )
    assert [(m.kind, m.rule) for m in memories] == [("feedback", "feedback")]


@pytest.mark.parametrize(
    "text",
    [
        "fwiw I did Angular for years before this job, so explain the build-time bits.",
        "I'm colour-blind (deuteranopia), so please don't propose red/green status dots.",
        "另外说一下，我是硬件出身，Rust 生命周期那套不太熟，你写复杂泛型的时候加两句注释。",
    ],
)
def test_who_the_speaker_is_is_their_profile_whatever_they_ask_with_it(text: str) -> None:
    memory = _only(text)
    assert (memory.kind, memory.rule) == ("user", "profile")


@pytest.mark.parametrize(
    "text",
    [
        "People on steam say saves get corrupted if they alt-f4 mid autosave.",
        "Second problem while we're here: the SELECT on Reservations scans.",
        "Don't swallow the error.",
    ],
)
def test_hearsay_and_remarks_about_the_code_at_hand_are_left_alone(text: str) -> None:
    assert _after_task(text) == []


def test_the_reason_told_in_the_next_sentence_is_the_same_memory() -> None:
    memory = _only(
        "Don't hand-edit config/crd/bases. `make manifests` regenerates it from the markers "
        "and CI diffs the output."
    )
    assert memory.kind == "rule"
    assert "make manifests" in memory.content and "config/crd/bases" in memory.content
