"""Injection payloads: the long-term memory block an agent puts in front of a session's first
turn, and again after each compaction.

Four profiles, one per agent family (seed-algorithms §1.3, §3.5, §5.4):

- ``mewcode``: MewCode's ``<system-reminder>`` with ``# mewcodeMd`` (the caller's resolved
  MEWCODE.md instructions), ``# autoMemory`` (memories in the four-category memories.md layout,
  user file + "\\n\\n" + project file) and ``# currentDate``. Kinds per category: 用户偏好 ← soul,
  user; 纠正反馈 ← feedback; 项目知识 ← project, fact, lesson, rule, topic; 参考资料 ← reference.
  Nothing at all when there are neither instructions nor memories.
- ``omp``: oh-my-pi's read path, "# Memory Guidance" with memory://root, six rules, the
  memory_summary.md artifact cut to 5,000 omp tokens (4 chars each, head 60 % / tail 40 %),
  then "learned" lessons (active lesson memories, newest first) in what is left of the cap.
- ``meow``: meow-memory's first-turn block, 【关于你】 soul, 【关于user】 user, 【设计原则】
  rules with importance ≥ 2, 【记忆导引】 — meow's own Chinese framework words (its
  prompts/zh/labels.md: "关于user" names the user layer), or its English ones ([About you],
  [About the user], [Design principles], [Memory guide]) when the memories are mostly not
  Chinese, the rule of the mewcode headings (memoryhub.recall.language). meow's global rules
  (project IS NULL) map to the rules in this project's bank, where every rule is "global" for
  the agents working on it.
- ``default``: instructions, then soul/user/feedback memories, then rules with importance ≥ 2,
  then memory_summary.md, then project memories (project, fact, lesson, topic, reference).

Budget: every profile but ``omp`` fills a token budget (default 8,000, tokens estimated as
chars / 3.5 like the sessions subsystem) in the priority order above and stops at the first
item that does not fit, so what is kept is always a head of that order: the lowest-priority
entries and sections go first. At most ENTRY_FETCH_LIMIT entries per kind are considered.
mewcode keeps the instructions whole (they are orders, not background); default cuts the
instructions and the summary to the room left (which ends the payload). ``omp`` keeps to its
own 5,000-token cap, which budget_tokens can only lower.

Payloads are pure functions of the bank's state: entries are ordered importance desc, then
updated_at desc, then id desc (lessons for omp: updated_at desc, id desc); the only clock text is
the date, in the project's time zone. Only active memories the caller can see are ever used:
project-scope ones and the caller's own user-scope ones.

This module renders the profiles; the layout and budget are memoryhub.recall.layout, the
entries come from memoryhub.recall.selectors.injection_entries, and marking a payload as
injected into a session is memoryhub.recall.services.recall_payload_mark_injected.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from functools import partial
from zoneinfo import ZoneInfo

from django.db import connection
from django.utils import timezone

from memoryhub.memories import artifacts, markup
from memoryhub.memories.kinds import Kind
from memoryhub.memories.markup import truncate_middle
from memoryhub.recall import instructions, services
from memoryhub.recall.conf import recall_config
from memoryhub.recall.language import Language, text_language
from memoryhub.recall.layout import (
    WRAP_OVERHEAD,
    Block,
    Budget,
    Collector,
    Payload,
    one_line,
    wrap,
)
from memoryhub.recall.layout import max_chars as max_chars_for
from memoryhub.recall.selectors import Entry, injection_entries
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess, project_list


class Profile(StrEnum):
    MEWCODE = "mewcode"
    OMP = "omp"
    MEOW = "meow"
    DEFAULT = "default"


DEFAULT_BUDGET_TOKENS = 8_000
OMP_CHARS_PER_TOKEN = 4
OMP_LEARNED_MAX = 100  # oh-my-pi keeps at most 100 learned bullets
RULE_MIN_IMPORTANCE = 2

MEWCODE_PREAMBLE = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
)
MEWCODE_INSTRUCTIONS_NOTE = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them "
    "exactly as written."
)
MEWCODE_CLOSING = (
    "\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not "
    "respond to this context unless it is highly relevant to your task.\n</system-reminder>"
)
# The four memories.md categories (seed §1.3) and the kinds each one shows.
MEWCODE_USER_PREFERENCES = "### 用户偏好"
MEWCODE_FEEDBACK = "### 纠正反馈"
MEWCODE_PROJECT_KNOWLEDGE = "### 项目知识"
MEWCODE_REFERENCES = "### 参考资料"
# The same categories for a bank that is mostly not Chinese: headings in the memories' language.
MEWCODE_HEADINGS_ZH = (
    MEWCODE_USER_PREFERENCES,
    MEWCODE_FEEDBACK,
    MEWCODE_PROJECT_KNOWLEDGE,
    MEWCODE_REFERENCES,
)
MEWCODE_HEADINGS_EN = (
    "### User preferences",
    "### Feedback and corrections",
    "### Project knowledge",
    "### References",
)
PREFERENCE_KINDS = (Kind.SOUL, Kind.USER)
KNOWLEDGE_KINDS = (Kind.PROJECT, Kind.FACT, Kind.LESSON, Kind.RULE, Kind.TOPIC)

OMP_GUIDANCE = """# Memory Guidance
Root: memory://root

