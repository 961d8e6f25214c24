"""Recall files (directory memories, seed-algorithms §1.4 and §2): frontmatter, the manifest,
the side LLM call that picks at most five files for a query, and the <system-reminder> text.

The selector is best effort, as in MewCode and Claude Code: any failure (timeout, provider
error, budget, garbage answer) selects nothing and is only logged; the LLM layer records the
call. Differences from MewCode:
- The manifest shows each file's stored path (relative to its memory directory) and the
  answer may name a file by that path or by its basename (MewCode compared the answer with
  relative names while showing absolute ones, §6.5).
- One call, no repair request, within SELECTOR_BUDGET_SECONDS of wall time: the budget (or
  the project's shorter LLM timeout) is shared by the SDK's attempts.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memoryhub.llm import client as llm
from memoryhub.llm import services as llm_services
from memoryhub.memories import markup
from memoryhub.memories.text import tokenize
from memoryhub.recall.models import RecallFile
from projects.models import Project

logger = logging.getLogger(__name__)

FRONTMATTER_MAX_LINES = 30
FRONTMATTER_RE = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)
MAX_SELECTED = 5
SELECTOR_BUDGET_SECONDS = 8.0
SELECTOR_PURPOSE = "recall_select"
HEADER = "The following relevant memories from prior conversations may help:\n"
# Claude Code's words, verbatim (seed-algorithms §1.4).
FRESHNESS = (
    "This memory is {days} days old. Memories are point-in-time observations, not live state "
    "— claims about code behavior or file:line citations may be outdated. Verify against "
    "current code before asserting as fact."
)
SELECTOR_SYSTEM_PROMPT = (
    "A coding agent is about to work on the user's query below. You are choosing which of its "
    "saved memory files it should read first. Each memory is listed with its scope, type, "
    "path, last-modified time and a one-line description.\n\n"
    "Pick at most 5 memories that will clearly help with this query, judging only by their "
    "descriptions and names. Be selective: when you are not sure a memory helps, leave it "
    "out. An empty list is a perfectly good answer.\n"
    "If the message lists tools the agent used recently, skip memories that merely document "
    "how to use those tools (the agent already knows), but do pick memories that warn about "
    "pitfalls, gotchas or known problems with them.\n\n"
    "Answer with JSON only, no prose and no code fences, exactly in this shape: "
    '{"selected_memories": ["path/of/first.md", "second.md"]}'
)


@dataclass(frozen=True)
class Frontmatter:
    name: str = ""
    description: str = ""
    type: str = ""


def _head(content: str, lines: int) -> str:
    """The first `lines` lines of `content`, line ends included (as a file read would)."""
    end = -1
    for _ in range(lines):
        end = content.find("\n", end + 1)
        if end == -1:
            return content
    return content[: end + 1]


def parse_frontmatter(content: str) -> Frontmatter:
    """name / description / type from the frontmatter within the first 30 lines (MewCode's
    regex; "key: value" split at the first colon, matching quotes stripped; a type outside
    user/feedback/project/reference is dropped)."""
    head = _head(content.replace("\r\n", "\n"), FRONTMATTER_MAX_LINES)
    match = FRONTMATTER_RE.match(head)
    if match is None:
        return Frontmatter()
    fields = {"name": "", "description": "", "type": ""}
    for line in match.group(1).split("\n"):
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if key in fields:
            fields[key] = value
    if fields["type"] not in RecallFile.Type.values:
        fields["type"] = ""
    return Frontmatter(
        name=fields["name"][: RecallFile.NAME_MAX_CHARS],
        description=fields["description"][: RecallFile.DESCRIPTION_MAX_CHARS],
        type=fields["type"],
    )


def iso_ms(moment: datetime) -> str:
    """2026-01-31T09:05:03.042Z — the manifest's timestamp."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def manifest_line(file: RecallFile) -> str:
    type_tag = f"[{file.type}] " if file.type else ""
    line = f"- [{file.scope}-scope] {type_tag}{file.path} ({iso_ms(file.updated_at)})"
    return f"{line}: {file.description}" if file.description else line


def manifest(files: Sequence[RecallFile]) -> str:
    return "\n".join(manifest_line(f) for f in files)


