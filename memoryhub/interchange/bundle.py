"""What a format reader produces and a writer consumes, free of the database.

A reader turns a Tree into a Bundle: memories (each remembering the file and line it came
from, so an error can point there), recall files, instruction files, session transcripts,
bank artifacts and oh-my-pi rollouts. services.bundle_import writes a Bundle; selectors.snapshot
reads what a caller may see into a Snapshot, which a writer turns into files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils.translation import gettext, ngettext

from memoryhub.core.exceptions import ApplicationError
from memoryhub.memories.services import MemoryInput

# metadata keys MemoryHub sets on imported memories
EXTERNAL_ID = "external_id"  # "<format>:<the format's own id>", when the format has ids
IMPORTED = "imported"  # {"format", "file", "line", "import_id"}: provenance
USER_INSTRUCTIONS = ""  # Bundle.mtimes key of the user's own instruction file


class FormatError(ApplicationError):
    """Input that breaks the format; `file` and `line` (1-based, None: the whole file) say
    where. Raised by readers, collected by the import into one 400 answer."""

    code = "validation_error"

    def __init__(self, file: str, line: int | None, message: str) -> None:
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}", details={"file": file, "line": line})
        self.file = file
        self.line = line
        self.reason = message

    def as_error(self) -> dict[str, Any]:
        return problem(self.file, self.line, self.reason)


def problem(file: str, line: int | None, message: str) -> dict[str, Any]:
    """One entry of a refusal's details.errors: the one shape every refusal lists."""
    return {"file": file, "line": line, "message": message}


@contextmanager
def collecting(errors: list[dict[str, Any]]) -> Iterator[None]:
    """Note a FormatError and go on with the next file or row: a refusal lists every problem
    of the upload, not just the first."""
    try:
        yield
    except FormatError as exc:
        errors.append(exc.as_error())


class ImportFailed(ApplicationError):
    """The import was refused as a whole; details.errors lists every problem found, each a
    problem() {"file", "line", "message"}."""

    code = "validation_error"

    def __init__(self, errors: list[dict[str, Any]], message: str = "") -> None:
        if not message:
            first = errors[0]
            where = first["file"] + (f":{first['line']}" if first.get("line") else "")
            text = f"{where}: {first['message']}" if where else str(first["message"])
            more = len(errors) - 1
            if more:
                message = ngettext(
                    "Nothing was imported: %(problem)s (and %(n)d more)",
                    "Nothing was imported: %(problem)s (and %(n)d more)",
                    more,
                ) % {"problem": text, "n": more}
            else:
                message = gettext("Nothing was imported: %(problem)s") % {"problem": text}
        super().__init__(message, details={"errors": errors})


@dataclass
class ImportedMemory:
    data: MemoryInput
    file: str
    line: int | None = None
    external_id: str = ""  # "<format>:<id>" when the format has ids


@dataclass
class ImportedRecallFile:
    scope: str
    path: str  # relative to its memory directory
    content: str
    mtime: datetime | None
    file: str  # where it was in the upload


@dataclass
class ImportedSession:
    external_id: str
    file: str
    transcript: Any  # an archive Member: opened and streamed by the import
    meta: bytes | None = None
    transcript_format: str = "mewcode"  # or "claude_code"


@dataclass
class ImportedRollout:
    """One oh-my-pi stage-1 output (raw memory and/or rollout summary of a thread)."""

    thread_id: str
    raw_memory: str = ""
    rollout_summary: str = ""
    rollout_slug: str = ""
    updated_at: datetime | None = None
    file: str = ""


@dataclass
class Bundle:
    format: str
    memories: list[ImportedMemory] = field(default_factory=list)
    recall_files: list[ImportedRecallFile] = field(default_factory=list)
    instructions: dict[str, str] = field(default_factory=dict)  # project tree
    user_instructions: str | None = None  # the importer's own instruction file
    sessions: list[ImportedSession] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)
    rollouts: list[ImportedRollout] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Problems found while reading (problem() dicts): any of them refuses the import.
    errors: list[dict[str, Any]] = field(default_factory=list)
    # The source files' modification times of instructions and artifacts (by their path
    # above; USER_INSTRUCTIONS for the user's own file): what they are stored with.
    mtimes: dict[str, datetime] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (
            self.memories
            or self.recall_files
            or self.instructions
            or self.user_instructions is not None
            or self.sessions
            or self.artifacts
            or self.rollouts
        )


@dataclass
class SnapshotMemory:
    """A memory as writers see it (plain data, so writers never touch the ORM)."""

    public_id: str
    kind: str
    scope: str
    title: str
    content: str
    keywords: list[str]
    importance: int
    status: str
    subcategory: str
    goal: str
    metadata: dict[str, Any]
    source_session: str
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    hit_count: int

    @property
    def external_id(self) -> str:
        value = self.metadata.get(EXTERNAL_ID, "")
        return value if isinstance(value, str) else ""

    def own_id(self, format: str) -> str:
        """The id this memory had in `format`, or "" when it did not come from there."""
        prefix = f"{format}:"
        return self.external_id[len(prefix) :] if self.external_id.startswith(prefix) else ""


@dataclass
class SnapshotRecallFile:
    scope: str
    path: str
    content: str
    updated_at: datetime


@dataclass
class SnapshotSession:
    external_id: str
    title: str
    summary: str
    message_count: int
    token_estimate: int
    created_at: datetime
    last_active_at: datetime
    records: Iterator[dict[str, Any]]  # MewCode wire records, read lazily


@dataclass
class SnapshotRollout:
    thread_id: str
    raw_memory: str
    rollout_summary: str
    rollout_slug: str
    updated_at: datetime


@dataclass
class Snapshot:
    project_slug: str
    memories: list[SnapshotMemory] = field(default_factory=list)
    recall_files: list[SnapshotRecallFile] = field(default_factory=list)
    instructions: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    user_instructions: tuple[str, datetime] | None = None
    sessions: list[SnapshotSession] = field(default_factory=list)
    artifacts: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    rollouts: list[SnapshotRollout] = field(default_factory=list)

    def active(self, *kinds: str) -> list[SnapshotMemory]:
        """Active memories (of `kinds`, if given), oldest first: what plain-text formats carry."""
        return [m for m in self.memories if m.status == "active" and (not kinds or m.kind in kinds)]
