"""Text the LLM writes from recalled memories: reflect's answers and mental models' content.
With the offline provider (or when the LLM fails), an extractive answer that lists the most
relevant memories — never invented text, never a placeholder."""

from __future__ import annotations

from collections.abc import Sequence

from memoryhub.integrations.hindsight.selectors import KIND_TYPE, RecallItem, tokens
from memoryhub.llm import client as llm
from memoryhub.memories import artifacts
from projects.models import Project

NO_MEMORIES = "No relevant information found in memory."
REFLECT_SYSTEM = """You answer a coding agent's question from its team's memory bank.
Ground every statement in the numbered memories below and cite them like [2]. If they do not
answer the question, say so plainly instead of guessing. Answer in concise markdown.{mission}"""
MODEL_SYSTEM = """You maintain a "mental model": a short standing document that answers one
question for a coding agent, written only from the team's memories and project notes below.
Write markdown of at most {tokens} tokens, durable facts only, no preamble. If nothing below
answers the question, answer with exactly NONE."""


def _numbered(items: Sequence[RecallItem]) -> str:
    lines = []
    for n, item in enumerate(items, 1):
        m = item.memory
        lines.append(f"[{n}] ({m.kind}, {m.updated_at:%Y-%m-%d}) {m.content}")
    return "\n".join(lines)


def extractive(items: Sequence[RecallItem], *, heading: str, max_tokens: int) -> str:
    """The memories themselves, best first, within max_tokens; empty when there are none."""
    if not items:
        return ""
    lines = [heading, ""]
    used = tokens(heading)
    for item in items:
        m = item.memory
        fact_type = KIND_TYPE.get(m.kind, "world")
        line = f"- {' '.join(m.content.split())} _({fact_type}, {m.kind}, {m.updated_at:%Y-%m-%d})_"
        if used + tokens(line) > max_tokens and len(lines) > 2:
            break
        lines.append(line)
        used += tokens(line)
    return "\n".join(lines) + "\n"


def reflect_text(
    *,
    project: Project,
    query: str,
    items: Sequence[RecallItem],
    mission: str,
    max_tokens: int,
) -> tuple[str, int, int]:
    """(markdown answer, input tokens, output tokens)."""
    offline_text = (
        extractive(items, heading=f"**Most relevant memories for:** {query}", max_tokens=max_tokens)
        or NO_MEMORIES
    )
    if not items:
        return NO_MEMORIES, 0, 0
    request = llm.LlmRequest(
        purpose="reflect",
        messages=[
            {
                "role": "system",
                "content": REFLECT_SYSTEM.format(
                    mission=f"\n\nMission: {mission}" if mission else ""
                ),
            },
            {"role": "user", "content": f"Memories:\n{_numbered(items)}\n\nQuestion: {query}"},
        ],
        offline=lambda: offline_text,
        project=project,
        max_tokens=max(64, min(max_tokens, 4096)),
    )
    try:
        result = llm.complete(request)
    except llm.LlmError as exc:
        # The memories still answer something: say the LLM failed and list them.
        return f"_(The LLM could not answer: {exc})_\n\n{offline_text}", 0, 0
    return result.text.strip() or offline_text, result.tokens_in, result.tokens_out


def mental_model_text(
    *,
    project: Project,
    name: str,
    source_query: str,
    items: Sequence[RecallItem],
    max_tokens: int,
    with_notes: bool,
) -> str:
    """The model's content; raises LlmError when the configured LLM fails (the refresh is
    then recorded as failed and the old content stays)."""
    offline_text = extractive(items, heading=f"# {name}", max_tokens=max_tokens)
    notes = ""
    if with_notes:
        summary = artifacts.artifact_find(project=project, path=artifacts.MEMORY_SUMMARY)
        notes = summary.content[: max_tokens * 4] if summary is not None else ""
    if not items and not notes:
        return ""
    request = llm.LlmRequest(
        purpose="mental_model",
        messages=[
            {"role": "system", "content": MODEL_SYSTEM.format(tokens=max_tokens)},
            {
                "role": "user",
                "content": f"Question: {source_query}\n\nProject notes:\n{notes or '(none)'}\n\n"
                f"Memories:\n{_numbered(items) or '(none)'}",
            },
        ],
        offline=lambda: offline_text or "NONE",
        project=project,
        max_tokens=max(64, min(max_tokens, 8192)),
    )
    text = llm.complete(request).text.strip()
    return "" if text == "NONE" else text