def selector_user_message(
    query: str, files: Sequence[RecallFile], recent_tools: Sequence[str]
) -> str:
    message = f"Query: {query}\n\nAvailable memories:\n{manifest(files)}"
    if recent_tools:
        message += "\n\nRecently used tools: " + ", ".join(recent_tools)
    return message


def offline_selection(query: str, files: Sequence[RecallFile]) -> list[str]:
    """The offline provider's pick: the files whose name and description share the most terms
    with the query (at least one), at most five; ties keep the candidates' order (newest
    first)."""
    wanted = set(tokenize(query))
    scored = []
    for position, file in enumerate(files):
        shared = len(wanted & set(tokenize(f"{file.name} {file.description}")))
        if shared:
            scored.append((-shared, position, file.path))
    return [path for _, _, path in sorted(scored)[:MAX_SELECTED]]


def _selected_names(answer: Any) -> list[str]:
    if not isinstance(answer, dict) or not isinstance(answer.get("selected_memories"), list):
        raise ValueError('expected {"selected_memories": [...]}')
    return [name for name in answer["selected_memories"] if isinstance(name, str)]


def match_selection(names: Sequence[str], files: Sequence[RecallFile]) -> list[RecallFile]:
    """The files the answer names, by path or basename (the newest file when a name is
    ambiguous), without repeats, at most five."""
    by_name: dict[str, RecallFile] = {}
    for file in files:  # newest first: setdefault keeps the newest
        by_name.setdefault(file.path, file)
    for file in files:
        by_name.setdefault(file.basename, file)
    chosen: list[RecallFile] = []
    for name in names:
        found = by_name.get(name.strip().removeprefix("./"))
        if found is not None and found not in chosen:
            chosen.append(found)
    return chosen[:MAX_SELECTED]


def select(
    *,
    project: Project,
    query: str,
    files: Sequence[RecallFile],
    recent_tools: Sequence[str] = (),
) -> list[RecallFile]:
    """Up to five of `files` that help with `query`, chosen by the smol model; [] on any
    failure."""
    if not files or not query.strip():
        return []
    try:
        config = llm.resolve_config(project, "smol")
    except llm.LlmError as exc:
        logger.warning("Recall selector skipped for %s: %s", project.slug, exc)
        return []
    # The SDK retries within the budget: each attempt gets an equal share of it.
    budget = min(SELECTOR_BUDGET_SECONDS, config.timeout)
    request = llm.LlmRequest(
        purpose=SELECTOR_PURPOSE,
        role="smol",
        messages=[
            {"role": "system", "content": SELECTOR_SYSTEM_PROMPT},
            {"role": "user", "content": selector_user_message(query, files, recent_tools)},
        ],
        offline=lambda: json.dumps({"selected_memories": offline_selection(query, files)}),
        max_tokens=512,
        project=project,
        timeout=budget / (config.max_retries + 1),
    )
    try:
        result = llm.complete(request)
    except llm.LlmError as exc:
        logger.warning("Recall selector failed for %s: %s", project.slug, exc)
        return []
    except Exception:
        # Best effort by contract: even a bug here must not fail the agent's turn.
        logger.exception("Recall selector crashed for %s", project.slug)
        return []
    try:
        names = _selected_names(llm.extract_json(result.text))
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        logger.warning("Recall selector call %s gave an unusable answer: %s", result.call_id, exc)
        llm_services.llm_call_mark_invalid(call_id=result.call_id, error=f"recall selector: {exc}")
        return []
    return match_selection(names, files)


def age_days(updated_at: datetime, now: datetime) -> int:
    """Whole days since the file was saved, never negative (Claude Code's memoryAgeDays)."""
    return max((now - updated_at) // timedelta(days=1), 0)


def age_label(days: int) -> str:
    return {0: "today", 1: "yesterday"}.get(days, f"{days} days ago")


def render(files: Sequence[RecallFile], now: datetime) -> str:
    """The body of the recall files' <system-reminder> (MewCode's render_reminder); "" when
    there are none."""
    if not files:
        return ""
    parts = [HEADER]
    for file in files:
        days = age_days(file.updated_at, now)
        parts.append(f"## Memory: {posixpath.basename(file.path)} (saved {age_label(days)})\n")
        if days > 1:
            parts.append(FRESHNESS.format(days=days) + "\n")
        parts.append(markup.neutralize(file.content) + "\n\n---\n")
    return "\n".join(parts)
