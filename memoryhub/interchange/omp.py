"""oh-my-pi (MusePi) local memory root (seed 003; seed-algorithms §3.4–3.5).

Layout of an upload or export — the memory root, <agentDir>/memories/--<cwd>--/:

    MEMORY.md, memory_summary.md          stage 2's documents
    skills/<name>/SKILL.md                skills, with scripts/, templates/, examples/ beside
    raw_memories.md                       "# Raw Memories", a blank line, then per thread
                                          "## <thread id>", "updated_at: <seconds>", the raw
                                          memory, the threads apart by a blank line
    rollout_summaries/<thread>[-<slug>].md  "thread_id: …", "updated_at: …", blank, the summary
    learned.md                            `- lesson` or `- lesson _(context: …)_`, newest first

The documents and skills become the bank's artifacts (memory://root/…); raw memories and rollout
summaries become the stage-1 outputs consolidation reads, one per thread (an empty session named
by the thread id holds each); learned.md lines become lesson memories (the context in
metadata.context), dated by the file's modification time. Export writes the same files back;
learned.md gets the active lessons, newest first, at most 100 as oh-my-pi keeps.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext

from memoryhub.interchange import common
from memoryhub.interchange.archive import Member, OutFile, Tree
from memoryhub.interchange.bundle import (
    Bundle,
    FormatError,
    ImportedMemory,
    ImportedRollout,
    Snapshot,
    collecting,
    problem,
)
from memoryhub.memories import artifacts
from memoryhub.memories.kinds import Kind
from memoryhub.memories.services import MemoryInput

NAME = "omp"
PARTS = frozenset({"memories", "artifacts", "rollouts"})
RAW = "raw_memories.md"
SUMMARIES = "rollout_summaries"
LEARNED = "learned.md"
RAW_HEADER = "# Raw Memories"
NO_RAW = "No raw memories yet."
MARKERS = (artifacts.MEMORY_MD, artifacts.MEMORY_SUMMARY, RAW, LEARNED, "skills/", f"{SUMMARIES}/")
LEARNED_MAX = 100
LEARNED_CHARS = 2000
CONTEXT_CHARS = 400
_CONTEXT = re.compile(r"^(?P<content>.*?)\s+_\(context: (?P<context>.*)\)_$")
_SLUG_JUNK = re.compile(r"[^a-z0-9]+")


def _seconds(value: str, file: str, line: int) -> datetime:
    if not value.strip().isdigit():
        message = gettext("updated_at must be epoch seconds; got %(value)s")
        raise FormatError(file, line, message % {"value": repr(value)})
    return datetime.fromtimestamp(int(value.strip()), tz=UTC)


def _starts_thread(lines: list[str], index: int) -> bool:
    """oh-my-pi starts a thread with "## <thread id>" and "updated_at: …" on the very next
    line, after the title or a blank line. A raw memory's own headings ("## Task: …") have no
    such line under them, so they stay in its text."""
    return (
        lines[index].startswith("## ")
        and index + 1 < len(lines)
        and lines[index + 1].startswith("updated_at:")
        and (index == 0 or not lines[index - 1].strip())
    )


def parse_raw(text: str, file: str, errors: list[dict[str, Any]]) -> list[ImportedRollout]:
    """The threads of a raw_memories.md; problems go to `errors`."""
    lines = text.splitlines()
    rollouts: list[ImportedRollout] = []
    current: ImportedRollout | None = None
    body: list[str] = []
    stray = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if _starts_thread(lines, index):
            if current is not None:
                current.raw_memory = "\n".join(body).strip()
            current, body = ImportedRollout(thread_id=line[3:].strip(), file=file), []
            rollouts.append(current)
            if not current.thread_id:
                note = gettext("a '## ' heading without a thread id")
                errors.append(problem(file, index + 1, note))
            with collecting(errors):
                current.updated_at = _seconds(lines[index + 1].partition(":")[2], file, index + 2)
            index += 2
            continue
        if current is not None:
            body.append(line)
        elif line.strip() not in ("", RAW_HEADER, NO_RAW) and not stray:
            stray = True  # one note for the lot
            note = gettext(
                "text before the first thread ('## <thread id>', then 'updated_at: <seconds>')"
            )
            errors.append(problem(file, index + 1, note))
        index += 1
    if current is not None:
        current.raw_memory = "\n".join(body).strip()
    return rollouts


def parse_summary(text: str, file: str, stem: str) -> ImportedRollout:
    lines = text.splitlines()
    header: dict[str, tuple[str, int]] = {}
    position = 0
    for position, line in enumerate(lines):
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if not colon:
            message = gettext("expected 'thread_id: …' and 'updated_at: …'")
            raise FormatError(file, position + 1, message)
        header[key.strip()] = (value.strip(), position + 1)
    else:
        position = len(lines)
    if not header.get("thread_id", ("", 0))[0]:
        raise FormatError(file, 1, gettext("the first line must be 'thread_id: <id>'"))
    thread_id = header["thread_id"][0]
    slug = stem[len(thread_id) + 1 :] if stem.startswith(thread_id + "-") else ""
    updated = header.get("updated_at")
    return ImportedRollout(
        thread_id=thread_id,
        rollout_summary="\n".join(lines[position + 1 :]).strip(),
        rollout_slug=slug,
        updated_at=_seconds(updated[0], file, updated[1]) if updated else None,
        file=file,
    )


def _read_summary(member: Member, errors: list[dict[str, Any]]) -> ImportedRollout | None:
    """A rollout_summaries/ file's rollout, or None with its problem noted in `errors`."""
    text = common.text_of(member, errors)
    if text is None:
        return None
    stem = member.path[len(SUMMARIES) + 1 : -len(".md")]
    with collecting(errors):
        return parse_summary(text, member.path, stem)
    return None


