"""The project panorama: meow-memory's memory_project (seed-algorithms §5.8).

The project's active rules (设计原则), then its project memories grouped by subcategory in the
order overview, structure, decisions, quotes, ops, todo (todo split into 已完成 — the five most
recently updated stale todos — and "To do list" — the active ones), each group oldest first.
Project memories without a subcategory come last, as "other". Each group shows at most `limit`
rows (the most recently updated ones) so a huge bank cannot produce a megabyte answer.

Unlike the injection payloads the text carries relative times ("3天前"), computed against
`as_of` (default: now), so it changes with the clock. Reading the panorama does not mark
anything as seen. Its framework words are meow's Chinese ones for a mostly Chinese bank and
English ones otherwise, or the language the caller asks for (memoryhub.recall.language).
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


@dataclass(frozen=True)
class Words:
    """The panorama's framework words in one language."""

    project: str  # {name}
    rules: str
    done: str
    open: str
    labels: dict[str, str]
    more: str
    personal: str
    footer: str  # {slug}, {base}


WORDS = {
    Language.ZH: Words(
        project="【项目：{name}】",
        rules="设计原则：",
        done="已完成：",
        open="To do list：",
        labels={
            Subcategory.OVERVIEW: "【概览 overview】",
            Subcategory.STRUCTURE: "【结构 structure】",
            Subcategory.DECISIONS: "【决策 decisions】",
            Subcategory.QUOTES: "【原话 quotes】",
            Subcategory.OPS: "【运维 ops】",
            Subcategory.TODO: "【待办 todo】",
            OTHER: "【其他 other】",
        },
        more="（更早的条目未列出，用 memory_search 检索）",
        personal="个人",
        footer="（记忆库：MemoryHub 项目 {slug}。单条记忆的全文与修改历史："
        "GET {base}/memories/{{id}}/ 与 {base}/memories/{{id}}/history/；"
        "原始会话记录：GET {base}/sessions/。）",
    ),
    Language.EN: Words(
        project="[Project: {name}]",
        rules="Design principles:",
        done="Done:",
        open="To do list:",
        labels={
            Subcategory.OVERVIEW: "[Overview]",
            Subcategory.STRUCTURE: "[Structure]",
            Subcategory.DECISIONS: "[Decisions]",
            Subcategory.QUOTES: "[Quotes]",
            Subcategory.OPS: "[Ops]",
            Subcategory.TODO: "[To do]",
            OTHER: "[Other]",
        },
        more="(Older entries are not listed: find them with memory_search.)",
        personal="personal",
        footer="(Memory bank: MemoryHub project {slug}. A memory's full text and history: "
        "GET {base}/memories/{{id}}/ and {base}/memories/{{id}}/history/; the raw sessions: "
        "GET {base}/sessions/.)",
    ),
}


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


def _recent(qs: QuerySet[Memory], limit: int) -> tuple[list[Memory], bool]:
    """The `limit` most recently updated rows of `qs`, oldest first, and whether older rows
    exist beyond the limit."""
    rows = list(qs.order_by("-updated_at", "-id")[: limit + 1])
    return sorted(rows[:limit], key=lambda m: (m.updated_at, m.pk)), len(rows) > limit


def _row_text(access: ProjectAccess, row: Row, words: Words) -> str:
    memory = row.memory
    label = access.project.slug if memory.scope == Scope.PROJECT else words.personal
    stamp = memory.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"[{label} : {memory.kind}] [{memory.public_id}] {stamp} [{row.relative}]\n"
        + markup.neutralize(memory.content)
    )


def _group_text(access: ProjectAccess, group: Group, words: Words) -> list[str]:
    lines = [_row_text(access, row, words) for row in group.rows]
    if group.more:
        lines.insert(0, words.more)
    return lines


def project_panorama(
    *,
    access: ProjectAccess,
    as_of: datetime | None = None,
    limit: int = DEFAULT_LIMIT,
    lang: Language | None = None,
) -> Panorama:
    now = as_of or timezone.now()
    active = memory_visible(access=access).filter(status=Memory.Status.ACTIVE)
    project_kind = active.filter(kind=Kind.PROJECT)
    found = {"rules": _recent(active.filter(kind=Kind.RULE), limit)}
    for sub in SECTION_ORDER:
        if sub != Subcategory.TODO:
            found[str(sub)] = _recent(project_kind.filter(subcategory=sub), limit)
    found[OTHER] = _recent(project_kind.filter(subcategory=""), limit)
    found["todo_open"] = _recent(project_kind.filter(subcategory=Subcategory.TODO), limit)
    done_qs = memory_visible(access=access).filter(
        status=Memory.Status.STALE, kind=Kind.PROJECT, subcategory=Subcategory.TODO
    )
    # "The five most recent" is the whole point of the done list, not a truncation.
    found["todo_done"] = (_recent(done_qs, TODO_DONE_SHOWN)[0], False)
    shown = [m.content for memories, _ in found.values() for m in memories]
    lang = lang or language.text_language(shown)
    words = WORDS[lang]
    groups = {
        name: Group(
            rows=[Row(m, language.relative_time(m.updated_at, now, lang)) for m in memories],
            more=more,
        )
        for name, (memories, more) in found.items()
    }
    rules, todo_done, todo_open = groups["rules"], groups["todo_done"], groups["todo_open"]
    sections = {
        name: groups[name]
        for name in [*(str(s) for s in SECTION_ORDER if s != Subcategory.TODO), OTHER]
    }

    blocks = [words.project.format(name=access.project.name)]
    if rules.rows:
        blocks.append("\n\n".join([words.rules, *_group_text(access, rules, words)]))
    for sub in SECTION_ORDER:
        if sub == Subcategory.TODO:
            parts = []
            if todo_done.rows:
                parts.append("\n\n".join([words.done, *_group_text(access, todo_done, words)]))
            if todo_open.rows:
                parts.append("\n\n".join([words.open, *_group_text(access, todo_open, words)]))
            if parts:
                blocks.append("\n\n".join([words.labels[sub], *parts]))
            continue
        group = sections[str(sub)]
        if group.rows:
            blocks.append("\n\n".join([words.labels[sub], *_group_text(access, group, words)]))
    if sections[OTHER].rows:
        blocks.append(
            "\n\n".join([words.labels[OTHER], *_group_text(access, sections[OTHER], words)])
        )
    base = f"/api/v1/projects/{access.project.slug}"
    blocks.append(words.footer.format(slug=access.project.slug, base=base))
    return Panorama(
        text="\n\n".join(blocks),
        rules=rules,
        sections=sections,
        todo_done=todo_done,
        todo_open=todo_open,
    )
