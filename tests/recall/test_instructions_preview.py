"""The dashboard's instructions preview: includes expanded, problems shown in place."""

from __future__ import annotations

from accounts.actors import Actor
from accounts.models import User
from memoryhub.recall import instructions, services
from memoryhub.recall.instructions_preview import instructions_preview
from projects.models import Project


def put(project: Project, path: str, content: str, user: User | None = None) -> None:
    services.instruction_file_put(
        project=project, path=path, content=content, owner=user, actor=Actor.for_system("test")
    )


def test_it_shows_cycles_missing_files_and_escapes_in_place(project: Project, alice: User) -> None:
    put(project, "MEWCODE.md", "root\n@include docs/a.md\n@include ../secret\n@include nope.md")
    put(project, "docs/a.md", "A\n@include b.md")
    put(project, "docs/b.md", "B\n@include a.md")
    put(project, "x", "mine\n@include docs/b.md", user=alice)
    preview = instructions_preview(project=project, user=alice)
    errors = [(line.error, line.text) for line in preview.errors]
    assert ("outside", "../secret") in errors
    assert ("missing", "nope.md") in errors
    assert ("cycle", "docs/a.md → docs/b.md → docs/a.md") in errors
    assert ("cycle", "docs/b.md → docs/a.md → docs/b.md") in errors  # via the user file
    opened = [(line.path, line.depth) for line in preview.lines if line.kind == "open"]
    assert opened[:3] == [("MEWCODE.md", 0), ("docs/a.md", 1), ("docs/b.md", 2)]
    assert (instructions.USER_FILE_LABEL, 0) in opened
    # The resolved text is the resolver's, byte for byte.
    assert preview.resolved == instructions.resolved_instructions(project=project, user=alice)
    assert instructions.BLOCKED in preview.resolved
