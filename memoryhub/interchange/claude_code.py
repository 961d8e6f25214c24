"""Claude Code memory directory (seed-algorithms §2) and CLAUDE.md instructions.

Layout of an upload or export:

    memory/MEMORY.md          the index: one `- [Title](file.md) — hook` line per memory
    memory/*.md               one memory per file: frontmatter name, description, type
                              (user | feedback | project | reference), then the body
    CLAUDE.md, .claude/CLAUDE.md   project instructions, plus the files they import (@path)
    home/.claude/CLAUDE.md    the user's own instructions (~/.claude/CLAUDE.md)

A zip of ~/.claude/projects/<slug>/memory itself (MEMORY.md at the top) is read the same way;
a zip of ~/.claude/projects/<slug>/ brings the transcripts beside memory/ too (<uuid>.jsonl,
imported as POST …/sessions/import/ would; exports do not write transcripts back).
Each topic file becomes one memory: type → kind, name → title, body → content, description →
metadata.description, the file name → its external id (so a re-import matches it), the file's
modification time → created and updated. MEMORY.md is derived (rebuilt on export) and not
stored. Exports add three optional keys Claude Code ignores, so a MemoryHub bank survives the
trip: `kind` (when it is not one of the four types), `keywords` and `importance`.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from django.utils.translation import gettext

from memoryhub.interchange import common
from memoryhub.interchange.archive import OutFile, Tree
from memoryhub.interchange.bundle import (
    Bundle,
    ImportedMemory,
    ImportedSession,
    Snapshot,
    SnapshotMemory,
    collecting,
    problem,
)
from memoryhub.memories.kinds import Kind, resolve_kind
from memoryhub.memories.services import MemoryInput

NAME = "claude_code"
PARTS = frozenset({"memories", "instructions"})
MEMORY_DIR = "memory"
INDEX = "MEMORY.md"
HOME_FILE = "home/.claude/CLAUDE.md"
ROOT_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
MARKERS = (f"{MEMORY_DIR}/{INDEX}", INDEX, *ROOT_FILES, f"{MEMORY_DIR}/")
TYPES = (Kind.USER, Kind.FEEDBACK, Kind.PROJECT, Kind.REFERENCE)
# Kinds Claude Code lacks, written under the nearest type (and `kind:` kept beside it).
_TYPE_OF: dict[str, str] = {
    Kind.SOUL: Kind.USER,
    **{k: Kind.PROJECT for k in (Kind.FACT, Kind.LESSON, Kind.TOPIC, Kind.RULE)},
}
_IMPORT = re.compile(r"(?<![\w`@])@([A-Za-z0-9_./~-][^\s`]*)")
_INDEX_LINE = re.compile(r"^\s*-\s*\[(?P<title>[^\]]*)\]\((?P<file>[^)]+)\)")
NAME_CHARS = 80
DESCRIPTION_CHARS = 150


def _memory_dir(tree: Tree) -> str:
    if f"{MEMORY_DIR}/{INDEX}" in tree or tree.under(MEMORY_DIR):
        return MEMORY_DIR
    return ""


def _imports(path: str, content: str) -> list[str]:
    """Files a CLAUDE.md imports with @path (not inside code blocks or spans)."""
    targets: list[str] = []
    fenced = False
    base = posixpath.dirname(path) if path != HOME_FILE else ""
    for line in content.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _IMPORT.finditer(line):
            raw = match.group(1).rstrip(".,;:)")
            if raw.startswith(("/", "~")):
                continue  # outside the project: not part of a project upload
            target = posixpath.normpath(posixpath.join(base, raw))
            if not target.startswith("../") and target != "..":
                targets.append(target)
    return targets


def parse_topic(
    text: str, file: str, relative: str, mtime: object, errors: list[dict[str, Any]]
) -> ImportedMemory | None:
    """The file's memory, or None with every problem of its frontmatter noted in `errors`."""
    found = len(errors)
    with collecting(errors):
        fields, body, body_line = common.split_frontmatter(text, file)
    if len(errors) > found:
        return None
    type_value, type_line = fields.get("type", ("", 1))
    kind = type_value
    if type_value not in TYPES:
        note = gettext("type must be one of %(types)s; got %(value)s") % {
            "types": ", ".join(TYPES),
            "value": repr(type_value),
        }
        errors.append(problem(file, type_line, note))
    if "kind" in fields:
        resolved = resolve_kind(fields["kind"][0])
        if resolved is None:
            note = gettext("unknown kind %(kind)s") % {"kind": repr(fields["kind"][0])}
            errors.append(problem(file, fields["kind"][1], note))
        kind = resolved or kind
    importance = 1
    if "importance" in fields:
        value, line = fields["importance"]
        if value.isdigit() and int(value) >= 1:
            importance = int(value)
        else:
            note = gettext("importance must be a whole number ≥ 1; got %(value)s") % {
                "value": repr(value)
            }
            errors.append(problem(file, line, note))
    if len(errors) > found:
        return None
    keywords = [k.strip() for k in fields.get("keywords", ("", 0))[0].split(",") if k.strip()]
    metadata = {}
    if fields.get("description", ("", 0))[0]:
        metadata["description"] = fields["description"][0]
    return ImportedMemory(
        data=MemoryInput(
            content=body.strip(),
            kind=kind,
            title=fields.get("name", ("", 0))[0][:200],
            keywords=keywords,
            importance=importance,
            metadata=metadata,
            created_at=mtime,  # type: ignore[arg-type]
            updated_at=mtime,  # type: ignore[arg-type]
        ),
        file=file,
        line=body_line,
        external_id=f"{NAME}:{relative}",
    )


