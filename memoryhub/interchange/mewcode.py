"""MewCode workspace (seed 000; seed-algorithms §1.1, §1.3–1.5).

Layout of an upload or export (the project root; the user's ~/.mewcode lives under home/):

    MEWCODE.md, .mewcode/MEWCODE.md       instructions, plus every file they `@include`
    .mewcode/memories.md                  project auto-memory: ### 项目知识, ### 参考资料
    .mewcode/memory/**/*.md               project recall files (name/description/type frontmatter)
    .mewcode/sessions/{id}.jsonl + .meta  session transcripts
    home/.mewcode/MEWCODE.md              the user's own instructions
    home/.mewcode/memories.md             user auto-memory: ### 用户偏好, ### 纠正反馈
    home/.mewcode/memory/**/*.md          the user's recall files

memories.md lines are `- text` under a `### category` header (MewCode keeps nothing else); they
carry no timestamps, so an import dates them by the file's modification time and an export sets
that to the newest memory's. Kinds MewCode lacks are exported under the nearest category:
soul → 用户偏好; fact, lesson, topic, rule → 项目知识. Only active memories are exported.
"""

from __future__ import annotations

import json
import posixpath
from datetime import datetime
from typing import Any

from django.utils.translation import gettext

from memoryhub.interchange import common
from memoryhub.interchange.archive import OutFile, Tree
from memoryhub.interchange.bundle import (
    Bundle,
    ImportedMemory,
    ImportedRecallFile,
    ImportedSession,
    Snapshot,
    problem,
)
from memoryhub.memories.kinds import Kind, Scope, resolve_kind
from memoryhub.memories.services import MemoryInput
from memoryhub.recall.instructions import INCLUDE_PREFIX, ROOT_FILES, include_target
from memoryhub.sessions.importers import TranscriptFormatError, parse_mewcode_meta

NAME = "mewcode"
PARTS = frozenset({"memories", "recall_files", "instructions", "sessions"})
HOME = "home/.mewcode"
PROJECT_DIR = ".mewcode"
MEMORIES = "memories.md"
RECALL_DIR = "memory"
SESSIONS_DIR = "sessions"
MARKERS = (*ROOT_FILES, f"{PROJECT_DIR}/", f"{HOME}/")

# The four categories of memories.md, in MewCode's order, and which file each lives in.
CATEGORIES = (
    ("用户偏好", Kind.USER, HOME),
    ("纠正反馈", Kind.FEEDBACK, HOME),
    ("项目知识", Kind.PROJECT, PROJECT_DIR),
    ("参考资料", Kind.REFERENCE, PROJECT_DIR),
)
_HEADER_KIND = {header: kind for header, kind, _ in CATEGORIES}
_KIND_HEADER: dict[str, str] = {
    Kind.USER: "用户偏好",
    Kind.SOUL: "用户偏好",
    Kind.FEEDBACK: "纠正反馈",
    Kind.PROJECT: "项目知识",
    Kind.FACT: "项目知识",
    Kind.LESSON: "项目知识",
    Kind.TOPIC: "项目知识",
    Kind.RULE: "项目知识",
    Kind.REFERENCE: "参考资料",
}
# Lines MewCode's writer drops as placeholders.
PLACEHOLDERS = frozenset({"", "...", "…", "无", "暂无", "N/A"})


def _category(header: str) -> str | None:
    for name, kind in _HEADER_KIND.items():
        if name in header:
            return kind
    return resolve_kind(header)


def parse_memories(
    text: str, file: str, mtime: datetime | None, errors: list[dict[str, Any]]
) -> list[ImportedMemory]:
    """The `- ` lines of a memories.md under their ### categories; problems go to `errors`."""
    memories: list[ImportedMemory] = []
    kind: str | None = None
    unknown = False  # under a header already reported: its lines are not problems of their own
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if line.startswith("### "):
            kind = _category(line[4:].strip())
            unknown = kind is None
            if unknown:
                expected = ", ".join(h for h, _, _ in CATEGORIES)
                note = gettext("unknown category %(name)s; expected one of %(expected)s") % {
                    "name": repr(line[4:].strip()),
                    "expected": expected,
                }
                errors.append(problem(file, lineno, note))
            continue
        if not stripped.startswith("- "):
            continue  # MewCode keeps only bullets; anything else is commentary
        content = stripped[2:].strip()
        if content in PLACEHOLDERS or unknown:
            continue
        if kind is None:
            note = gettext("a memory line before any '### category' header")
            errors.append(problem(file, lineno, note))
            continue
        memories.append(
            ImportedMemory(
                data=MemoryInput(content=content, kind=kind, created_at=mtime, updated_at=mtime),
                file=file,
                line=lineno,
            )
        )
    return memories


def _includes(path: str, content: str) -> list[str]:
    base = "" if path == f"{HOME}/MEWCODE.md" else posixpath.dirname(path)
    targets = []
    for line in content.split("\n"):
        stripped = line.strip()
        if stripped.startswith(INCLUDE_PREFIX):
            target = include_target(base, stripped[len(INCLUDE_PREFIX) :].strip())
            if target is not None:
                targets.append(target)
    return targets


