"""Stage-1 output of the offline extractor, and MewCode's memories.md.

`offline_stage1` builds oh-my-pi's stage-1 JSON from those memories (raw_memory in Codex's
layout, seed-algorithms §4). `offline_memories_md` writes MewCode's four-section memories.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memoryhub.core.redaction import redact
from memoryhub.memories.kinds import Kind
from memoryhub.memories.text import STOPWORDS
from memoryhub.pipeline.extractor.commands import shell_runs
from memoryhub.pipeline.extractor.keywords import GENERIC_WORDS, ExtractedMemory, clip
from memoryhub.pipeline.extractor.records import (
    SourceRecord,
    clean_user_text,
    expand_records,
    readable_text,
)
from memoryhub.pipeline.extractor.sentences import split_sentences
from memoryhub.sessions.records import (
    USER,
)

CATEGORY_PREFERENCES = "用户偏好"
CATEGORY_FEEDBACK = "纠正反馈"
CATEGORY_PROJECT = "项目知识"
CATEGORY_REFERENCES = "参考资料"
CATEGORIES = (CATEGORY_PREFERENCES, CATEGORY_FEEDBACK, CATEGORY_PROJECT, CATEGORY_REFERENCES)


def memory_category(kind: str) -> str:
    """MewCode's memories.md section for a kind: user and soul → 用户偏好, feedback → 纠正反馈,
    reference → 参考资料, every project-scoped kind → 项目知识."""
    if kind in (Kind.USER, Kind.SOUL):
        return CATEGORY_PREFERENCES
    if kind == Kind.FEEDBACK:
        return CATEGORY_FEEDBACK
    if kind == Kind.REFERENCE:
        return CATEGORY_REFERENCES
    return CATEGORY_PROJECT


def render_memories_md(sections: Mapping[str, Sequence[str]]) -> str:
    """The memories.md text: all four `### ` headers in order, `- ` lines, no placeholders."""
    lines = []
    for category in CATEGORIES:
        lines.append(f"### {category}")
        for entry in sections.get(category, ()):
            entry = re.sub(r"\s+", " ", entry).strip()
            if entry:
                lines.append(f"- {entry}")
    return "\n".join(lines) + "\n"


def offline_memories_md(memories: Iterable[ExtractedMemory]) -> str:
    """MewCode's four-category memories.md for `memories` (see memory_category)."""
    sections: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    for memory in memories:
        entry = redact(memory.content)[0]
        bucket = sections[memory_category(memory.kind)]
        if entry not in bucket:
            bucket.append(entry)
    return render_memories_md(sections)


def _first_task(expanded: Sequence[SourceRecord]) -> str:
    for record in expanded:
        if record.type != USER:
            continue
        text = readable_text(record)
        if text is None:
            continue
        text = clean_user_text(text).strip()
        if text:
            first = split_sentences(text)[0] if split_sentences(text) else text
            return clip(redact(first)[0], 120).rstrip("。.")
    return "an agent session"


def _slug(task: str, memories: Sequence[ExtractedMemory]) -> str | None:
    words = [
        w.lower()
        for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", task)
        if w.lower() not in STOPWORDS and w.lower() not in GENERIC_WORDS and len(w) > 1
    ]
    if not words:
        for memory in memories:
            words.extend(k for k in memory.keywords if re.fullmatch(r"[a-z][a-z0-9]*", k))
    slug = "_".join(dict.fromkeys(words[:4]))
    slug = re.sub(r"[^a-z0-9_]+", "_", slug).strip("_")[:40].strip("_")
    return slug or None


def offline_stage1(
    records: Sequence[SourceRecord], memories: Sequence[ExtractedMemory]
) -> dict[str, Any]:
    """oh-my-pi's stage-1 output {rollout_summary, rollout_slug, raw_memory}, built from the
    extractor's memories; empty strings and None when there is nothing durable. raw_memory
    follows Codex's layout (seed-algorithms §4)."""
    if not memories:
        return {"rollout_summary": "", "rollout_slug": None, "raw_memory": ""}
    expanded = expand_records(records)
    task = _first_task(expanded)
    runs = shell_runs(expanded)
    by_kind: Counter[str] = Counter(m.kind for m in memories)
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(by_kind.items()))
    titles = "; ".join(m.title for m in memories[:8])
    summary = f"Task: {task}. Durable memories ({counts}): {titles}."

    prefs = [m for m in memories if m.kind in (Kind.USER, Kind.SOUL, Kind.FEEDBACK)]
    steps = [m for m in memories if m.rule == "command"]
    problems = [m for m in memories if m.kind == Kind.LESSON]
    knowledge = [
        m
        for m in memories
        if m.kind not in (Kind.USER, Kind.SOUL, Kind.FEEDBACK, Kind.LESSON, Kind.REFERENCE)
        and m.rule != "command"
    ]
    references = [m for m in memories if m.kind == Kind.REFERENCE]
    if not runs:
        outcome = "uncertain"
    elif runs[-1].ok:
        outcome = "success"
    else:
        outcome = "fail"

    def bullets(items: Sequence[ExtractedMemory], empty: str = "- none") -> list[str]:
        return [f"- {m.content}" for m in items] or [empty]

    lines = [
        f"# {task}",
        "",
        f"Memory context: {len(records)} records, extracted offline by the rule-based extractor "
        "(no LLM).",
        "User preferences:" + ("" if prefs else " none observed"),
        *(bullets(prefs) if prefs else []),
        "",
        f"## Task: {task}",
        f"Outcome: {outcome}",
        "Key steps:",
        *bullets(steps),
        "Things that did not work / things that can be improved:",
        *bullets(problems),
        "Reusable knowledge:",
        *bullets(knowledge),
        "Pointers and references (annotate why each item matters):",
        *[f"- {m.content} (pointed to by the user)" for m in references],
    ]
    if not references:
        lines.append("- none")
    raw = redact("\n".join(lines).strip())[0]
    return {
        "rollout_summary": redact(clip(summary, 1200))[0],
        "rollout_slug": _slug(task, memories),
        "raw_memory": raw,
    }