1. Open memory://root first: it lists what this project's memory holds.
2. Then read memory://root/MEMORY.md, and memory://root/skills/<name>/SKILL.md for a skill that \
fits the task, before you start on it.
3. Memory is a set of heuristics from earlier sessions; the repository and the user are the facts.
4. When memory changes your plan, say so and cite the artifact path together with the \
repository evidence that backs it.
5. When memory disagrees with the repository or the user, the memory is stale: follow the facts \
and correct the memory so it is regenerated.
6. Memory alone never proves anything: check it before you rely on it."""
OMP_SUMMARY_HEAD = "Memory summary:"
OMP_LEARNED_HEAD = "Learned lessons (they may be stale—verify them before relying on them):"


@dataclass(frozen=True)
class MeowWords:
    """meow-memory's framework words of its first-turn block in one language (its
    prompts/<lang>/labels.md), with MemoryHub's guide lines."""

    open: str
    close: str
    soul: str
    user: str
    rules: str
    guide: str
    search_line: str  # {base}: the project's API path
    project_line: str
    projects_line: str  # {projects}: the caller's project slugs, joined by `separator`
    separator: str


MEOW_WORDS = {
    Language.ZH: MeowWords(
        open="===== 长期记忆 =====",
        close="===== 长期记忆结束 =====",
        soul="【关于你】",
        user="【关于user】",  # meow's own words: "user" is the name of the layer
        rules="【设计原则】",
        guide="【记忆导引】",
        search_line="- 需要回忆细节时，先用 memory_search 按关键词检索（GET {base}/memories/search/"
        "?q=…），再用 memory_read 读取全文（GET {base}/memories/{{id}}/）。",
        project_line="- 做项目相关的工作前，先调用 memory_project 查看项目全景"
        "（GET {base}/panorama/）。",
        projects_line="- 你可以查看的项目：{projects}",
        separator="、",
    ),
    Language.EN: MeowWords(
        open="===== LONG-TERM MEMORY =====",
        close="===== END OF LONG-TERM MEMORY =====",
        soul="[About you]",
        user="[About the user]",
        rules="[Design principles]",
        guide="[Memory guide]",
        search_line="- To recall details, search by keywords with memory_search (GET "
        "{base}/memories/search/?q=…), then read one in full with memory_read (GET "
        "{base}/memories/{{id}}/).",
        project_line="- Before working on a project, call memory_project for the project at a "
        "glance (GET {base}/panorama/).",
        projects_line="- Projects you can see: {projects}",
        separator=", ",
    ),
}

