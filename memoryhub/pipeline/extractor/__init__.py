"""The offline stage-1 extractor: deterministic rules that turn a session into typed memories.

`extract(records)` reads MewCode records (seed 000 §1) and returns `ExtractedMemory` items in
the kind taxonomy of `memoryhub.memories.kinds`. It runs with no LLM and no database, and it
returns the same output for the same input every time. Precision comes before recall: a wrong
memory costs the team more than a missed one, so every rule below is anchored, and a sentence
that hedges, asks something or only matters for the task at hand is skipped.

The extractor is a package, one module per idea, each with its part of the rules:

* `records`: reading records (what is read, injected blocks, compact boundaries);
* `sentences`: the sentence rules (corrections, to-dos, prohibitions, preferences, profile,
  references, facts, "remember");
* `conventions`: conventions stated without a trigger word ("tabs, never spaces, in the
  Makefile");
* `scope`: what a statement is about (the team's project, the speaker's taste, the
  interaction), which decides its kind and so its scope;
* `statements`: durable statements no trigger rule catches, recognised by their structure
  (lexical classes and a small logistic model, weights in `statement_weights`, fitted by
  bench/fit_statement_model.py on the tuned corpus sessions);
* `commands`: shell-command classification (useful commands, one per command of a chained
  line; errors and their fixes);
* `keywords`: 8–13 keywords, redaction and dedupe of the output;
* `stage1`: oh-my-pi's stage-1 JSON.

`extract` keeps one memory per thing said: a command the speaker stated and that then ran is the
statement's memory (as project knowledge; a command the speaker asked for as feedback stays that
feedback), and the speaker's explanation that an error_fix lesson already quotes is that lesson,
unless the explanation is project or user knowledge of its own: then it stands and the lesson
goes. A toolchain's bare default command (`cargo test`) is no memory (`commands`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryhub.core.markers import strip_injections
from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.pipeline.extractor.commands import (
    _command_parts,
    command_memories,
    command_units,
    lesson_memories,
    shell_runs,
)
from memoryhub.pipeline.extractor.keywords import (
    MAX_KEYWORDS,
    MIN_KEYWORDS,
    ExtractedMemory,
    auto_keywords,
    finalise,
)
from memoryhub.pipeline.extractor.records import (
    SourceRecord,
    expand_records,
    readable_text,
    source_records,
)
from memoryhub.pipeline.extractor.sentences import user_memories
from memoryhub.pipeline.extractor.stage1 import offline_stage1

__all__ = [
    "MAX_KEYWORDS",
    "MIN_KEYWORDS",
    "ExtractedMemory",
    "SourceRecord",
    "auto_keywords",
    "expand_records",
    "extract",
    "offline_stage1",
    "readable_text",
    "source_records",
    "strip_injections",
]


# A project's own task entry point: `make flash`, `just seed`, `./bin/tf staging`, `npm run x`.
_RUNS_A_TASK = re.compile(
    r"^(?:make|just|task|mage|rake|(?:\./)?(?:bin|scripts?|tools)/[\w.-]+|\./[\w.-]+\.sh|"
    r"(?:npm|pnpm|yarn|bun)\s+run)\s+[\w:.-]+"
)


def _names_a_command(text: str) -> bool:
    """Does `text` quote (in backticks) a command that builds, tests, lints, flashes, deploys…?"""
    return any(
        command_units(span) or _RUNS_A_TASK.match(span)
        for span in re.findall(r"`([^`]{3,160})`", text)
    )


def extract(records: Sequence[SourceRecord]) -> list[ExtractedMemory]:
    """The durable memories of `records` (see the modules' docstrings for the rules)."""
    expanded = expand_records(records)
    runs = shell_runs(expanded)
    said = user_memories(expanded)
    # A command the speaker already stated ("run make lint before you push anything") is that
    # statement's memory; the run of it adds nothing.
    # A command the speaker stated ("run make lint before you push anything") and that then ran
    # is one memory: the statement, as project knowledge of how to run things.
    for d in said:
        # (the first sentence: a reason joined after a norm may quote a command of its own)
        first = re.split(r"(?<=[.!?])\s+|(?<=[。！？])", d.content, maxsplit=1)[0]
        if d.kind == Kind.RULE.value and _names_a_command(first):
            # "flashing goes through `make flash`", "打测试包用 `make apk-staging`": how a task is
            # run in this project is its ops knowledge, however it is phrased
            d.kind, d.subcategory = Kind.PROJECT.value, Subcategory.OPS.value
    commands = []
    for memory in command_memories(runs):
        command = re.search(r"`(.+)`", memory.content)
        # the command as said, or without its runner (`bundle exec fastlane test` → "fastlane test")
        forms = {command.group(1).lower()} if command else set()
        if command:
            forms |= {" ".join(words).lower() for words in _command_parts(command.group(1))[:1]}
        stating = [
            d
            for d in said
            if any(form in d.content.lower() for form in forms)
            # "改完给我看之前先跑 ./gradlew spotlessApply": a command the speaker asked for
            and d.kind in (Kind.RULE.value, Kind.PROJECT.value, Kind.FEEDBACK.value)
        ]
        for statement in stating:
            if statement.kind == Kind.RULE.value:
                statement.kind, statement.subcategory = Kind.PROJECT.value, Subcategory.OPS.value
        if not stating:
            commands.append(memory)
    lessons = lesson_memories(expanded, runs)
    # The speaker's explanation of a failure that a lesson already quotes ("本地跑 ./mvnw verify
    # 会起 Testcontainers，得先把 Docker 开着") is that lesson, not a second memory.
    quoted = [
        d for d in said if any(d.content.rstrip("。.") in lesson.content for lesson in lessons)
    ]
    # ...unless the speaker's explanation is a standing memory of its own ("我们有 dev / prod 两个
    # flavor，本地跑 `yarn android --mode=devDebug`"): then that statement is the memory, and the
    # lesson that quotes it says nothing more.
    standing = [d for d in quoted if d.kind in (Kind.PROJECT.value, Kind.USER.value)]
    lessons = [
        ls for ls in lessons if not any(d.content.rstrip("。.") in ls.content for d in standing)
    ]
    quoted = [d for d in quoted if d not in standing]
    drafts = [d for d in said if d not in quoted] + commands + lessons
    drafts.sort(key=lambda d: (d.record_start, d.record_end))
    return finalise(drafts)
