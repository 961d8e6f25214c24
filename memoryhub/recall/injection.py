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
  rules with importance ≥ 2, 【记忆导引】. meow's global rules (project IS NULL) map to the
  rules in this project's bank, where every rule is "global" for the agents working on it.
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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models.functions import Substr
from django.utils import timezone

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories import artifacts, markup
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible_q
from memoryhub.recall import instructions, services
from memoryhub.recall.conf import recall_config
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.conversation import CHARS_PER_TOKEN
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
# Rows read per kind: a budget of 8,000 tokens holds a few hundred one-line entries at most.
ENTRY_FETCH_LIMIT = 200
TRUNCATION_MARKER = "\n\n...[truncated]...\n\n"  # oh-my-pi truncateByApproxTokens
MIN_DOCUMENT_CHARS = 200  # a document cut shorter than this is left out instead
MIN_LINE_CHARS = 3  # "- x"

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

MEOW_OPEN = "===== 长期记忆 ====="
MEOW_CLOSE = "===== 长期记忆结束 ====="
MEOW_SOUL = "【关于你】"
MEOW_USER = "【关于user】"
MEOW_RULES = "【设计原则】"
MEOW_GUIDE = "【记忆导引】"

DEFAULT_PREFACE = (
    "Team memory from MemoryHub for project {slug}. It is background from earlier sessions: "
    "when it disagrees with the repository or the user, they win."
)
DEFAULT_USER_KINDS = (Kind.SOUL, Kind.USER, Kind.FEEDBACK)
DEFAULT_PROJECT_KINDS = (Kind.PROJECT, Kind.FACT, Kind.LESSON, Kind.TOPIC, Kind.REFERENCE)


def estimate_tokens(text: str) -> int:
    """The injection subsystem's estimate: MewCode's chars / 3.5 (seed §1.2)."""
    return int(len(text) / CHARS_PER_TOKEN)


def _max_chars(budget_tokens: int) -> int:
    """The longest text whose estimate_tokens is within `budget_tokens`."""
    return math.ceil(CHARS_PER_TOKEN * (budget_tokens + 1)) - 1


def one_line(text: str) -> str:
    return " ".join(text.split())


def truncate_middle(text: str, max_chars: int) -> str:
    """oh-my-pi's truncateByApproxTokens: over `max_chars`, keep the first 60 % and the last
    40 % of `max_chars` around a marker."""
    if len(text) <= max_chars:
        return text
    head = int(max_chars * 0.6)
    tail = max_chars - head
    return text[:head] + TRUNCATION_MARKER + (text[-tail:] if tail else "")


def _fit_document(text: str, max_chars: int) -> str:
    """`text`, cut in the middle (marker included) to at most `max_chars`, or "" when it would
    keep fewer than MIN_DOCUMENT_CHARS."""
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(TRUNCATION_MARKER)
    if keep < MIN_DOCUMENT_CHARS:
        return ""
    return truncate_middle(text, keep)


# --- layout: nested blocks whose rendered length is known before anything is rendered ---------