def read(tree: Tree) -> Bundle:
    tree = tree.rooted(MARKERS)
    bundle = Bundle(format=NAME)
    for directory, scope in ((PROJECT_DIR, Scope.PROJECT), (HOME, Scope.USER)):
        memories = tree.get(f"{directory}/{MEMORIES}")
        if memories is None and directory == PROJECT_DIR:
            memories = tree.get(MEMORIES)  # a memories.md uploaded on its own
        text = common.text_of(memories, bundle.errors) if memories is not None else None
        if memories is not None and text is not None:
            bundle.memories += parse_memories(text, memories.path, memories.mtime, bundle.errors)
        for member in tree.under(f"{directory}/{RECALL_DIR}"):
            relative = member.path[len(f"{directory}/{RECALL_DIR}/") :]
            if not member.path.endswith(".md"):
                note = gettext("%(file)s: not a .md file; skipped") % {"file": member.path}
                bundle.warnings.append(note)
                continue
            text = common.text_of(member, bundle.errors)
            if text is not None:
                bundle.recall_files.append(
                    ImportedRecallFile(scope, relative, text, member.mtime, member.path)
                )
    roots = [p for p in ROOT_FILES if p in tree]
    # The user's file includes project files too (resolved against the project root).
    user_file = tree.get(f"{HOME}/MEWCODE.md")
    included, warnings = common.include_closure(
        tree, [*roots, *([user_file.path] if user_file else [])], _includes, errors=bundle.errors
    )
    bundle.warnings += warnings
    bundle.instructions = {p: t for p, t in included.items() if not p.startswith(f"{HOME}/")}
    if user_file is not None and user_file.path in included:
        bundle.user_instructions = included[user_file.path]
    bundle.mtimes = common.mtimes(
        tree, bundle.instructions, user_file=user_file.path if user_file else ""
    )
    for member in tree.under(f"{PROJECT_DIR}/{SESSIONS_DIR}"):
        if not member.path.endswith(".jsonl"):
            continue
        stem = member.path[: -len(".jsonl")]
        meta_member = tree.get(f"{stem}.meta")
        meta = meta_member.read_bytes() if meta_member else None
        session = ImportedSession(posixpath.basename(stem), member.path, member, meta)
        if meta is not None:
            try:
                parsed = parse_mewcode_meta(meta)
            except TranscriptFormatError as exc:
                bundle.errors.append(problem(f"{stem}.meta", None, exc.reason))
                continue
            session.external_id = parsed.id
        bundle.sessions.append(session)
    return bundle


def render_memories(headers: tuple[str, ...], by_header: dict[str, list[str]]) -> str:
    """memories.md as MewCode's _write_memories leaves it: every header of the file's side,
    one `- ` line per memory (a multi-line memory is joined onto one line)."""
    lines: list[str] = []
    for header in headers:
        lines.append(f"### {header}")
        lines += [f"- {' '.join(text.split())}" for text in by_header.get(header, [])]
    return "\n".join(lines) + "\n"


def write(snapshot: Snapshot) -> dict[str, OutFile]:
    files: dict[str, OutFile] = {}
    for directory, headers in (
        (HOME, ("用户偏好", "纠正反馈")),
        (PROJECT_DIR, ("项目知识", "参考资料")),
    ):
        chosen = [
            m
            for m in snapshot.active()
            if _KIND_HEADER[m.kind] in headers and (directory == HOME) == (m.scope == Scope.USER)
        ]
        if not chosen:
            continue
        by_header: dict[str, list[str]] = {}
        for memory in chosen:
            by_header.setdefault(_KIND_HEADER[memory.kind], []).append(memory.content)
        files[f"{directory}/{MEMORIES}"] = OutFile(
            render_memories(headers, by_header).encode(),
            common.newest(m.updated_at for m in chosen),
        )
    for recall in snapshot.recall_files:
        directory = HOME if recall.scope == Scope.USER else PROJECT_DIR
        files[f"{directory}/{RECALL_DIR}/{recall.path}"] = OutFile(
            recall.content.encode(), recall.updated_at
        )
    for path, (content, updated_at) in snapshot.instructions.items():
        files[path] = OutFile(content.encode(), updated_at)
    if snapshot.user_instructions is not None:
        content, updated_at = snapshot.user_instructions
        files[f"{HOME}/MEWCODE.md"] = OutFile(content.encode(), updated_at)
    for session in snapshot.sessions:
        name = session.external_id
        if not _safe(name):  # the .meta keeps the real id; the file name only has to be safe
            name = common.slug(name, fallback="session", limit=120)
        stem = f"{PROJECT_DIR}/{SESSIONS_DIR}/{name}"
        lines = [json.dumps(r, ensure_ascii=False) for r in session.records]
        files[f"{stem}.jsonl"] = OutFile(("\n".join(lines) + "\n").encode(), session.last_active_at)
        meta = {
            "id": session.external_id,
            "title": session.title,
            "summary": session.summary,
            "message_count": session.message_count,
            "total_tokens": session.token_estimate,
            "created_at": session.created_at.isoformat(),
            "last_active": session.last_active_at.isoformat(),
        }
        files[f"{stem}.meta"] = OutFile(
            json.dumps(meta, ensure_ascii=False, indent=2).encode(), session.last_active_at
        )
    return files


def _safe(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "._-" for c in name) and name[0] != "."