def read(tree: Tree) -> Bundle:
    tree = tree.rooted(MARKERS)
    bundle = Bundle(format=NAME)
    directory = _memory_dir(tree)
    prefix = f"{directory}/" if directory else ""
    index = tree.get(f"{prefix}{INDEX}")
    for member in tree.under(directory):
        relative = member.path[len(prefix) :]
        if relative == INDEX or not relative.endswith(".md"):
            continue
        if not directory and (relative in ROOT_FILES or relative.startswith(("home/", ".claude/"))):
            continue
        text = common.text_of(member, bundle.errors)
        if text is None:
            continue
        memory = parse_topic(text, member.path, relative, member.mtime, bundle.errors)
        if memory is not None:
            bundle.memories.append(memory)
    index_text = common.text_of(index, bundle.errors) if index is not None else None
    if index is not None and index_text is not None:
        listed = {m.external_id[len(NAME) + 1 :] for m in bundle.memories}
        for lineno, line in enumerate(index_text.splitlines(), start=1):
            match = _INDEX_LINE.match(line)
            if match and match.group("file") not in listed:
                missing = match.group("file")
                note = gettext("%(file)s:%(line)s: lists %(missing)s, not uploaded")
                bundle.warnings.append(
                    note % {"file": index.path, "line": lineno, "missing": missing}
                )
    if directory:
        # A zip of ~/.claude/projects/<slug>/ also holds the project's transcripts.
        for member in tree.under(""):
            if "/" not in member.path and member.path.endswith(".jsonl"):
                stem = member.path[: -len(".jsonl")]
                bundle.sessions.append(
                    ImportedSession(stem, member.path, member, transcript_format=NAME)
                )
    home = tree.get(HOME_FILE)
    included, warnings = common.include_closure(
        tree, [*ROOT_FILES, *([HOME_FILE] if home else [])], _imports, errors=bundle.errors
    )
    # An @word that names no file is usually not an import at all (e.g. "@alice").
    del warnings
    bundle.instructions = {p: t for p, t in included.items() if p != HOME_FILE}
    if HOME_FILE in included:
        bundle.user_instructions = included[HOME_FILE]
    bundle.mtimes = common.mtimes(tree, bundle.instructions, user_file=HOME_FILE if home else "")
    return bundle


def _first_line(text: str, limit: int) -> str:
    line = " ".join(text.strip().split("\n", 1)[0].split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _topic(memory: SnapshotMemory) -> str:
    type_ = memory.kind if memory.kind in TYPES else _TYPE_OF[memory.kind]
    description = memory.metadata.get("description")
    fields = [
        ("name", memory.title or _first_line(memory.content, NAME_CHARS)),
        (
            "description",
            description
            if isinstance(description, str) and description
            else _first_line(memory.content, DESCRIPTION_CHARS),
        ),
        ("type", type_),
    ]
    if memory.kind != type_:
        fields.append(("kind", memory.kind))
    if memory.keywords:
        fields.append(("keywords", ", ".join(k.replace(",", " ") for k in memory.keywords)))
    if memory.importance != 1:
        fields.append(("importance", str(memory.importance)))
    return common.render_frontmatter(fields, memory.content)


def write(snapshot: Snapshot) -> dict[str, OutFile]:
    files: dict[str, OutFile] = {}
    taken: set[str] = {INDEX}
    index_lines: list[str] = []
    memories = snapshot.active()
    for memory in memories:
        own = memory.own_id(NAME)
        if own and own.endswith(".md") and own not in taken and "/" not in own:
            name = own
            taken.add(name)
        else:
            type_ = memory.kind if memory.kind in TYPES else _TYPE_OF[memory.kind]
            stem = common.slug(
                memory.title or memory.content[:60],
                fallback=f"{memory.kind}_{memory.public_id[:8]}",
            )
            name = common.unique_name(
                f"{type_}_{stem}" if not stem.startswith(type_) else stem, ".md", taken
            )
        content = _topic(memory)
        files[f"{MEMORY_DIR}/{name}"] = OutFile(content.encode(), memory.updated_at)
        title = memory.title or _first_line(memory.content, NAME_CHARS)
        hook = _first_line(
            str(memory.metadata.get("description") or memory.content), DESCRIPTION_CHARS
        )
        index_lines.append(f"- [{title}]({name}) — {hook}")
    if memories:
        files[f"{MEMORY_DIR}/{INDEX}"] = OutFile(
            ("\n".join(index_lines) + "\n").encode(), common.newest(m.updated_at for m in memories)
        )
    for path, (content, updated_at) in snapshot.instructions.items():
        files[path] = OutFile(content.encode(), updated_at)
    if snapshot.user_instructions is not None:
        content, updated_at = snapshot.user_instructions
        files[HOME_FILE] = OutFile(content.encode(), updated_at)
    return files
