"""The MEWCODE.md layer (seed-algorithms §1.5, §6.7): stored instruction files resolved into
the text an agent gets as its codebase and user instructions.

Order, as MewCode loads them: root MEWCODE.md, .mewcode/MEWCODE.md, then the user's own file
(~/.mewcode/MEWCODE.md); every one that exists, joined with "\\n---\\n" — concatenation, no
override. An `@include <relative path>` line (after strip) is replaced by the named project
file, resolved against the including file's directory and expanded recursively up to depth 5
(a file at depth 5 comes back as it is, its @include lines untouched). A path that leaves the
project root becomes the blocked marker, a missing file the skipped marker.

Where the stored layer differs from files on disk:
- The user's file has no directory inside the project; its includes resolve against the
  project root (a home-relative include could never be inside the project anyway).
- Backslashes in an include count as separators, so "..\\x" cannot slip past the root check.
- Includes may repeat as in MewCode, but a cycle (a file that includes itself, directly or
  through others) is cut where it closes and reported once per resolution with the cycle
  marker, instead of MewCode's copies up to the depth limit; included text is capped at
  MAX_INCLUDED_CHARS in total so repeated includes cannot blow up exponentially.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from accounts.models import User
from memoryhub.recall.models import InstructionFile
from projects.models import Project

ROOT_FILES = ("MEWCODE.md", ".mewcode/MEWCODE.md")
USER_FILE_LABEL = "~/.mewcode/MEWCODE.md"  # how the user's layer is named in `files`
SEPARATOR = "\n---\n"
MAX_INCLUDE_DEPTH = 5
INCLUDE_PREFIX = "@include "
BLOCKED = "<!-- @include blocked: path outside project -->"
SKIPPED = "<!-- @include skipped: file not found -->"
TOO_LARGE = "<!-- @include skipped: size limit reached -->"
CYCLE = "<!-- @include skipped: cycle {chain} -->"
MAX_INCLUDED_CHARS = 2_000_000
_ABSOLUTE = re.compile(r"^(?:/|~|[A-Za-z]:)")


@dataclass(frozen=True)
class ResolvedInstructions:
    text: str
    files: list[str]  # the files that went into `text`, in order of first use


@dataclass
class _Expansion:
    files: dict[str, str]  # project path → content
    used: list[str] = field(default_factory=list)
    included_chars: int = 0
    cycles: set[str] = field(default_factory=set)  # reported ones

    def use(self, path: str) -> None:
        if path not in self.used:
            self.used.append(path)


def include_target(base_dir: str, rel_path: str) -> str | None:
    """The project path `rel_path` names from directory `base_dir` ("" = the project root), or
    None when it is absolute or resolves outside the project root."""
    rel_path = rel_path.replace("\\", "/")
    if _ABSOLUTE.match(rel_path):
        return None
    target = posixpath.normpath(posixpath.join(base_dir, rel_path))
    if target == ".." or target.startswith(("../", "/")):
        return None
    return target


def _expand(
    content: str, base_dir: str, state: _Expansion, depth: int, chain: tuple[str, ...]
) -> str:
    if depth >= MAX_INCLUDE_DEPTH:
        return content
    lines: list[str] = []
    for line in content.split("\n"):
        stripped = line.strip()
        if not stripped.startswith(INCLUDE_PREFIX):
            lines.append(line)
            continue
        target = include_target(base_dir, stripped[len(INCLUDE_PREFIX) :].strip())
        if target is None:
            lines.append(BLOCKED)
            continue
        included = state.files.get(target)
        if included is None:
            lines.append(SKIPPED)
            continue
        if target in chain:
            cycle = " → ".join((*chain[chain.index(target) :], target))
            if cycle not in state.cycles:  # once: every other way into it says nothing more
                state.cycles.add(cycle)
                lines.append(CYCLE.format(chain=cycle))
            continue
        if state.included_chars + len(included) > MAX_INCLUDED_CHARS:
            lines.append(TOO_LARGE)
            continue
        state.included_chars += len(included)
        state.use(target)
        lines.append(
            _expand(included, posixpath.dirname(target), state, depth + 1, (*chain, target))
        )
    return "\n".join(lines)


def resolve(*, files: dict[str, str], user_file: str | None) -> ResolvedInstructions:
    """Resolve a project tree (path → content) and a user's own file (None: none)."""
    state = _Expansion(files=files)
    sections: list[str] = []
    for path in ROOT_FILES:
        if path in files:
            state.use(path)
            sections.append(_expand(files[path], posixpath.dirname(path), state, 0, (path,)))
    if user_file is not None:
        state.use(USER_FILE_LABEL)
        sections.append(_expand(user_file, "", state, 0, (USER_FILE_LABEL,)))
    return ResolvedInstructions(text=SEPARATOR.join(sections), files=state.used)


def instruction_sources(
    *, project: Project, user: User | None
) -> tuple[dict[str, str], str | None]:
    """The project's instruction files by path, and `user`'s own file (None: none).

    Reads every project instruction file at once: trees are small (each file ≤ 200 KB).
    """
    files = dict(
        InstructionFile.objects.filter(project=project, owner__isnull=True).values_list(
            "path", "content"
        )
    )
    user_file = None
    if user is not None:
        user_file = (
            InstructionFile.objects.filter(project=project, owner=user)
            .values_list("content", flat=True)
            .first()
        )
    return files, user_file


def instructions_resolve(*, project: Project, user: User | None) -> ResolvedInstructions:
    """The project's instructions as `user` gets them, and which files they came from."""
    files, user_file = instruction_sources(project=project, user=user)
    return resolve(files=files, user_file=user_file)


def resolved_instructions(*, project: Project, user: User | None) -> str:
    """The resolved MEWCODE.md text for `user` in `project` ("" when there are no files)."""
    return instructions_resolve(project=project, user=user).text
