"""Shell-command classification: which commands are worth remembering, and lessons from
the ones that failed and were then fixed.

Tool calls: an assistant `tool_use` block of a shell tool (Bash, shell, run_command, …) with a
`command` input, paired with its `tool_result` by `tool_use_id`.

`command` → project/ops, importance 1. A shell command whose result is not an error and
    that builds, tests, lints, type-checks, formats, migrates, deploys, installs dependencies
    (without naming a package) or starts local services. Never `ls`, `cat`, `cd`, `git …`,
    `grep`, `echo` and the like. There is one memory per command family (`pytest`,
    `manage.py migrate`, `npm run lint` …), with the shortest successful form. A chained line
    (`a && b; c`) is cut into its commands and each is judged on its own, with the `cd` /
    `export` steps before it: commands that do different things are never joined. A toolchain's
    bare default (`cargo test`, `sbt test`, `go test ./...`) and a test run narrowed to one file
    or a name filter are not kept.
`error_fix` → lesson, importance 2. A failed shell command whose output shows an environment
    or tooling problem (missing module or binary, refused connection, credentials, version
    conflicts, unsupported protocol, missing table…). It must be followed later by a
    successful run of the same command family, with an explanation in between. The memory
    holds the failure, the explanation (the sentences of the first explanation after the
    failure that mention the error), the commands that fixed it and the command that then
    worked. Test failures that the code under edit caused (AssertionError) are not lessons.

Record range: for a command, the tool_use through its result; for a lesson, the failed call
through the successful result. Commands are stored redacted (`redact`, which also scrubs
`redis-cli -a <password>`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from memoryhub.core.redaction import redact
from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.memories.text import tokenize
from memoryhub.pipeline.extractor.keywords import (
    CJK,
    MAX_CONTENT_CHARS,
    MAX_TITLE_CHARS,
    Draft,
    clip,
)
from memoryhub.pipeline.extractor.records import SourceRecord, readable_text
from memoryhub.sessions.conversation import text_of
from memoryhub.sessions.records import (
    ASSISTANT,
    TOOL_RESULT,
    USER,
)

_SHELL_TOOLS = frozenset(
    {
        *("bash", "shell", "sh", "zsh", "terminal", "run_command", "execute_command"),
        *("run_shell_command", "run_terminal_cmd", "exec", "execute", "command"),
        *("powershell", "cmd", "run", "local_shell", "shell_command"),
    }
)
_TRIVIAL = frozenset(
    {
        *("ls", "ll", "cat", "cd", "pwd", "echo", "printf", "grep", "rg", "ag", "find", "fd"),
        *("head", "tail", "less", "more", "which", "whereis", "type", "env", "printenv"),
        *("export", "mkdir", "rm", "rmdir", "cp", "mv", "touch", "sed", "awk", "wc", "sort"),
        *("uniq", "cut", "tr", "xargs", "tee", "diff", "stat", "file", "du", "df", "ps"),
        *("kill", "top", "htop", "whoami", "date", "sleep", "true", "false", "clear", "history"),
        *("git", "gh", "open", "code", "vim", "vi", "nano", "tree", "chmod", "chown", "ln"),
        *("curl", "wget", "jq", "yq", "tar", "unzip", "zip", "ssh", "scp", "man", "help"),
    }
)
_RUNNER_PREFIXES: tuple[tuple[str, ...], ...] = (
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("deno", "task"),
    ("turbo", "run"),
    ("rye", "run"),
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "dlx"),
    ("npm", "exec"),
    ("bundle", "exec"),
    ("python", "-m"),
    ("python3", "-m"),
    ("py", "-m"),
    ("npx",),
    ("bunx",),
    ("sudo",),
    ("time",),
    ("nice",),
    ("command",),
)
_TEST_TOOLS = frozenset(
    {
        *("pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "rspec"),
        *("phpunit", "ctest", "playwright", "cypress", "karma", "behave", "unittest", "pest"),
    }
)
_LINT_TOOLS = frozenset(
    {
        *("ruff", "flake8", "pylint", "eslint", "golangci-lint", "rubocop", "stylelint"),
        *("biome", "pre-commit", "shellcheck", "hadolint", "tflint", "ktlint", "swiftlint"),
        *("clang-tidy", "markdownlint", "yamllint", "pyflakes", "bandit", "oxlint", "vet"),
        *("sqlfluff", "buf", "actionlint", "vale", "codespell", "staticcheck", "revive"),
        *("phpstan", "psalm", "phpcs", "detekt", "cppcheck", "standardrb", "credo"),
    }
)
_TYPECHECK_TOOLS = frozenset({"mypy", "pyright", "tsc", "vue-tsc", "pytype", "basedpyright"})
_FORMAT_TOOLS = frozenset(
    {"black", "isort", "prettier", "gofmt", "clang-format", "rustfmt", "pint", "php-cs-fixer"}
)
_BUILD_TOOLS = frozenset({"cmake", "webpack", "rollup", "esbuild", "bazel", "ninja", "meson"})
_DEPLOY_TOOLS = frozenset(
    {
        *("kubectl", "helm", "fly", "flyctl", "vercel", "netlify", "ansible-playbook"),
        *("serverless", "sls", "cap", "firebase", "heroku", "skaffold", "argocd", "kamal"),
    }
)
_DEPLOY_VERBS = frozenset(
    {
        *("apply", "rollout", "deploy", "upgrade", "install", "rollback", "release", "publish"),
        *("push", "up", "run", "scale", "set", "replace", "patch", "sync", "launch", "redeploy"),
    }
)
_LOOK_VERBS = frozenset({"ls", "list", "inspect", "logs", "whoami", "env", "dev", "login"})
_TASK_WORDS = {
    **dict.fromkeys(("test", "nextest", "e2e"), "test"),
    **dict.fromkeys(("lint", "clippy"), "lint"),
    "build": "build",
    "typecheck": "typecheck",
    **dict.fromkeys(("beta", "release", "deploy"), "deploy"),
}
_INFRA_TOOLS = frozenset({"terraform", "tofu", "pulumi", "terragrunt", "cdk"})
_MIGRATE_TOOLS = frozenset({"alembic", "flyway", "goose", "dbmate", "liquibase", "atlas"})
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_TASK_RUNNERS = frozenset({"make", "just", "task", "invoke", "rake", "mage", "nx", "turbo"})

_PHRASES = {
    "test": "Run tests with `{}`.",
    "lint": "Lint with `{}`.",
    "typecheck": "Type-check with `{}`.",
    "format": "Format code with `{}`.",
    "build": "Build with `{}`.",
    "deploy": "Deploy with `{}`.",
    "infra": "Plan/apply infrastructure with `{}`.",
    "migrate": "Run database migrations with `{}`.",
    "makemigrations": "Create database migrations with `{}`.",
    "install": "Install dependencies with `{}`.",
    "services": "Start the local services with `{}`.",
}
_TITLES = {
    "test": "Run tests",
    "lint": "Lint",
    "typecheck": "Type-check",
    "format": "Format",
    "build": "Build",
    "deploy": "Deploy",
    "infra": "Infrastructure",
    "migrate": "Migrations",
    "makemigrations": "Create migrations",
    "install": "Install dependencies",
    "services": "Local services",
}
_FAILURE = re.compile(
    r"""(?im)^(?:exit\s+code:?\s*[1-9]|error\b|fatal:|npm\s+err!|e\s{2,}\S|failed\b|fail\b|--- fail|
        traceback\s+\(most\s+recent\s+call\s+last\))
      | command\s+not\s+found | \b[1-9]\d*\s+(?:failed|errors?)\b""",
    re.VERBOSE,
)
_ENV_ERROR = re.compile(
    r"""modulenotfounderror|importerror|no\s+module\s+named|cannot\s+find\s+module|command\s+not\s+found|
        is\s+not\s+recognized\s+as|no\s+such\s+file\s+or\s+directory|\benoent\b|permission\s+denied|
        \beacces\b|connection\s+refused|econnrefused|could\s*n[o']t\s+connect|unable\s+to\s+connect|
        \btimed\s+out\b|\btimeout\b|unauthori[sz]ed|forbidden|\b401\b|\b403\b|credential|
        logged\s+in|not\s+authenticated|authentication\s+failed|wrongpass|noauth|access\s+denied|
        unsupported|failed\s+to\s+select\s+a\s+version|version\s+conflict|conflict\s+with|
        incompatible|requires\s+python|no\s+matching\s+distribution|could\s+not\s+find\s+a\s+version|
        eresolve|peer\s+dep|address\s+already\s+in\s+use|eaddrinuse|port\s+is\s+already\s+allocated|
        no\s+such\s+table|relation\s+"?[\w.]+"?\s+does\s+not\s+exist|unapplied\s+migration|
        out\s+of\s+memory|no\s+space\s+left|certificate|ssl\s+error|environment\s+variable|
        is\s+not\s+set|lockfile|lock\s+file|out\s+of\s+date|not\s+installed|missing\s+dependency""",
    re.VERBOSE | re.IGNORECASE,
)
_ERROR_LINE = re.compile(r"error|fail|exception|denied|refused|not found|unauthori", re.I)


@dataclass(frozen=True)
class _Run:
    use_index: int
    result_index: int
    use_position: int
    result_position: int
    command: str
    ok: bool
    output: str
    key: str
    category: str | None


def _split_words(part: str) -> list[str]:
    try:
        return shlex.split(part)
    except ValueError:
        return part.split()


def _command_parts(command: str) -> list[list[str]]:
    """The simple commands of a shell line, each as words without env assignments, `cd`
    steps and runner prefixes (uv run, npx, python -m …)."""
    parts = []
    for piece in re.split(r"&&|\|\||;|\|", command):
        words = _split_words(piece.strip())
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if words and words[0] == "env":
            words = words[1:]
            while words and "=" in words[0]:
                words = words[1:]
        if not words or words[0] == "cd":
            continue
        changed = True
        while changed and words:
            changed = False
            for prefix in _RUNNER_PREFIXES:
                if tuple(words[: len(prefix)]) == prefix and len(words) > len(prefix):
                    words = words[len(prefix) :]
                    changed = True
        if words:
            parts.append(words)
    return parts


def _script_category(name: str) -> str | None:
    name = name.lower()
    table = (
        (("makemigrations",), "makemigrations"),
        (("e2e", "test", "spec"), "test"),
        (("lint",), "lint"),
        (("typecheck", "type-check", "types", "tsc", "mypy"), "typecheck"),
        (("format", "fmt", "prettier"), "format"),
        (("build", "compile", "bundle", "dist"), "build"),
        (("deploy", "release", "publish", "ship", "rollout"), "deploy"),
        (("plan", "apply"), "infra"),
        (("migrat", "db:"), "migrate"),
        (("check", "verify", "ci", "precommit", "pre-commit"), "lint"),
        (("install", "setup", "bootstrap", "deps"), "install"),
    )
    for needles, category in table:
        if any(n in name for n in needles):
            return category
    return None


def low_tool_takes_flags_first(tool: str) -> bool:
    return tool.lower() in ("mvn", "mvnw", "gradle", "gradlew", "./mvnw", "./gradlew")


def _classify_words(words: list[str]) -> tuple[str, str | None]:
    """(family key, category or None) of one simple command."""
    tool = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if tool == "php" and args[:1] == ["artisan"]:  # Laravel's manage.py
        tool, args = "manage.py", args[1:]
    if (
        tool in ("python", "python3", "py", "bash", "sh", "node", "ruby", "perl", "php")
        and args
        and (args[0].endswith((".py", ".sh", ".js", ".rb", ".pl")) or "/" in args[0])
        and not args[0].startswith("-")
    ):
        tool, args = args[0].rsplit("/", 1)[-1], args[1:]
    if low_tool_takes_flags_first(tool):  # `mvn -q test`: the goal comes after the flags
        args = [a for a in args if not a.startswith("-")] + [a for a in args if a.startswith("-")]
    sub = args[0] if args and not args[0].startswith("-") else ""
    key = f"{tool} {sub}".strip() if sub and "/" not in sub and "." not in sub.strip(".") else tool
    low, low_sub = tool.lower(), sub.lower()
    positional = [a for a in args[1:] if not a.startswith("-")]

    if low in ("test", "lint", "build", "e2e", "typecheck") and not (
        args and args[0][:1] in "-$\"'["
    ):
        # a script name left by a runner prefix (`deno task test`, `turbo run build`), not the
        # shell's `test -f x`
        return key, _script_category(low)
    if low in _TRIVIAL:
        return key, None
    if low in _TEST_TOOLS:
        return tool, "test"
    if low in _TYPECHECK_TOOLS:
        return tool, "typecheck"
    if low == "ruff":
        return key, "format" if low_sub == "format" else "lint"
    if low in _LINT_TOOLS or re.fullmatch(r"[\w-]+-lint|[\w-]+lint", low):  # ansible-lint, helmlint
        return tool if low != "vet" else key, "lint"
    if low in _FORMAT_TOOLS:
        return tool, "format"
    if low in ("go", "cargo", "dotnet", "deno", "swift", "mix", "zig", "flutter", "dart"):
        if low_sub in ("test", "nextest"):
            return key, "test"
        if low_sub in ("build", "check"):
            return key, "build"
        if low_sub in ("vet", "clippy", "lint", "analyze"):
            return key, "lint"
        if low_sub in ("fmt", "format"):
            return key, "format"
        if low_sub in ("mod", "fetch") and (
            positional[:1] in (["download"], ["tidy"]) or low == "cargo"
        ):
            return key, "install"
        # `cargo insta test`, `cargo nextest run`: a plugin and then the task; `mix precommit`:
        # a project alias named for what it does
        for word in (w.lower() for w in positional[:2]):
            if word in _TASK_WORDS:
                return key, _TASK_WORDS[word]
        return key, _script_category(low_sub) if low_sub and low in ("mix", "deno") else None
    if low in _PACKAGE_MANAGERS:
        # a workspace filter before the script: `pnpm --filter web test`, `yarn workspace web test`
        if args[:1] in (["--filter"], ["-F"], ["-C"], ["--dir"], ["workspace"]) and len(args) > 2:
            return _classify_words([tool, *args[2:]])
        if low_sub in ("install", "i", "ci") and not positional:
            return key, "install"
        if low == "yarn" and not sub:
            return key, "install"
        if low_sub == "run" and args[1:2]:
            script = args[1]
            return f"{tool} run {script}", _script_category(script)
        if low_sub in _TEST_TOOLS or low_sub in _LINT_TOOLS or low_sub in _TYPECHECK_TOOLS:
            return key, _classify_words(args)[1]
        if low_sub in (
            "add",
            "remove",
            "uninstall",
            "update",
            "upgrade",
            "init",
            "create",
            "dev",
            "start",
            "serve",
            "exec",
            "dlx",
            "link",
            "publish",
            "version",
            "outdated",
        ):
            return key, None
        return key, _script_category(sub) if sub else None
    if low in ("gradle", "gradlew", "mvn", "mvnw", "sbt", "lein", "ant"):
        low_sub = low_sub.rsplit(":", 1)[-1]  # `:app:testDebugUnitTest`: the task of a module
        if "format" in low_sub or low_sub in ("spotlessapply",):
            return key, "format"
        if low_sub.startswith("test") and low not in ("mvn", "mvnw"):  # testDebugUnitTest
            return key, "test"
        if low_sub in ("test", "check", "verify") and low not in ("mvn", "mvnw"):
            return key, "test" if low_sub == "test" else "lint"
        if low_sub in ("test", "verify"):
            return key, "test"
        if low_sub.startswith(("build", "assemble", "bundle", "package", "install", "compile")):
            return key, "build"
        if low_sub in ("lint", "ktlintcheck", "detekt", "spotlesscheck", "checkstyle:check"):
            return key, "lint"
        return key, None
    if low == "dbt":
        return key, {"run": "build", "build": "build", "test": "test", "compile": "build"}.get(
            low_sub
        )
    if low in _BUILD_TOOLS:
        return key, "build"
    if low in _TASK_RUNNERS:
        return key, _script_category(sub) if sub else "build"
    if low == "manage.py":
        if low_sub == "makemigrations":
            return key, "makemigrations"
        if low_sub == "migrate":
            return key, "migrate"
        if low_sub == "test":
            return key, "test"
        if low_sub == "check":
            return key, "lint"
        return key, None
    if low in _MIGRATE_TOOLS or (low in ("prisma", "knex", "sequelize") and "migrat" in low_sub):
        return key, "migrate"
    if low in ("rails", "rake", "bin/rails") and low_sub.startswith("db:"):
        return key, "migrate"
    if low in _INFRA_TOOLS:
        if low_sub in ("fmt", "validate"):
            return key, "lint"
        if low_sub in ("plan", "apply", "up", "preview", "deploy", "init"):
            return key, "infra"
        return key, None
    if low in _DEPLOY_TOOLS:
        # Only a verb that changes what runs deploys: `kubectl top`, `kubectl get`, `helm list`,
        # `fly status` only look.
        if low in ("vercel", "ansible-playbook", "cap") and low_sub not in _LOOK_VERBS:
            return key, "deploy"
        verbs = {a.lower() for a in args if not a.startswith("-")}
        return key, "deploy" if low_sub in _DEPLOY_VERBS or (
            low == "argocd" and "sync" in verbs
        ) else None
    if low in ("docker", "docker-compose", "podman"):
        if low == "docker" and low_sub == "compose":
            low_sub = positional[0].lower() if positional else ""
            key = f"docker compose {low_sub}".strip()
        if low_sub == "build":
            return key, "build"
        if low_sub == "push":
            return key, "deploy"
        if low_sub == "up":
            return key, "services"
        return key, None
    if low == "composer" and low_sub == "run" and args[1:2]:  # a script, like `npm run lint`
        return f"composer run {args[1]}", _script_category(args[1])
    if low in ("pip", "pip3", "pipenv", "poetry", "uv", "bundle", "composer", "conda"):
        flags = set(args)
        if low_sub in ("sync", "lock") or (low_sub == "install" and not positional):
            return key, "install"
        if low_sub == "install" and flags & {"-r", "--requirement", "-e", "--editable"}:
            return key, "install"
        if low_sub == "build":
            return key, "build"
        return key, None
    if low == "build":  # python -m build
        return key, "build"
    category = _script_category(tool.rsplit(".", 1)[0]) if "." in tool else None
    if category is None and low_sub in ("lint", "test", "build", "fmt", "format", "typecheck"):
        category = _script_category(low_sub)  # `helm lint`, `buf build`: the subcommand says it
    words_after = [a.lower() for a in args if not a.startswith("-")]
    if category is None and "deploy" in words_after[:3]:
        category = "deploy"  # `sam deploy`, `gcloud run deploy api`, `wrangler deploy`
    if category is None and low in ("cargo", "yarn", "pnpm", "nx", "xcodebuild", "fastlane"):
        # a workspace or target before the task: `yarn workspace web test`, `cargo nextest run`,
        # `pnpm --filter web test`, `xcodebuild -scheme App build`
        for word in (w for w in words_after if w in _TASK_WORDS):
            category = _TASK_WORDS[word]
            break
    if category is None and any(
        re.fullmatch(r"--?(?:run)?tests?", a, re.IGNORECASE) for a in args
    ):  # `Unity.exe -batchmode -runTests …`: the flag says what it does
        category = "test"
    return key, category


def _classify_command(command: str) -> tuple[str, str | None]:
    """(family key, category) of a shell line: the first part that has a category, else the
    key of its first part."""
    parts = _command_parts(command)
    if not parts:
        return "", None
    for words in parts:
        key, category = _classify_words(words)
        if category is not None:
            return key, category
    # the family of the first real step: `export X=… && celery …` is a celery command
    main = next((words for words in parts if words[0] not in _SETUP), parts[0])
    return _classify_words(main)[0], None


def shell_runs(expanded: Sequence[SourceRecord]) -> list[_Run]:
    uses: dict[str, tuple[int, int, str]] = {}
    runs: list[_Run] = []
    for position, record in enumerate(expanded):
        if record.type == ASSISTANT and isinstance(record.content, list):
            for block in record.content:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name = str(block.get("name", "")).lower()
                inp = block.get("input")
                if name not in _SHELL_TOOLS or not isinstance(inp, dict):
                    continue
                command = inp.get("command", inp.get("cmd"))
                if isinstance(command, list):
                    command = " ".join(str(c) for c in command)
                if isinstance(command, str) and command.strip():
                    uses[str(block.get("id", ""))] = (record.index, position, command.strip())
        elif record.type == TOOL_RESULT and record.tool_use_id in uses:
            use_index, use_position, command = uses.pop(record.tool_use_id)
            output = readable_text(record)
            if output is None:  # flagged, but the marker is gone: cannot tell what was ours
                continue
            ok = not record.is_error and not _FAILURE.search(output)
            key, category = _classify_command(command)
            runs.append(
                _Run(
                    use_index=use_index,
                    result_index=record.index,
                    use_position=use_position,
                    result_position=position,
                    command=command,
                    ok=ok,
                    output=output,
                    key=key,
                    category=category,
                )
            )
    return runs


_CHAIN = re.compile(r"&&|\|\||;")
# Steps that only prepare the next command (where it runs, its environment): they stay with it.
_SETUP = frozenset({"cd", "pushd", "export", "source", ".", "set", "nvm", "conda", "workon"})


def _segments(command: str) -> list[str]:
    """The command line cut at `&&`, `||` and `;` outside quotes (a pipe stays in its part)."""
    pieces, start, quote = [], 0, ""
    for match in re.finditer(r"""['"]|&&|\|\||;""", command):
        token = match.group()
        if token in "'\"":
            quote = "" if quote == token else (quote or token)
        elif not quote:
            pieces.append(command[start : match.start()])
            start = match.end()
    pieces.append(command[start:])
    return [p.strip() for p in pieces if p.strip()]


def command_units(command: str) -> list[tuple[str, str, str]]:
    """(text, family key, category) of each thing a shell line does that is worth keeping.

    A chained line (`pnpm lint && pnpm run deploy:staging`) is cut into its commands, and each
    categorised one is a unit of its own with the setup steps before it (`cd web && pnpm lint`;
    a `cd` or `export` holds for every command after it):
    joined, a lint and a deploy would tell agents to deploy whenever they lint. Commands of no
    category (`git add`, `echo`) are left out of every unit."""
    if not _CHAIN.search(command):
        key, category = _classify_command(command)
        return [(command, key, category)] if category else []
    units, setup = [], []
    for segment in _segments(command):
        words = _split_words(segment)
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if not words or words[0] in _SETUP:
            setup.append(segment)
            continue
        key, category = _classify_command(segment)
        if category is not None:  # a `cd` or `export` holds for the rest of the line
            units.append((" && ".join([*setup, segment]), key, category))
    return units


# A deploy with concrete arguments is this release, not how the team deploys: a variable set on
# the command line (`make deploy-dags ENV=prod`), a version tag, or production named outright.
_ONE_OFF_DEPLOY = re.compile(
    r"""\s[A-Za-z_][A-Za-z0-9_]*=\S|--(?:tag|version|env(?:ironment)?)\b|\bv?\d+\.\d+\.\d+\b|
        :\d+(?:\.\d+)+\b|\b(?:prod|production|live)\b""",
    re.VERBOSE | re.IGNORECASE,
)


# A test run narrowed to the tests of this task (one file, a name filter) is no way to run the
# project's tests: `rspec spec/jobs/digest_job_spec.rb`, `gradlew test --tests '*Migration*'`,
# `flutter test test/push/push_service_test.dart` (any source file, whatever its language).
_ONE_TEST = re.compile(
    r"""\s(?:--tests?|-k|-run|--grep|-t|--testNamePattern)[\s=]|\s--filter=|\btest\s+--filter\s|::|
        \s(?:[\w.-]+/)+[\w-]+(?:\.[\w-]+)*\.[a-z]{1,5}\b(?![/.])""",
    re.VERBOSE,
)


# A step that only makes sense once: a release tag, a restart of a running deployment, a push of
# this branch.
_ONE_OFF_STEP = re.compile(
    r"""\brelease[-_:]?tag\b|\btag\s+v?\d|\brollout\s+restart\b|\brestart\s+deploy|
        \bgit\s+push\s+\S+\s+\S+|\bv\d+\.\d+\.\d+\b""",
    re.VERBOSE,
)


# The toolchain's own default invocation, with nothing of this project in it (`cargo test`,
# `sbt test`, `mix format`, `cabal build all`, `go test ./...`): any agent runs it unprompted, so a
# reviewer keeps no memory of it. A project's own entry point (`make test`, `./bin/tf`, `pnpm
# lint`, `mix precommit`) or one with the project's arguments (`--preset`, a package) is kept.
_TOOLCHAIN_DEFAULTS = {
    "cargo": {"build", "test", "check", "fmt", "clippy", "run"},
    "sbt": {"test", "compile", "package"},
    "mix": {"test", "format", "compile"},
    "cabal": {"build", "test"},
    "stack": {"build", "test"},
    "go": {"test", "build", "vet"},
    "swift": {"build", "test"},
    "dotnet": {"build", "test"},
    "flutter": {"test", "build"},
    "dart": {"test", "format"},
    "mvn": {"test", "package", "verify", "install"},
    "./mvnw": {"test", "package", "verify", "install"},
    "gradle": {"test", "build"},
    "./gradlew": {"test", "build"},
    "zig": {"build"},
    "nix": {"build"},
    "cmake": {"--build"},
}
_GENERIC_ARGS = re.compile(
    r"^(?:\./\.\.\.|\.\.\.|\.|all|-q|--quiet|-v|--verbose|-L|\.#default|--nologo|q|quiet|minimal|"
    r"build(?:/\w+)?)$"
)


def toolchain_default(text: str) -> bool:
    """Is `text` (one command) its toolchain's default invocation (`_TOOLCHAIN_DEFAULTS`)?"""
    if _CHAIN.search(text):
        return False
    words = _split_words(text)
    verbs = _TOOLCHAIN_DEFAULTS.get(words[0] if words else "")
    return bool(
        verbs
        and len(words) >= 2
        and words[1] in verbs
        and all(_GENERIC_ARGS.match(w) for w in words[2:])
    )


def command_memories(runs: Sequence[_Run]) -> list[Draft]:
    best: dict[str, tuple[_Run, str, str]] = {}
    order: list[str] = []
    for run in runs:
        if not run.ok or len(run.command) > 160 or "\n" in run.command:
            continue
        units = command_units(run.command)
        if len(_segments(run.command)) > 1 and (
            any(c == "deploy" and _ONE_OFF_DEPLOY.search(t) for t, _, c in units)
            or _ONE_OFF_STEP.search(run.command)
        ):
            # "make lint && make deploy-dags ENV=prod", "just fmt && just release-tag v2.3.1":
            # a line run once for this release; its lint is no more the team's way than its deploy
            continue
        for text, key, category in units:
            if category == "deploy" and _ONE_OFF_DEPLOY.search(text):
                continue
            if category in ("test", "lint", "format", "typecheck") and _ONE_TEST.search(text):
                continue
            # output plumbing is not part of how to run it: `… 2>&1 | tail -3`
            text = re.sub(r"\s*2>&1|\s*\|\s*(?:tail|head|less|more|grep|tee)\b.*$", "", text)
            if toolchain_default(text):
                continue
            current = best.get(key)
            if current is None:
                order.append(key)
                best[key] = (run, text, category)
            elif len(text) < len(current[1]):
                best[key] = (run, text, category)
    drafts = []
    for key in order:
        run, text, category = best[key]
        command = redact(text)[0]
        drafts.append(
            Draft(
                kind=Kind.PROJECT.value,
                content=_PHRASES[category].format(command),
                importance=1,
                record_start=run.use_index,
                record_end=run.result_index,
                rule="command",
                subcategory=Subcategory.OPS.value,
                title=clip(f"{_TITLES[category]}: {command}", MAX_TITLE_CHARS),
                from_user=False,
            )
        )
    return drafts


def _similar(a: _Run, b: _Run) -> bool:
    if a.key and a.key == b.key:
        return True
    if a.category is not None and a.category == b.category:
        return True
    return a.command == b.command


def _error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in (_ENV_ERROR, _ERROR_LINE):
        for line in lines:
            if pattern.search(line):
                return clip(re.sub(r"^E\s+", "", line), 160).rstrip(".。")
    return clip(lines[0], 160).rstrip(".。") if lines else "an error"


def _explanation(
    expanded: Sequence[SourceRecord], start: int, end: int, about: Sequence[str]
) -> str:
    """The first assistant (else user) text between two positions: up to two of its sentences,
    preferring those that share a term with the first of `about` (the error line), then with
    the next (the commands)."""
    topics = [set(tokenize(a)) - {"fail", "error", "succeed", "py"} for a in about]
    for wanted in (ASSISTANT, USER):
        for record in expanded[start:end]:
            if record.type != wanted:
                continue
            text = readable_text(record) if wanted == USER else text_of(record.content)
            text = (text or "").strip()
            if not text:
                continue
            sentences = [p.strip() for p in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text)]
            sentences = [p for p in sentences if p]
            chosen = sentences[:2]
            for topic in topics:
                relevant = [p for p in sentences if topic & set(tokenize(p))]
                if relevant:
                    chosen = relevant[:2]
                    break
            joiner = "" if CJK.search(text) else " "
            return clip(joiner.join(chosen).strip(), 240)
    return ""


# Output of code that is wrong (not of an environment that is): the fix is an edit.
_CODE_FAILURE = re.compile(
    r"""AssertionError|\bassert\s|Failures:\s*[1-9]|\bFAILED\s+\S+::|---\s+FAIL|panicked\s+at|
        SyntaxError|TypeError|NameError|AttributeError|ReferenceError|compilation\s+(?:error|failed)|
        cannot\s+find\s+symbol|undefined:\s|\bexpected\b.{0,60}\b(?:got|received|but\s+was)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_EDIT_TOOLS = frozenset(
    {
        *("edit", "editfile", "edit_file", "write", "writefile", "write_file", "multiedit"),
        *("str_replace", "str_replace_editor", "str_replace_based_edit_tool", "apply_patch"),
        *("create", "create_file", "replace", "patch", "insert", "notebookedit"),
    }
)


def _edited_between(expanded: Sequence[SourceRecord], start: int, end: int) -> bool:
    """Did the assistant edit a file between positions `start` and `end` of `expanded`?"""
    for record in expanded[start:end]:
        if record.type != ASSISTANT or not isinstance(record.content, list):
            continue
        for block in record.content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and str(block.get("name", "")).lower() in _EDIT_TOOLS
            ):
                return True
    return False


def lesson_memories(expanded: Sequence[SourceRecord], runs: Sequence[_Run]) -> list[Draft]:
    drafts: list[Draft] = []
    used_successes: set[int] = set()
    for i, failed in enumerate(runs):
        if failed.ok:
            continue
        success = next((r for r in runs[i + 1 :] if r.ok and _similar(failed, r)), None)
        if success is None or success.result_index in used_successes:
            continue
        # Output that looks like broken code is a lesson only when no edit fixed it: another
        # command made it pass (`npx jest` → `pnpm test`, `cargo test` → `cargo insta test`).
        if _CODE_FAILURE.search(failed.output) and (
            success.key == failed.key
            or _edited_between(expanded, failed.result_position, success.use_position)
        ):
            continue
        # An environment problem by what it says, or by how it was fixed: the same command
        # worked again without any file being edited in between (a version switched, a service
        # started, a variable exported).
        if not _ENV_ERROR.search(failed.output) and _edited_between(
            expanded, failed.result_position, success.use_position
        ):
            continue
        about = (_error_line(failed.output), f"{failed.command} {success.command}")
        explanation = _explanation(
            expanded, failed.result_position + 1, success.use_position, about
        )
        if not explanation or re.search(r"\bas\s+expected\b|符合预期|预期之中", explanation, re.I):
            # "Red as expected: …": a test written to fail first is no problem of the environment
            continue
        used_successes.add(success.result_index)
        fixes = [
            r.command
            for r in runs[i + 1 :]
            if r.result_position < success.use_position
            and r.ok
            and not _similar(r, failed)
            and _classify_words(_command_parts(r.command)[0])[0].split(" ")[0] not in _TRIVIAL
            if _command_parts(r.command)
        ][:2]
        failed_command = redact(failed.command)[0]
        head = f"`{failed_command}` failed: {_error_line(failed.output)}. Fix: "
        tail = ""
        if fixes:
            tail += " Ran " + ", then ".join(f"`{redact(c)[0]}`" for c in fixes) + "."
        tail += f" Then `{redact(success.command)[0]}` succeeded."
        # The command that worked is the lesson's point: the explanation gives way to it.
        room = max(80, MAX_CONTENT_CHARS - len(head) - len(tail))
        content = head + clip(explanation, room) + tail
        drafts.append(
            Draft(
                kind=Kind.LESSON.value,
                content=content,
                importance=2,
                record_start=failed.use_index,
                record_end=success.result_index,
                rule="error_fix",
                title=clip(
                    f"{failed.key or failed_command}: {_error_line(failed.output)}", MAX_TITLE_CHARS
                ),
                from_user=False,
            )
        )
    return drafts
