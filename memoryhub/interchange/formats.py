"""The four on-disk formats by name, and the two use cases built on them."""

from __future__ import annotations

from types import ModuleType

from django.http import Http404
from django.utils.translation import gettext

from memoryhub.interchange import claude_code, meow, mewcode, omp, selectors, services
from memoryhub.interchange.archive import OutFile, Tree
from memoryhub.interchange.bundle import FormatError, ImportFailed, problem
from projects.selectors import ProjectAccess

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (mewcode, claude_code, meow, omp)}
DESCRIPTIONS = {
    mewcode.NAME: "MewCode workspace: MEWCODE.md (+ @include), .mewcode/memories.md, "
    ".mewcode/memory/*.md, .mewcode/sessions/*.jsonl + .meta",
    claude_code.NAME: "Claude Code memory directory: MEMORY.md + typed topic files, CLAUDE.md",
    meow.NAME: "meow-memory: .dsh-meow/memory.db (SQLite)",
    omp.NAME: "oh-my-pi memory root: MEMORY.md, memory_summary.md, skills/, raw_memories.md, "
    "rollout_summaries/, learned.md",
}


def format_module(name: str) -> ModuleType:
    module = FORMATS.get(name)
    if module is None:
        message = gettext("Unknown format %(name)s; use one of %(formats)s.")
        raise Http404(message % {"name": repr(name), "formats": ", ".join(FORMATS)})
    return module


def interchange_import(
    *, access: ProjectAccess, format: str, tree: Tree, dry_run: bool = False
) -> services.ImportResult:
    """Read `tree` as `format` and write it into the project, all or nothing (a dry run
    reports what it would do and writes nothing)."""
    module = format_module(format)
    try:
        bundle = module.read(tree)
    except FormatError as exc:  # a problem that stops the reader: nothing more to find
        raise ImportFailed([exc.as_error()]) from None
    if bundle.errors:
        # The transcripts are otherwise read as they are imported, after these: check them
        # now too, so the refusal lists every problem at once.
        raise ImportFailed(bundle.errors + services.transcript_problems(bundle))
    if bundle.empty:
        expected = DESCRIPTIONS[format].split(": ", 1)[1]
        message = gettext("found nothing to import as %(format)s; expected %(expected)s")
        raise ImportFailed([problem("", None, message % {"format": format, "expected": expected})])
    return services.bundle_import(access=access, bundle=bundle, dry_run=dry_run)


def interchange_export(*, access: ProjectAccess, format: str) -> dict[str, OutFile]:
    """The files `format` keeps, from what the caller can see in the project."""
    module = format_module(format)
    return dict(module.write(selectors.snapshot(access=access, parts=module.PARTS)))