DEFAULT_PREFACE = (
    "Team memory from MemoryHub for project {slug}. It is background from earlier sessions: "
    "when it disagrees with the repository or the user, they win."
)
DEFAULT_USER_KINDS = (Kind.SOUL, Kind.USER, Kind.FEEDBACK)
DEFAULT_PROJECT_KINDS = (Kind.PROJECT, Kind.FACT, Kind.LESSON, Kind.TOPIC, Kind.REFERENCE)


def load_instructions(access: ProjectAccess) -> str:
    """The caller's resolved MEWCODE.md instructions ("" when there are none)."""
    return markup.neutralize(
        instructions.resolved_instructions(project=access.project, user=access.actor.user)
    )


def _summary_token_limit(access: ProjectAccess) -> int:
    return recall_config(access.project.settings).summary_injection_token_limit


def _summary_artifact(access: ProjectAccess) -> str:
    artifact = artifacts.artifact_find(project=access.project, path=artifacts.MEMORY_SUMMARY)
    return markup.neutralize(artifact.content.strip()) if artifact is not None else ""


def _bullet(entry: Entry) -> str:
    return f"- {one_line(entry.content)}"


def _kind_bullet(entry: Entry) -> str:
    return f"- [{entry.kind}] {one_line(entry.content)}"


def _id_bullet(entry: Entry) -> str:
    return f"- [{entry.public_id}] {one_line(entry.content)}"