class Block:
    """A rendered region: `head` on its own line, then its non-empty children joined by `sep`.

    A block without children renders as nothing (its head disappears with it). Lengths are
    maintained as lines are added, so the budget check is O(depth) per entry.
    """

    def __init__(self, head: str = "", sep: str = "\n", name: str = "") -> None:
        self.head = head
        self.sep = sep
        self.name = name
        self.parent: Block | None = None
        self.children: list[Block | str] = []
        self.length = 0
        self.filled = 0

    def block(self, head: str = "", sep: str = "\n", name: str = "") -> Block:
        child = Block(head, sep, name)
        child.parent = self
        self.children.append(child)
        return child

    def _head_len(self) -> int:
        return len(self.head) + 1 if self.head else 0

    def _plan(self, chars: int) -> list[tuple[Block, int, int]]:
        """(block, new length, new filled) for this block and its ancestors if a line of
        `chars` characters were added here."""
        new_length = (
            self._head_len() + chars if not self.filled else self.length + len(self.sep) + chars
        )
        plan = [(self, new_length, self.filled + 1)]
        child, node = self, self.parent
        while node is not None:
            if not child.filled:  # the child appears: it joins its parent's children
                length = (
                    node._head_len() + new_length
                    if not node.filled
                    else node.length + len(node.sep) + new_length
                )
                plan.append((node, length, node.filled + 1))
            else:
                plan.append((node, node.length + new_length - child.length, node.filled))
            child, new_length, node = node, plan[-1][1], node.parent
        return plan

    def root(self) -> Block:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def growth(self, chars: int) -> int:
        """How much longer the whole layout gets if a line of `chars` characters is added."""
        root = self.root()
        return self._plan(chars)[-1][1] - root.length

    def add(self, line: str) -> None:
        for node, length, filled in self._plan(len(line)):
            node.length, node.filled = length, filled
        self.children.append(line)

    def render(self) -> str:
        parts = [c if isinstance(c, str) else c.render() for c in self.children]
        body = self.sep.join(p for p in parts if p)
        if not body:
            return ""
        return f"{self.head}\n{body}" if self.head else body

    def named(self) -> Iterable[Block]:
        """Named blocks in document order (the JSON sections)."""
        for child in self.children:
            if isinstance(child, Block):
                if child.name:
                    yield child
                yield from child.named()


@dataclass
class Budget:
    """Room for a layout inside `max_chars` (wrapper text included in `overhead`)."""

    root: Block
    max_chars: int
    overhead: int
    # Set by the first item that does not fit: nothing after it is added (strict priority).
    exhausted: bool = False

    def room(self, block: Block) -> int:
        """The longest line that still fits in `block`."""
        if self.exhausted:
            return 0
        return self.max_chars - self.overhead - self.root.length - block.growth(0)

    def try_add(self, block: Block, line: str) -> bool:
        if self.exhausted or len(line) > self.room(block):
            self.exhausted = True
            return False
        block.add(line)
        return True

    def add_document(self, block: Block, text: str) -> bool:
        """Add `text`, cut in the middle to the room left if need be (which ends the payload:
        there is no room after it)."""
        if not text or self.exhausted:
            return False
        fitted = _fit_document(text, self.room(block))
        if fitted != text:
            self.exhausted = True
        if fitted:
            block.add(fitted)
        return bool(fitted)


# --- data -----------------------------------------------------------------------------------


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class Entry:
    pk: int
    public_id: str
    kind: str
    importance: int
    updated_at: datetime
    content: str
    complete: bool  # False: longer than what was read, so it cannot fit anyway

    @property
    def priority_key(self) -> tuple[int, int, int]:
        """importance desc, updated_at desc, id desc: the database's order, exactly."""
        return (-self.importance, *self.recency_key)

    @property
    def recency_key(self) -> tuple[int, int]:
        micros = (self.updated_at - _EPOCH) // timedelta(microseconds=1)
        return (-micros, -self.pk)


def fetch_entries(
    access: ProjectAccess,
    kinds: Sequence[str],
    *,
    max_chars: int,
    min_importance: int | None = None,
    newest_first: bool = False,
    limit: int = ENTRY_FETCH_LIMIT,
) -> list[Entry]:
    """The caller's active memories of `kinds`, best first, at most `limit` per kind.

    One indexed query per kind (each walks (project, status, kind, …) in order and stops at
    `limit`), merged here; contents are read up to `max_chars` + 1 characters only.
    """
    order = ("-updated_at", "-id") if newest_first else ("-importance", "-updated_at", "-id")
    entries: list[Entry] = []
    for kind in kinds:
        qs = Memory.objects.filter(
            project=access.project, status=Memory.Status.ACTIVE, kind=kind
        ).filter(memory_visible_q(user=access.actor.user))
        if min_importance is not None:
            qs = qs.filter(importance__gte=min_importance)
        rows = (
            qs.order_by(*order)
            .annotate(snippet=Substr("content", 1, max_chars + 1))
            .values_list("pk", "public_id", "kind", "importance", "updated_at", "snippet")[:limit]
        )
        entries.extend(
            Entry(
                pk=pk,
                public_id=str(public_id),
                kind=kind_,
                importance=importance,
                updated_at=updated_at,
                content=snippet,
                complete=len(snippet) <= max_chars,
            )
            for pk, public_id, kind_, importance, updated_at, snippet in (
                # Length-preserving, so `complete` and every budget stay exact.
                (*row[:5], markup.neutralize(row[5]))
                for row in rows
            )
        )
    entries.sort(key=(lambda e: e.recency_key) if newest_first else (lambda e: e.priority_key))
    return entries


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


