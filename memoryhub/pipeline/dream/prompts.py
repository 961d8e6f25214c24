"""The LLM prompt of each dream round: the contract, the round's checklist, its entries and
the window's conversation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from memoryhub.memories.models import Memory
from memoryhub.pipeline.conf import PipelineConfig
from memoryhub.pipeline.dream.window import ATOMIC_KINDS, ROUNDS, Window
from memoryhub.pipeline.prompts import session_items, truncate_by_approx_tokens

PROMPT_CONTENT_CHARS = 2000

DREAM_SYSTEM = """\
You are the dreaming curator of a team memory bank that coding agents share. One agent \
session (a "window") has gone quiet. You review the memories it wrote or was shown and tidy \
them, the way a person sorts their notes at the end of a day. You never delete anything: you \
update an entry, mark it stale (done, or no longer true but worth keeping as history), archive \
it (wrong, trivial, or replaced by another entry), or create a new entry.

Answer with strict JSON only, one object, no Markdown fences and no commentary:
{"operations": [ ... ], "notes": ["optional short remarks for the maintainers"]}

Each operation is one of:
{"op": "update", "id": "<id>", "content"?: str, "title"?: str, "importance"?: 1-4, \
"keywords"?: [str], "subcategory"?: str, "goal"?: str}
{"op": "stale", "id": "<id>", "reason": str, "superseded_by"?: "<id or ref>"}
{"op": "archive", "id": "<id>", "reason": str, "superseded_by"?: "<id or ref>"}
{"op": "create", "kind": str, "content": str, "title"?: str, "keywords": [str], \
"importance": 1-4, "subcategory"?: str, "goal"?: str, "ref"?: str}

Rules of the contract:
- "id" is the full id shown in square brackets for an entry of THIS round; any other id is \
refused.
- "ref" names a created entry so that a stale or archive operation of the same answer can \
point to it with superseded_by.
- An entry gets at most one update and at most one stale-or-archive operation.
- Kinds: project (with subcategory overview, structure, decisions, quotes, ops or todo), \
fact, lesson, rule, soul, user, feedback, reference, topic (with a goal). Each round says \
which kinds it may create.
- importance: 4 a red line (safety, data loss), 3 emphasised by the user or true everywhere, \
2 a decision the user made, 1 a useful detail.
- keywords: 8 to 13 words that a future request would contain when this entry matters; core \
entities and proper nouns first; not the project's name.
- Write dates as absolute dates (YYYY-MM-DD); the sealed time T below is "now" for this \
window.
- Entries that are correct and current need no operation. An empty list is a fine answer.
"""

ATOMIC_CHECKLIST = """\
Checklist for these entries:
1. Outdated or wrong according to the conversation → update it (keep what is still true).
2. A todo (project/todo) the conversation shows as finished → stale, quoting the evidence.
3. Trivial, one-off or wrong entries → archive with the reason.
4. A lesson about a bug that has been fixed since: keep it when it still teaches something, \
otherwise stale.
5. Two entries that contradict each other → keep the newer one (by its timestamp) and archive \
the older with superseded_by = the newer.
6. Re-check every importance against the scale.
7. An entry that mixes unrelated things → create one entry per thing (with refs) and archive \
the original, superseded_by one of them.
8. Keywords that would not retrieve the entry → rewrite them.
9. An entry of the wrong kind or subcategory → create it with the right one and archive the old \
entry, superseded_by the new one.
10. A specific lesson that holds in general → create a rule stating it generally.
11. soul, user and rule entries are shown at the start of every session: keep them short, \
durable and few.
May create: {kinds}."""

TOPIC_CHECKLIST = """\
Guide for topics (ongoing threads of work, each with a goal):
- Update the content or goal of a topic the conversation moved forward.
- A finished topic → stale, quoting the evidence; a dead end or a duplicate → archive \
(superseded_by the topic you keep).
- Split a topic that mixes threads; merge topics about one thread (update the one you keep, \
archive the rest with superseded_by).
- A substantial thread of the conversation without a topic → create one (kind topic, goal = \
what done looks like, keywords, importance).
May create: topic."""

PROJECT_CHECKLIST = """\
These are the project's active project entries by subcategory. Condense them:
- Where several entries of one subcategory overlap, create one tighter entry (with a ref) and \
archive the entries it replaces with superseded_by = that ref. Never state a fact that no entry \
states.
- Keep quotes verbatim; keep each open todo as its own entry; finished todos → stale.
- Contradictions → keep the newer entry and archive the older, superseded_by the newer.
May create: project."""

ROUND_TITLES = {
    "atomic": "atomic memories",
    "topic": "topics",
    "project": "project summary",
}


def render_memory(memory: Memory) -> str:
    label = " ".join(
        part
        for part in (
            memory.kind,
            memory.subcategory,
            f"«{memory.title}»" if memory.title else "",
            memory.status,
            str(memory.public_id),
            memory.updated_at.strftime("%Y-%m-%d %H:%M"),
            f"importance {memory.importance}",
        )
        if part
    )
    content = memory.content[:PROMPT_CONTENT_CHARS]
    lines = [f"- [{label}] {content}"]
    if memory.goal:
        lines.append(f"  goal: {memory.goal}")
    lines.append(f"  keywords: {', '.join(memory.keywords) or '(none)'}")
    return "\n".join(lines)


def round_messages(
    name: str, memories: Sequence[Memory], window: Window, config: PipelineConfig, number: int
) -> list[dict[str, str]]:
    if name == "atomic":
        checklist = ATOMIC_CHECKLIST.replace("{kinds}", ", ".join(ATOMIC_KINDS))
    else:
        checklist = TOPIC_CHECKLIST if name == "topic" else PROJECT_CHECKLIST
    budget = min(
        config.fallback_token_limit,
        int(config.context_window * config.stage1_payload_percent) // 2,
    )
    conversation = json.dumps(session_items(window.records), ensure_ascii=False)
    entries = "\n".join(render_memory(m) for m in memories) or "(none)"
    body = (
        f"[memoryhub-dream] round {number} of up to {len(ROUNDS)}: {ROUND_TITLES[name]}\n"
        f"Sealed time T (the window's last event): "
        f"{window.last_event.astimezone(ZoneInfo('UTC')):%Y-%m-%d %H:%M} UTC; project "
        f"timezone {window.project.timezone}.\n"
        f"Window: session {window.session.external_id}.\n\n"
        f"Entries of this round ({len(memories)}):\n{entries}\n\n"
        f"The window's conversation (most recent part, JSON):\n"
        f"{truncate_by_approx_tokens(conversation, budget)}\n\n"
        f"{checklist}\n\nAnswer with the JSON object now."
    )
    return [{"role": "system", "content": DREAM_SYSTEM}, {"role": "user", "content": body}]
