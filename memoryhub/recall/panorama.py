"""The project panorama: meow-memory's memory_project (seed-algorithms §5.8).

The project's active rules (设计原则), then its project memories grouped by subcategory in the
order overview, structure, decisions, quotes, ops, todo (todo split into 已完成 — the five most
recently updated stale todos — and "To do list" — the active ones), each group oldest first.
Project memories without a subcategory come last, as "other". Each group shows at most `limit`
rows (the most recently updated ones) so a huge bank cannot produce a megabyte answer.

Unlike the injection payloads the text carries relative times ("3天前"), computed against
`as_of` (default: now), so it changes with the clock. Reading the panorama does not mark
anything as seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db.models import QuerySet
from django.utils import timezone

from memoryhub.memories import markup
from memoryhub.memories.kinds import Kind, Scope, Subcategory
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible
from memoryhub.recall import language
from memoryhub.recall.language import Language
from projects.selectors import ProjectAccess

SECTION_ORDER = (
    Subcategory.OVERVIEW,
    Subcategory.STRUCTURE,
    Subcategory.DECISIONS,
    Subcategory.QUOTES,
    Subcategory.OPS,
    Subcategory.TODO,
)
OTHER = "other"
TODO_DONE_SHOWN = 5
DEFAULT_LIMIT = 50
LABELS = {
    Subcategory.OVERVIEW: "概览 overview",
    Subcategory.STRUCTURE: "结构 structure",
    Subcategory.DECISIONS: "决策 decisions",
    Subcategory.QUOTES: "原话 quotes",
    Subcategory.OPS: "运维 ops",
    Subcategory.TODO: "待办 todo",
    OTHER: "其他 other",
}
MORE = "（更早的条目未列出，用 memory_search 检索）"


def relative_time(then: datetime, now: datetime) -> str:
    """Chinese relative age, as meow-memory shows it next to each row."""
    return language.relative_time(then, now, Language.ZH)


@dataclass(frozen=True)
class Row:
    memory: Memory
    relative: str


@dataclass
class Group:
    rows: list[Row] = field(default_factory=list)
    more: bool = False  # older rows exist beyond the limit


@dataclass
class Panorama:
    text: str
    rules: Group
    sections: dict[str, Group]
    todo_done: Group
    todo_open: Group


def _recent(qs: QuerySet[Memory], limit: int, now: datetime) -> Group:
    """The `limit` most recently updated rows of `qs`, shown oldest first."""
    rows = list(qs.order_by("-updated_at", "-id")[: limit + 1])
    more = len(rows) > limit
    rows = sorted(rows[:limit], key=lambda m: (m.updated_at, m.pk))
    return Group(rows=[Row(m, relative_time(m.updated_at, now)) for m in rows], more=more)


def _row_text(access: ProjectAccess, row: Row) -> str:
    memory = row.memory
    label = access.project.slug if memory.scope == Scope.PROJECT else "个人"
    stamp = memory.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"[{label} : {memory.kind}] [{memory.public_id}] {stamp} [{row.relative}]\n"
        + markup.neutralize(memory.content)
    )


def _group_text(access: ProjectAccess, group: Group) -> list[str]:
    lines = [_row_text(access, row) for row in group.rows]
    if group.more:
        lines.insert(0, MORE)
    return lines


def project_panorama(
    *, access: ProjectAccess, as_of: datetime | None = None, limit: int = DEFAULT_LIMIT
) -> Panorama:
    now = as_of or timezone.now()
    active = memory_visible(access=access).filter(status=Memory.Status.ACTIVE)
    project_kind = active.filter(kind=Kind.PROJECT)
    rules = _recent(active.filter(kind=Kind.RULE), limit, now)
    sections = {
        str(sub): _recent(project_kind.filter(subcategory=sub), limit, now)
        for sub in SECTION_ORDER
        if sub != Subcategory.TODO
    }
    sections[OTHER] = _recent(project_kind.filter(subcategory=""), limit, now)
    todo_open = _recent(project_kind.filter(subcategory=Subcategory.TODO), limit, now)
    done_qs = memory_visible(access=access).filter(
        status=Memory.Status.STALE, kind=Kind.PROJECT, subcategory=Subcategory.TODO
    )
    todo_done = _recent(done_qs, TODO_DONE_SHOWN, now)
    todo_done.more = False  # "the five most recent" is the whole point, not a truncation

    blocks = [f"【项目：{access.project.name}】"]
    if rules.rows:
        blocks.append("\n\n".join(["设计原则：", *_group_text(access, rules)]))
    for sub in SECTION_ORDER:
        if sub == Subcategory.TODO:
            parts = []
            if todo_done.rows:
                parts.append("\n\n".join(["已完成：", *_group_text(access, todo_done)]))
            if todo_open.rows:
                parts.append("\n\n".join(["To do list：", *_group_text(access, todo_open)]))
            if parts:
                blocks.append("\n\n".join([f"【{LABELS[sub]}】", *parts]))
            continue
        group = sections[str(sub)]
        if group.rows:
            blocks.append("\n\n".join([f"【{LABELS[sub]}】", *_group_text(access, group)]))
    if sections[OTHER].rows:
        blocks.append("\n\n".join([f"【{LABELS[OTHER]}】", *_group_text(access, sections[OTHER])]))
    base = f"/api/v1/projects/{access.project.slug}"
    blocks.append(
        f"（记忆库：MemoryHub 项目 {access.project.slug}。单条记忆的全文与修改历史："
        f"GET {base}/memories/{{id}}/ 与 {base}/memories/{{id}}/history/；"
        f"原始会话记录：GET {base}/sessions/。）"
    )
    return Panorama(
        text="\n\n".join(blocks),
        rules=rules,
        sections=sections,
        todo_done=todo_done,
        todo_open=todo_open,
    )