# --- payload ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    token_estimate: int


@dataclass
class Payload:
    text: str = ""
    sections: list[Section] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)
    memory_pks: list[int] = field(default_factory=list)

    @property
    def token_estimate(self) -> int:
        return estimate_tokens(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "sections": [
                {"name": s.name, "text": s.text, "token_estimate": s.token_estimate}
                for s in self.sections
            ],
            "memory_ids": self.memory_ids,
            "token_estimate": self.token_estimate,
        }


def _wrap(body: str) -> str:
    return f"{INJECTION_OPEN}\n{body}\n{INJECTION_CLOSE}"


WRAP_OVERHEAD = len(_wrap(""))


def _blocks(root: Block) -> Iterable[Block]:
    yield root
    for child in root.children:
        if isinstance(child, Block):
            yield from _blocks(child)


class _Collector:
    """Remembers which memory went into which block, for memory_ids in document order."""

    def __init__(self) -> None:
        self.placed: list[tuple[Block, Entry]] = []

    def fill(
        self, budget: Budget, block: Block, entries: Iterable[Entry], render: Callable[[Entry], str]
    ) -> None:
        for entry in entries:
            if not entry.complete or not budget.try_add(block, render(entry)):
                budget.exhausted = True
                return
            self.placed.append((block, entry))

    def payload(self, root: Block, text: str) -> Payload:
        sections = [
            Section(name=b.name, text=rendered, token_estimate=estimate_tokens(rendered))
            for b in root.named()
            if (rendered := b.render())
        ]
        position = {id(b): i for i, b in enumerate(_blocks(root))}
        # Stable sort: blocks in document order, entries of a block in the order they were added.
        placed = sorted(self.placed, key=lambda pair: position[id(pair[0])])
        payload = Payload(text=text, sections=sections)
        included: set[int] = set()
        for _, entry in placed:
            if entry.pk not in included:
                included.add(entry.pk)
                payload.memory_pks.append(entry.pk)
                payload.memory_ids.append(entry.public_id)
        return payload

    def fill_from(
        self,
        budget: Budget,
        block: Block,
        fetch: Callable[[], list[Entry]],
        render: Callable[[Entry], str],
    ) -> None:
        """fill(), querying only when the block still has room for a line."""
        if budget.room(block) < MIN_LINE_CHARS:
            budget.exhausted = True
            return
        self.fill(budget, block, fetch(), render)


def _bullet(entry: Entry) -> str:
    return f"- {one_line(entry.content)}"


def _kind_bullet(entry: Entry) -> str:
    return f"- [{entry.kind}] {one_line(entry.content)}"


def _id_bullet(entry: Entry) -> str:
    return f"- [{entry.public_id}] {one_line(entry.content)}"