def _mewcode(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    max_chars = max_chars_for(budget_tokens or DEFAULT_BUDGET_TOKENS)
    instructions = load_instructions(access).strip()
    root = Block(sep="\n\n")
    budget = Budget(root, max_chars, WRAP_OVERHEAD + len(MEWCODE_PREAMBLE) + len(MEWCODE_CLOSING))
    if instructions:  # never cut: they are orders, not background
        root.block(head="# mewcodeMd", name="mewcodeMd").add(
            f"{MEWCODE_INSTRUCTIONS_NOTE}\n\n{instructions}"
        )
    # memories.md: the user file, "\n\n", the project file (MewCode's load()).
    auto = root.block(head="# autoMemory", sep="\n\n", name="autoMemory")
    user_file, project_file = auto.block(), auto.block()
    kinds_of = (PREFERENCE_KINDS, (Kind.FEEDBACK,), KNOWLEDGE_KINDS, (Kind.REFERENCE,))
    entries = [injection_entries(access, kinds, max_chars=max_chars) for kinds in kinds_of]
    headings = _mewcode_headings([e for group in entries for e in group])
    categories = [
        (user_file.block(head=headings[0]), entries[0]),
        (user_file.block(head=headings[1]), entries[1]),
        (project_file.block(head=headings[2]), entries[2]),
        (project_file.block(head=headings[3]), entries[3]),
    ]
    root.block(head="# currentDate", name="currentDate").add(
        f"Today's date is {today.isoformat()}."
    )
    collector = Collector()
    for block, group in categories:
        collector.fill_from(budget, block, partial(list, group), _bullet)
    if not instructions and not collector.placed:
        return Payload()
    return collector.payload(root, wrap(MEWCODE_PREAMBLE + root.render() + MEWCODE_CLOSING))


def _mewcode_headings(entries: Sequence[Entry]) -> tuple[str, ...]:
    """MewCode's Chinese memories.md headings when at least half the memories are Chinese,
    English ones otherwise (English memories under 用户偏好 read as noise to the model)."""
    chinese = text_language(e.content for e in entries) == Language.ZH
    return MEWCODE_HEADINGS_ZH if chinese else MEWCODE_HEADINGS_EN


def _omp(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    limit = _summary_token_limit(access)
    cap = min(limit, budget_tokens or limit)
    summary = truncate_middle(_summary_artifact(access), cap * OMP_CHARS_PER_TOKEN)
    # oh-my-pi: learnedBudget = limit − ceil(len(summaryOut) / 4), at least 0.
    learned_budget = max(0, cap - math.ceil(len(summary) / OMP_CHARS_PER_TOKEN))
    root = Block(sep="\n\n")
    root.block(name="guidance").add(OMP_GUIDANCE)
    if summary:
        root.block(head=OMP_SUMMARY_HEAD, name="memory_summary").add(summary)
    learned = root.block(head=OMP_LEARNED_HEAD, name="learned")
    collector = Collector()
    if learned_budget:
        lessons = injection_entries(
            access,
            (Kind.LESSON,),
            max_chars=learned_budget * OMP_CHARS_PER_TOKEN,
            newest_first=True,
            limit=OMP_LEARNED_MAX,
        )
        chars = 0
        for entry in lessons:
            line = _bullet(entry)
            grown = chars + (1 if chars else 0) + len(line)
            if entry.complete and math.ceil(grown / OMP_CHARS_PER_TOKEN) <= learned_budget:
                learned.add(line)
                collector.placed.append((learned, entry))
                chars = grown
    if not summary and not collector.placed:
        return Payload()
    return collector.payload(root, wrap(root.render()))


def _meow_guide(access: ProjectAccess, words: MeowWords) -> str:
    base = f"/api/v1/projects/{access.project.slug}"
    slugs = project_list(actor=access.actor).values_list("slug", flat=True)
    return "\n".join(
        (
            words.search_line.format(base=base),
            words.project_line.format(base=base),
            words.projects_line.format(projects=words.separator.join(slugs)),
        )
    )


def _meow(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    max_chars = max_chars_for(budget_tokens or DEFAULT_BUDGET_TOKENS)
    # Fetched first: the memories decide the language of the words around them.
    groups = [
        injection_entries(access, kinds, max_chars=max_chars, min_importance=m)
        for kinds, m in (
            ((Kind.SOUL,), None),
            ((Kind.USER,), None),
            ((Kind.RULE,), RULE_MIN_IMPORTANCE),
        )
    ]
    words = MEOW_WORDS[text_language(e.content for group in groups for e in group)]
    root = Block(head=words.open, sep="\n")
    blocks = [
        root.block(head=words.soul, name="soul"),
        root.block(head=words.user, name="user"),
        root.block(head=words.rules, name="rules"),
    ]
    root.block(head=words.guide, name="guide").add(_meow_guide(access, words))
    root.add(words.close)
    budget = Budget(root, max_chars, WRAP_OVERHEAD)
    collector = Collector()
    for block, group in zip(blocks, groups, strict=True):
        collector.fill_from(budget, block, partial(list, group), _id_bullet)
    return collector.payload(root, wrap(root.render()))


def _default(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    max_chars = max_chars_for(budget_tokens or DEFAULT_BUDGET_TOKENS)
    root = Block(sep="\n\n")
    root.block().add(DEFAULT_PREFACE.format(slug=access.project.slug))
    budget = Budget(root, max_chars, WRAP_OVERHEAD)
    instructions_block = root.block(head="# Instructions", name="instructions")
    user_block = root.block(head="# About the user", name="user")
    rules_block = root.block(head="# Design rules", name="rules")
    summary_block = root.block(
        head=f"# Memory summary (memory://root/{artifacts.MEMORY_SUMMARY})", name="memory_summary"
    )
    project_block = root.block(head="# Project memories", name="project")
    collector = Collector()
    summary = truncate_middle(
        _summary_artifact(access), _summary_token_limit(access) * OMP_CHARS_PER_TOKEN
    )

    def fetch(kinds: Sequence[str], min_importance: int | None = None) -> list[Entry]:
        # A memory the summary already states is listed once: in the summary.
        return [
            e
            for e in injection_entries(
                access, kinds, max_chars=max_chars, min_importance=min_importance
            )
            if not (summary and one_line(e.content) in summary)
        ]

    added = budget.add_document(instructions_block, load_instructions(access).strip())
    collector.fill_from(budget, user_block, partial(fetch, DEFAULT_USER_KINDS), _kind_bullet)
    collector.fill_from(
        budget, rules_block, partial(fetch, (Kind.RULE,), RULE_MIN_IMPORTANCE), _bullet
    )
    added = budget.add_document(summary_block, summary) or added
    collector.fill_from(budget, project_block, partial(fetch, DEFAULT_PROJECT_KINDS), _kind_bullet)
    if not added and not collector.placed:
        return Payload()
    return collector.payload(root, wrap(root.render()))


_BUILDERS: dict[Profile, Callable[[ProjectAccess, date, int | None], Payload]] = {
    Profile.MEWCODE: _mewcode,
    Profile.OMP: _omp,
    Profile.MEOW: _meow,
    Profile.DEFAULT: _default,
}


def build_payload(
    *,
    access: ProjectAccess,
    profile: Profile,
    today: date | None = None,
    budget_tokens: int | None = None,
) -> Payload:
    """The payload of `profile` for the caller, a pure function of the bank's state and `today`
    (default: today in the project's time zone)."""
    if today is None:
        today = timezone.now().astimezone(ZoneInfo(access.project.timezone)).date()
    return _BUILDERS[profile](access, today, budget_tokens)


# --- Cached payloads ---------------------------------------------------------------------------

PAYLOAD_CACHE_SIZE = 512
_cache: OrderedDict[tuple[object, ...], tuple[Payload, dict[str, bytes]]] = OrderedDict()
_cache_lock = threading.Lock()


def _state(access: ProjectAccess, profile: Profile) -> tuple[object, ...]:
    """Everything a payload is a function of besides the request, read in one statement: the
    bank's version (bumped by the database with every change of a memory), the instruction
    files (count and last change, any owner's) and memory_summary.md's hash. The project row
    (settings, time zone) was read by the access check; meow's guide lists the caller's
    projects."""
    project_id = access.project.pk
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT version FROM memories_bankversion WHERE project_id = %s),"
            " (SELECT count(*) FROM recall_instructionfile WHERE project_id = %s),"
            " (SELECT max(updated_at) FROM recall_instructionfile WHERE project_id = %s),"
            " (SELECT content_hash FROM memories_bankartifact"
            "  WHERE project_id = %s AND path = %s)",
            [project_id, project_id, project_id, project_id, artifacts.MEMORY_SUMMARY],
        )
        row = cursor.fetchone()
    projects: tuple[str, ...] = ()
    if profile == Profile.MEOW:
        projects = tuple(project_list(actor=access.actor).values_list("slug", flat=True))
    project = access.project
    return (*row, json.dumps(project.settings, sort_keys=True), project.slug, projects)


def cached_payload(
    *,
    access: ProjectAccess,
    profile: Profile,
    today: date | None = None,
    budget_tokens: int | None = None,
    render: Callable[[Payload], bytes],
    variant: str,
) -> tuple[Payload, bytes]:
    """build_payload and its rendered bytes (`render`, cached under `variant`), from this
    process's cache while nothing the payload depends on changed: an unchanged bank answers
    without building anything, a changed one builds the payload again."""
    if today is None:
        today = timezone.now().astimezone(ZoneInfo(access.project.timezone)).date()
    user = access.actor.user
    key = (
        access.project.pk,
        user.pk if user is not None else None,
        profile,
        today,
        budget_tokens,
        _state(access, profile),
    )
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is None:
        hit = (
            build_payload(access=access, profile=profile, today=today, budget_tokens=budget_tokens),
            {},
        )
    payload, bodies = hit
    if variant not in bodies:
        bodies[variant] = render(payload)
    with _cache_lock:
        _cache[key] = hit
        _cache.move_to_end(key)
        while len(_cache) > PAYLOAD_CACHE_SIZE:
            _cache.popitem(last=False)
    return payload, bodies[variant]


# The payload's write lives in services (recall_payload_mark_injected); this name stays for
# callers of the injection module.
def mark_injected(*, session: AgentSession, payload: Payload) -> None:
    services.recall_payload_mark_injected(session=session, memory_pks=payload.memory_pks)
