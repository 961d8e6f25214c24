"""The resolved MEWCODE.md instructions with every @include shown where it happens, and its
problems (cycles, missing files, paths outside the tree, limits) in place: the dashboard's
preview. The text an agent gets is still instructions.instructions_resolve's; this walk follows
the same rules (include_target, MAX_INCLUDE_DEPTH) to say what happened at each line.

Where it differs on purpose: a cycle is reported and not followed (the resolver follows it
until the depth limit, which is what the agent gets and what the preview's "resolved text"
shows verbatim).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from accounts.models import User
from memoryhub.recall import instructions
from projects.models import Project


@dataclass(frozen=True)
class Line:
    kind: str  # "open" (a file starts), "close", "text", "error"
    depth: int
    text: str = ""
    path: str = ""
    error: str = ""  # "cycle", "missing", "outside", "too_large", "depth"


@dataclass
class InstructionsPreview:
    lines: list[Line] = field(default_factory=list)
    resolved: str = ""
    files: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Line]:
        return [line for line in self.lines if line.kind == "error"]


def _walk(
    out: list[Line],
    files: dict[str, str],
    path: str,
    content: str,
    base_dir: str,
    stack: tuple[str, ...],
    depth: int,
    budget: list[int],
) -> None:
    out.append(Line(kind="open", depth=depth, path=path))
    for raw in content.split("\n"):
        stripped = raw.strip()
        if not stripped.startswith(instructions.INCLUDE_PREFIX):
            out.append(Line(kind="text", depth=depth, text=raw, path=path))
            continue
        rel = stripped[len(instructions.INCLUDE_PREFIX) :].strip()
        target = instructions.include_target(base_dir, rel)
        if depth >= instructions.MAX_INCLUDE_DEPTH:
            out.append(Line(kind="error", depth=depth, text=raw, path=path, error="depth"))
        elif target is None:
            out.append(Line(kind="error", depth=depth, text=rel, path=path, error="outside"))
        elif target not in files:
            out.append(Line(kind="error", depth=depth, text=target, path=path, error="missing"))
        elif target in stack:
            chain = " → ".join((*stack[stack.index(target) :], target))
            out.append(Line(kind="error", depth=depth, text=chain, path=path, error="cycle"))
        elif budget[0] + len(files[target]) > instructions.MAX_INCLUDED_CHARS:
            out.append(Line(kind="error", depth=depth, text=target, path=path, error="too_large"))
        else:
            budget[0] += len(files[target])
            _walk(
                out,
                files,
                target,
                files[target],
                posixpath.dirname(target),
                (*stack, target),
                depth + 1,
                budget,
            )
    out.append(Line(kind="close", depth=depth, path=path))


def instructions_preview(*, project: Project, user: User | None) -> InstructionsPreview:
    """What `user`'s agent gets (`resolved`, byte for byte) and how it was put together."""
    files, user_file = instructions.instruction_sources(project=project, user=user)
    resolved = instructions.resolve(files=files, user_file=user_file)
    preview = InstructionsPreview(resolved=resolved.text, files=resolved.files)
    budget = [0]
    for path in instructions.ROOT_FILES:
        if path in files:
            _walk(
                preview.lines, files, path, files[path], posixpath.dirname(path), (path,), 0, budget
            )
    if user_file is not None:
        label = instructions.USER_FILE_LABEL
        _walk(preview.lines, files, label, user_file, "", (label,), 0, budget)
    return preview