def parse_learned(text: str, file: str, mtime: datetime | None) -> list[ImportedMemory]:
    memories = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped.startswith("- "):
            continue
        content, metadata = stripped[2:].strip(), {}
        match = _CONTEXT.match(content)
        if match:
            content, metadata = match.group("content"), {"context": match.group("context")}
        memories.append(
            ImportedMemory(
                data=MemoryInput(
                    content=content,
                    kind=Kind.LESSON,
                    metadata=metadata,
                    created_at=mtime,
                    updated_at=mtime,
                ),
                file=file,
                line=lineno,
            )
        )
    return memories


def read(tree: Tree) -> Bundle:
    tree = tree.rooted(MARKERS)
    bundle = Bundle(format=NAME)
    for member in tree.under(""):
        path = member.path
        if path in (artifacts.MEMORY_MD, artifacts.MEMORY_SUMMARY) or path.startswith("skills/"):
            text = common.text_of(member, bundle.errors)
            if text is not None:
                bundle.artifacts[path] = text
            if member.mtime is not None:
                bundle.mtimes[path] = member.mtime
        elif path not in (RAW, LEARNED) and not path.startswith(f"{SUMMARIES}/"):
            note = gettext("%(file)s: not part of an oh-my-pi memory root; skipped")
            bundle.warnings.append(note % {"file": path})
    rollouts: dict[str, ImportedRollout] = {}
    raw = tree.get(RAW)
    raw_text = common.text_of(raw, bundle.errors) if raw is not None else None
    if raw is not None and raw_text is not None:
        for rollout in parse_raw(raw_text, raw.path, bundle.errors):
            rollouts[rollout.thread_id] = rollout
    for member in tree.under(SUMMARIES):
        if not member.path.endswith(".md"):
            continue
        summary = _read_summary(member, bundle.errors)
        if summary is None:
            continue
        existing = rollouts.setdefault(summary.thread_id, summary)
        if existing is not summary:
            existing.rollout_summary = summary.rollout_summary
            existing.rollout_slug = summary.rollout_slug
            existing.updated_at = existing.updated_at or summary.updated_at
    bundle.rollouts = list(rollouts.values())
    learned = tree.get(LEARNED)
    learned_text = common.text_of(learned, bundle.errors) if learned is not None else None
    if learned is not None and learned_text is not None:
        bundle.memories = parse_learned(learned_text, learned.path, learned.mtime)
    return bundle


def _file_slug(slug: str) -> str:
    """oh-my-pi's summary file slug: lowercase, non-alphanumerics → _, ≤ 20 characters."""
    return _SLUG_JUNK.sub("_", slug.lower()).strip("_")[:20].rstrip("_")


def _seconds_of(moment: datetime) -> int:
    return int(moment.timestamp())


def write(snapshot: Snapshot) -> dict[str, OutFile]:
    files = {
        path: OutFile(content.encode(), updated_at)
        for path, (content, updated_at) in snapshot.artifacts.items()
    }
    with_raw = [r for r in snapshot.rollouts if r.raw_memory.strip()]
    if with_raw:
        # As oh-my-pi's buildRawMemoriesMarkdown writes it, newest first (ties keep their
        # order, so an imported root comes back byte for byte).
        blocks = [
            f"## {r.thread_id}\nupdated_at: {_seconds_of(r.updated_at)}\n{r.raw_memory.strip()}\n"
            for r in sorted(with_raw, key=lambda r: r.updated_at, reverse=True)
        ]
        files[RAW] = OutFile(
            (f"{RAW_HEADER}\n\n" + "\n".join(blocks)).encode(),
            common.newest(r.updated_at for r in with_raw),
        )
    for rollout in snapshot.rollouts:
        if not rollout.rollout_summary:
            continue
        stem = rollout.thread_id.replace("/", "_")
        slug = _file_slug(rollout.rollout_slug)
        name = f"{SUMMARIES}/{stem}{'-' + slug if slug else ''}.md"
        text = (
            f"thread_id: {rollout.thread_id}\nupdated_at: {_seconds_of(rollout.updated_at)}\n\n"
            f"{rollout.rollout_summary}\n"
        )
        files[name] = OutFile(text.encode(), rollout.updated_at)
    lessons = sorted(snapshot.active(Kind.LESSON), key=lambda m: m.updated_at, reverse=True)
    lessons = lessons[:LEARNED_MAX]
    if lessons:
        lines = []
        for lesson in lessons:
            line = "- " + " ".join(lesson.content.split())[:LEARNED_CHARS]
            context = lesson.metadata.get("context")
            if isinstance(context, str) and context:
                line += f" _(context: {' '.join(context.split())[:CONTEXT_CHARS]})_"
            lines.append(line)
        files[LEARNED] = OutFile(
            ("\n".join(lines) + "\n").encode(), common.newest(m.updated_at for m in lessons)
        )
    return files