def _mewcode(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    max_chars = _max_chars(budget_tokens or DEFAULT_BUDGET_TOKENS)
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
    categories = [
        (user_file.block(head=MEWCODE_USER_PREFERENCES), PREFERENCE_KINDS),
        (user_file.block(head=MEWCODE_FEEDBACK), (Kind.FEEDBACK,)),
        (project_file.block(head=MEWCODE_PROJECT_KNOWLEDGE), KNOWLEDGE_KINDS),
        (project_file.block(head=MEWCODE_REFERENCES), (Kind.REFERENCE,)),
    ]
    root.block(head="# currentDate", name="currentDate").add(
        f"Today's date is {today.isoformat()}."
    )
    collector = _Collector()
    for block, kinds in categories:
        collector.fill_from(
            budget,
            block,
            partial(fetch_entries, access, kinds, max_chars=max_chars),
            _bullet,
        )
    if not instructions and not collector.placed:
        return Payload()
    return collector.payload(root, _wrap(MEWCODE_PREAMBLE + root.render() + MEWCODE_CLOSING))


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
    collector = _Collector()
    if learned_budget:
        lessons = fetch_entries(
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
    return collector.payload(root, _wrap(root.render()))


def _meow_guide(access: ProjectAccess) -> str:
    base = f"/api/v1/projects/{access.project.slug}"
    projects = "、".join(project_list(actor=access.actor).values_list("slug", flat=True))
    return (
        f"- 需要回忆细节时，先用 memory_search 按关键词检索（GET {base}/memories/search/?q=…），"
        f"再用 memory_read 读取全文（GET {base}/memories/{{id}}/）。\n"
        f"- 做项目相关的工作前，先调用 memory_project 查看项目全景（GET {base}/panorama/）。\n"
        f"- 你可以查看的项目：{projects}"
    )


def _meow(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    max_chars = _max_chars(budget_tokens or DEFAULT_BUDGET_TOKENS)
    root = Block(head=MEOW_OPEN, sep="\n")
    soul = root.block(head=MEOW_SOUL, name="soul")
    user = root.block(head=MEOW_USER, name="user")
    rules = root.block(head=MEOW_RULES, name="rules")
    root.block(head=MEOW_GUIDE, name="guide").add(_meow_guide(access))
    root.add(MEOW_CLOSE)
    budget = Budget(root, max_chars, WRAP_OVERHEAD)
    collector = _Collector()
    for block, kinds, m in (
        (soul, (Kind.SOUL,), None),
        (user, (Kind.USER,), None),
        (rules, (Kind.RULE,), RULE_MIN_IMPORTANCE),
    ):
        collector.fill_from(
            budget,
            block,
            partial(fetch_entries, access, kinds, max_chars=max_chars, min_importance=m),
            _id_bullet,
        )
    return collector.payload(root, _wrap(root.render()))


def _default(access: ProjectAccess, today: date, budget_tokens: int | None) -> Payload:
    max_chars = _max_chars(budget_tokens or DEFAULT_BUDGET_TOKENS)
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
    collector = _Collector()
    added = budget.add_document(instructions_block, load_instructions(access).strip())
    collector.fill_from(
        budget,
        user_block,
        lambda: fetch_entries(access, DEFAULT_USER_KINDS, max_chars=max_chars),
        _kind_bullet,
    )
    collector.fill_from(
        budget,
        rules_block,
        lambda: fetch_entries(
            access, (Kind.RULE,), max_chars=max_chars, min_importance=RULE_MIN_IMPORTANCE
        ),
        _bullet,
    )
    summary = truncate_middle(
        _summary_artifact(access), _summary_token_limit(access) * OMP_CHARS_PER_TOKEN
    )
    added = budget.add_document(summary_block, summary) or added
    collector.fill_from(
        budget,
        project_block,
        lambda: fetch_entries(access, DEFAULT_PROJECT_KINDS, max_chars=max_chars),
        _kind_bullet,
    )
    if not added and not collector.placed:
        return Payload()
    return collector.payload(root, _wrap(root.render()))


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


def mark_injected(*, session: AgentSession, payload: Payload) -> None:
    """Record the payload's memories as injected into `session` (an upsert: injected again
    after a compaction counts as seen again)."""
    services.recall_seen_mark(
        session=session, memory_ids=payload.memory_pks, reason=RecallSeen.Reason.INJECTED
    )
