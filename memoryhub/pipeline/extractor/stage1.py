"""Stage-1 output of the offline extractor: `offline_stage1` builds oh-my-pi's stage-1 JSON
from its memories (raw_memory in Codex's layout, seed-algorithms §4).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
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
