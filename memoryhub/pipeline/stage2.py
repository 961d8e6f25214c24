"""Stage 2 (seed 003 §3.4): consolidate a project's stage-1 outputs into MEMORY.md,
memory_summary.md and skills — by the LLM (strict JSON), or offline from the active memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError

from memoryhub.memories import artifacts
from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.memories.models import Memory
from memoryhub.pipeline.prompts import truncate_by_approx_tokens

RAW_MEMORIES_TOKENS = 20_000
SUMMARIES_TOKENS = 12_000
CHARS_PER_TOKEN = 4
SKILL_BUCKETS = artifacts.SKILL_BUCKETS

SYSTEM_PROMPT = """You are the memory-stage-two consolidator of a coding team's memory bank.
From the raw memories and session summaries below, write:
- memory_md: the long-term memory document (clustered by topic, durable knowledge only:
  how to build, test and deploy; conventions; decisions with their reasons; pitfalls);
- memory_summary: short guidance an agent reads at the start of every session;
- skills: reusable playbooks [{"name", "content", "scripts": [{"path", "content"}],
  "templates": [...], "examples": [...]}], possibly empty. Omit stale skills: they are pruned.
Remove stale or contradictory guidance; the current repository state wins over old notes.
Every team member reads these documents: leave out one person's own preferences,
corrections and habits (they are private to that person), keep what holds for the project.
Never include secrets. Return strict JSON only, with exactly the keys memory_md,
memory_summary and skills."""


def messages(inputs: Sequence[Any]) -> list[dict[str, str]]:
    """inputs: Stage1Output rows, newest first."""
    raw = "# Raw Memories\n\n" + "\n".join(
        f"## {row.session.external_id}\nupdated_at: {row.generated_at:%Y-%m-%dT%H:%M:%SZ}\n\n"
        f"{row.raw_memory}\n"
        for row in inputs
        if row.raw_memory
    )
    summaries = "\n\n".join(
        f"--- {row.session.external_id} ---\n{row.rollout_summary}"
        for row in sorted(inputs, key=lambda r: r.session.external_id)
        if row.rollout_summary
    )
    user = (
        f"Raw memories:\n{truncate_by_approx_tokens(raw, RAW_MEMORIES_TOKENS)}\n\n"
        f"Session summaries:\n{truncate_by_approx_tokens(summaries, SUMMARIES_TOKENS)}\n\n"
        "Return the JSON object now."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _path_ok(path: str) -> bool:
    try:
        artifacts.validate_relative_path(path)
    except ValidationError:
        return False
    return True


def validate(obj: Any) -> dict[str, Any]:
    """The exact contract: {memory_md: str, memory_summary: str, skills: [...]}."""
    if not isinstance(obj, dict) or set(obj) != {"memory_md", "memory_summary", "skills"}:
        raise ValueError("expected exactly the keys memory_md, memory_summary, skills")
    if not isinstance(obj["memory_md"], str) or not obj["memory_md"].strip():
        raise ValueError("memory_md must be a non-empty string")
    if not isinstance(obj["memory_summary"], str) or not obj["memory_summary"].strip():
        raise ValueError("memory_summary must be a non-empty string")
    if not isinstance(obj["skills"], list):
        raise ValueError("skills must be a list")
    for skill in obj["skills"]:
        if not isinstance(skill, dict) or not isinstance(skill.get("name"), str):
            raise ValueError("each skill needs a string name")
        try:
            artifacts.sanitize_skill_name(skill["name"])
        except ValidationError:
            raise ValueError(f"skill name {skill['name']!r} has no usable characters") from None
        if not isinstance(skill.get("content"), str):
            raise ValueError("each skill needs string content")
        for bucket in SKILL_BUCKETS:
            for item in skill.get(bucket, []) or []:
                if not (
                    isinstance(item, dict)
                    and isinstance(item.get("path"), str)
                    and isinstance(item.get("content"), str)
                ):
                    raise ValueError(f"{bucket} entries need string path and content")
                if not _path_ok(item["path"]):
                    raise ValueError(f"invalid {bucket} path {item['path']!r}")
    return obj


def files(output: dict[str, Any]) -> dict[str, str]:
    """The artifact files of a validated output (the full set: anything else is pruned)."""
    result = {"MEMORY.md": output["memory_md"], "memory_summary.md": output["memory_summary"]}
    for skill in output["skills"]:
        assets = {
            bucket: [
                artifacts.SkillAsset(path=i["path"], content=i["content"])
                for i in skill.get(bucket, []) or []
            ]
            for bucket in SKILL_BUCKETS
        }
        result |= artifacts.skill_files(name=skill["name"], content=skill["content"], **assets)
    return result


# --- Offline: the same artifacts, deterministically, from the active memories -------------

_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Rules and conventions", (Kind.RULE,)),
    ("Corrections and preferences", (Kind.FEEDBACK, Kind.USER)),
    ("Project knowledge", (Kind.PROJECT, Kind.FACT)),
    ("Lessons learned", (Kind.LESSON,)),
    ("Ongoing topics", (Kind.TOPIC,)),
    ("References", (Kind.REFERENCE,)),
)


def _line(memory: Memory) -> str:
    text = " ".join(memory.content.split())
    return f"- {text}" + (f" (importance {memory.importance})" if memory.importance > 1 else "")


def offline_output(memories: Sequence[Memory]) -> dict[str, Any]:
    """Grouped by kind, deduplicated by content hash, importance first, then newest."""
    seen: set[str] = set()
    unique = []
    for memory in sorted(memories, key=lambda m: (-m.importance, -m.updated_at.timestamp(), m.pk)):
        if memory.content_hash not in seen:
            seen.add(memory.content_hash)
            unique.append(memory)
    body = ["# Project memory", ""]
    summary = ["Read memory://root/MEMORY.md for details. Most important:"]
    for title, kinds in _SECTIONS:
        rows = [m for m in unique if m.kind in kinds]
        if rows:
            body += [f"## {title}", *(_line(m) for m in rows), ""]
            summary += [_line(m) for m in rows if m.importance >= 2][:5]
    if len(summary) == 1:
        summary += [_line(m) for m in unique[:5]]
    ops = [m for m in unique if m.kind == Kind.PROJECT and m.subcategory == Subcategory.OPS]
    skills = []
    if ops:
        skills.append(
            {
                "name": "project-commands",
                "content": "# Project commands\n\nCommands that worked in this project's "
                "sessions:\n\n" + "\n".join(_line(m) for m in ops) + "\n",
                "scripts": [],
                "templates": [],
                "examples": [],
            }
        )
    return {
        "memory_md": "\n".join(body).rstrip() + "\n",
        "memory_summary": "\n".join(summary) + "\n",
        "skills": skills,
    }
