"""Three-pass tool-result trimming of resume output (seed 000 §2, layer 1).

Pass 1 and 2 decisions are frozen (the caller stores them), so resuming twice gives the same
bytes and an agent's prompt cache stays valid; pass 3 is recomputed on every resume.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryhub.sessions.conf import SessionConfig
from memoryhub.sessions.conversation import Message, has_tool_uses, is_tool_result_message

PERSISTED_OPEN = "<persisted-output>"
SNIPPED_OPEN = "<snipped>"


@dataclass
class TrimState:
    """Frozen decisions: ids sent verbatim once stay verbatim; replacements never change."""

    verbatim: set[str] = field(default_factory=set)
    replacements: dict[str, str] = field(default_factory=dict)


@dataclass
class NewDecisions:
    verbatim: list[str] = field(default_factory=list)
    # tool_use_id -> (replacement preview, full original content)
    persisted: dict[str, tuple[str, str]] = field(default_factory=dict)


def content_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def persisted_preview(text: str, url: str, config: SessionConfig) -> str:
    size_kb = len(text.encode()) / 1024
    return (
        f"{PERSISTED_OPEN}\nOutput too large ({size_kb:.1f}KB). Full output saved to:\n{url}\n\n"
        f"Preview (first {config.preview_chars} chars):\n{text[: config.preview_chars]}\n"
        "</persisted-output>"
    )


def snipped(text: str, config: SessionConfig) -> str:
    return (
        f"{SNIPPED_OPEN}\n(old result trimmed, original length {len(text)} chars)\n"
        f"{text[: config.old_result_preview_chars]}\n… (snipped)"
    )


def apply_tool_result_budget(
    messages: Sequence[Message],
    state: TrimState,
    config: SessionConfig,
    artifact_url: Callable[[str], str],
) -> tuple[list[Message], NewDecisions]:
    """Return trimmed copies of `messages` and the decisions made for the first time."""
    out = copy.deepcopy(list(messages))
    new = NewDecisions()
    for message in out:
        if is_tool_result_message(message):
            _budget_one_message(message["content"], state, config, artifact_url, new)
    _snip_old_results(out, config)
    return out, new


def _budget_one_message(
    blocks: list[dict[str, Any]],
    state: TrimState,
    config: SessionConfig,
    artifact_url: Callable[[str], str],
    new: NewDecisions,
) -> None:
    fresh: list[dict[str, Any]] = []
    decided_chars = 0
    for block in blocks:
        tool_id = str(block.get("tool_use_id", ""))
        text = content_text(block.get("content", ""))
        if tool_id in state.replacements:
            block["content"] = state.replacements[tool_id]
            decided_chars += len(block["content"])
        elif tool_id in state.verbatim or text.startswith(PERSISTED_OPEN):
            decided_chars += len(text)
        else:
            fresh.append(block)

    def persist(block: dict[str, Any]) -> int:
        tool_id = str(block.get("tool_use_id", ""))
        text = content_text(block.get("content", ""))
        preview = persisted_preview(text, artifact_url(tool_id), config)
        block["content"] = preview
        state.replacements[tool_id] = preview
        new.persisted[tool_id] = (preview, text)
        return len(text) - len(preview)

    # Pass 1: any single fresh result over the limit is persisted.
    remaining = []
    for block in fresh:
        if len(content_text(block.get("content", ""))) > config.single_result_char_limit:
            persist(block)
            decided_chars += len(block["content"])
        else:
            remaining.append(block)
    # Pass 2: over the per-message aggregate, persist the largest fresh results first.
    total = decided_chars + sum(len(content_text(b.get("content", ""))) for b in remaining)
    for block in sorted(remaining, key=lambda b: -len(content_text(b.get("content", "")))):
        if total <= config.aggregate_char_limit:
            break
        total -= persist(block)
        remaining.remove(block)
    for block in remaining:
        tool_id = str(block.get("tool_use_id", ""))
        state.verbatim.add(tool_id)
        new.verbatim.append(tool_id)


def _snip_old_results(messages: list[Message], config: SessionConfig) -> None:
    """Pass 3: results older than the recent-turns window are cut to a short preview."""
    total_turns = sum(1 for m in messages if m.get("role") == "assistant" and not has_tool_uses(m))
    if total_turns <= config.keep_recent_turns:
        return
    turns_seen = 0
    for message in messages:
        if message.get("role") == "assistant" and not has_tool_uses(message):
            turns_seen += 1
            continue
        if not is_tool_result_message(message):
            continue
        if turns_seen > total_turns - config.keep_recent_turns:
            continue
        for block in message["content"]:
            text = content_text(block.get("content", ""))
            if len(text) > config.old_result_snip_chars and not text.startswith(
                (SNIPPED_OPEN, PERSISTED_OPEN)
            ):
                block["content"] = snipped(text, config)
