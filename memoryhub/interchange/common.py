"""Small pieces the format modules share: frontmatter, file names, @include closures."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.utils.translation import gettext

from memoryhub.interchange.archive import Member, Tree
from memoryhub.interchange.bundle import USER_INSTRUCTIONS, FormatError, collecting

FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_SLUG_JUNK = re.compile(r"[^a-z0-9]+")


def split_frontmatter(text: str, file: str) -> tuple[dict[str, tuple[str, int]], str, int]:
    """(fields → (value, line number), body, the body's first line number) of a Markdown file
    with `---` frontmatter; FormatError when there is none. Values: "key: value" split at the
    first colon, matching quotes stripped (MewCode's and Claude Code's reading)."""
    match = FRONTMATTER.match(text)
    if match is None:
        message = gettext("expected '---' frontmatter with name, description and type")
        raise FormatError(file, 1, message)
    fields: dict[str, tuple[str, int]] = {}
    for offset, line in enumerate(match.group(1).split("\n"), start=2):
        key, colon, value = line.partition(":")
        if not colon or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        fields[key.strip()] = (value, offset)
    body_line = text[: match.end()].count("\n") + 1
    return fields, text[match.end() :], body_line


def render_frontmatter(fields: Iterable[tuple[str, str]], body: str) -> str:
    lines = ["---", *(f"{key}: {_one_line(value)}" for key, value in fields), "---", "", ""]
    return "\n".join(lines) + body.strip("\n") + "\n"


def _one_line(value: str) -> str:
    return " ".join(value.split())


def slug(text: str, *, fallback: str, limit: int = 48) -> str:
    """A lowercase [a-z0-9_] file-name stem from `text` (ASCII words only), or `fallback`."""
    stem = _SLUG_JUNK.sub("_", text.lower()).strip("_")[:limit].strip("_")
    return stem or fallback


def unique_name(stem: str, suffix: str, taken: set[str]) -> str:
    name = f"{stem}{suffix}"
    counter = 2
    while name in taken:
        name = f"{stem}_{counter}{suffix}"
        counter += 1
    taken.add(name)
    return name


def text_of(member: Member, errors: list[dict[str, Any]]) -> str | None:
    """The member's text, or None (its problem noted in `errors`) when it is not UTF-8."""
    with collecting(errors):
        return member.read_text()
    return None


def newest(moments: Iterable[datetime]) -> datetime | None:
    values = list(moments)
    return max(values) if values else None


def include_closure(
    tree: Tree,
    roots: Iterable[str],
    targets: Callable[[str, str], list[str]],
    *,
    errors: list[dict[str, Any]],
    max_depth: int = 5,
) -> tuple[dict[str, str], list[str]]:
    """The root files that exist plus every file they include, transitively up to max_depth;
    `targets(path, content)` names the project paths one file includes. Returns (path →
    text, warnings about includes that name no file of the upload); a file that cannot be
    read is noted in `errors`."""
    files: dict[str, str] = {}
    warnings: list[str] = []
    frontier = [(path, 0) for path in roots if path in tree]
    seen: set[str] = set()
    while frontier:
        path, depth = frontier.pop(0)
        if path in seen:
            continue
        seen.add(path)
        member = tree.get(path)
        if member is None:
            continue
        text = text_of(member, errors)
        if text is None:
            continue
        files[path] = text
        if depth >= max_depth:
            continue
        for target in targets(path, files[path]):
            if target in tree:
                frontier.append((target, depth + 1))
            else:
                message = gettext("%(path)s: includes %(target)s, which is not in the upload")
                warnings.append(message % {"path": path, "target": target})
    return files, warnings


def mtimes(tree: Tree, paths: Iterable[str], *, user_file: str = "") -> dict[str, datetime]:
    """The modification times the upload carries for `paths` (and `user_file`, under
    bundle.USER_INSTRUCTIONS): a single uploaded file has none."""
    found = {path: tree.get(path) for path in paths}
    if user_file:
        found[USER_INSTRUCTIONS] = tree.get(user_file)
    return {path: m.mtime for path, m in found.items() if m is not None and m.mtime is not None}


def base_dir(path: str) -> str:
    return posixpath.dirname(path)
