"""meow-memory's SQLite memory.db (seed 004; seed-algorithms §5.1).

One table per level — soul, user, project, fact, lesson, topic, rules — with the columns id
(36 chars, a base36 millisecond prefix), title, content, importance, keywords (a JSON array),
status (active | stale | archived), source_session, hit_count, created_at, updated_at and
last_accessed_at (epoch milliseconds); project has project (NOT NULL) and subcategory, fact and
rules project, lesson corrected and project, topic goal and project.

Upload the file itself (.dsh-meow/memory.db) or a zip/tar holding it; run a checkpoint first
(`sqlite3 memory.db 'PRAGMA wal_checkpoint(TRUNCATE)'`) or include memory.db-wal beside it.

Levels map onto kinds one to one (rules → rule), except that a lesson with corrected = 1 is a
`feedback` memory (and is written back as a corrected lesson). The row id is the memory's
external id; the project column (null, "", "全局" or a comma list), hit_count and
last_accessed_at are kept in metadata.meow so an export writes them back unchanged. Kinds meow
lacks are exported as the nearest level: reference → fact. Proposed memories stay behind.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.utils.translation import gettext

from memoryhub.interchange.archive import OutFile, Tree
from memoryhub.interchange.bundle import (
    Bundle,
    FormatError,
    ImportedMemory,
    Snapshot,
    SnapshotMemory,
    collecting,
    problem,
)
from memoryhub.memories.kinds import Kind, Scope, Subcategory
from memoryhub.memories.services import MemoryInput

NAME = "meow"
PARTS = frozenset({"memories"})
DB_PATH = ".dsh-meow/memory.db"
MARKERS = (DB_PATH, "memory.db")
LEVELS = ("soul", "user", "project", "fact", "lesson", "topic", "rules")
STATUSES = ("active", "stale", "archived")
META = "meow"  # metadata key
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ID = re.compile(r"^[0-9a-z]{9}-[0-9a-f]{26}$")

_COMMON = """
  id TEXT PRIMARY KEY,
  title TEXT,
  content TEXT NOT NULL,
  importance INTEGER NOT NULL DEFAULT 1,
  keywords TEXT NOT NULL DEFAULT '[]',
  status TEXT NOT NULL DEFAULT 'active',
  source_session TEXT,
  hit_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_accessed_at INTEGER"""
# The level tables' extra columns, as meow-memory's src/db.ts creates them.
_EXTRA = {
    "soul": "",
    "user": "",
    "project": ",\n  project TEXT NOT NULL,\n  subcategory TEXT",
    "fact": ",\n  project TEXT",
    "lesson": ",\n  corrected INTEGER NOT NULL DEFAULT 0,\n  project TEXT",
    "topic": ",\n  goal TEXT,\n  project TEXT",
    "rules": ",\n  project TEXT",
}
SCHEMA = [f"CREATE TABLE IF NOT EXISTS {level} ({_COMMON}{_EXTRA[level]})" for level in LEVELS]

_KIND_OF_LEVEL: dict[str, str] = {
    "soul": Kind.SOUL,
    "user": Kind.USER,
    "project": Kind.PROJECT,
    "fact": Kind.FACT,
    "lesson": Kind.LESSON,
    "topic": Kind.TOPIC,
    "rules": Kind.RULE,
}
_LEVEL_OF_KIND: dict[str, str] = {kind: level for level, kind in _KIND_OF_LEVEL.items()} | {
    Kind.FEEDBACK: "lesson",
    Kind.REFERENCE: "fact",
}


def _ms(value: Any, where: str, column: str) -> datetime:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        message = gettext("%(column)s must be epoch milliseconds; got %(value)s")
        raise FormatError(where, None, message % {"column": column, "value": repr(value)})
    return _EPOCH + timedelta(milliseconds=value)


def _to_ms(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # exact: no float rounding


def _row(level: str, row: sqlite3.Row, file: str) -> ImportedMemory:
    columns = row.keys()
    where = f"{file} ({level} {row['id']})"
    keywords_raw = row["keywords"] if "keywords" in columns else "[]"
    try:
        keywords = json.loads(keywords_raw or "[]")
    except (json.JSONDecodeError, TypeError):
        message = gettext("keywords is not a JSON array: %(value)s")
        raise FormatError(where, None, message % {"value": repr(keywords_raw)}) from None
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise FormatError(where, None, gettext("keywords must be a JSON array of strings"))
    status = row["status"] or "active"
    if status not in STATUSES:
        message = gettext("status must be one of %(values)s")
        raise FormatError(where, None, message % {"values": ", ".join(STATUSES)})
    importance = row["importance"]
    if not isinstance(importance, int) or importance < 1:
        message = gettext("importance must be a whole number ≥ 1; got %(value)s")
        raise FormatError(where, None, message % {"value": repr(importance)})
    kind = _KIND_OF_LEVEL[level]
    meta: dict[str, Any] = {}
    if "project" in columns:
        meta["project"] = row["project"]
    if level == "lesson" and row["corrected"]:
        kind = Kind.FEEDBACK
        meta["corrected"] = int(row["corrected"])
    if row["hit_count"]:
        meta["hit_count"] = row["hit_count"]
    if row["last_accessed_at"] is not None:
        meta["last_accessed_at"] = row["last_accessed_at"]
    subcategory = ""
    if level == "project" and row["subcategory"]:
        subcategory = row["subcategory"]
        if subcategory not in Subcategory.values:
            message = gettext("subcategory must be one of %(values)s")
            raise FormatError(where, None, message % {"values": ", ".join(Subcategory.values)})
    return ImportedMemory(
        data=MemoryInput(
            content=row["content"] or "",
            kind=kind,
            title=row["title"] or "",
            keywords=keywords,
            importance=importance,
            status=status,
            subcategory=subcategory,
            goal=(row["goal"] or "") if level == "topic" else "",
            metadata={META: meta} if meta else {},
            source_session=(row["source_session"] or "")[:200],
            created_at=_ms(row["created_at"], where, "created_at"),
            updated_at=_ms(row["updated_at"], where, "updated_at"),
        ),
        file=where,
        external_id=f"{NAME}:{row['id']}",
    )


def read(tree: Tree) -> Bundle:
    tree = tree.rooted(MARKERS)
    member = next((tree.get(p) for p in MARKERS if p in tree), None)
    if member is None:
        raise FormatError(DB_PATH, None, gettext("no memory.db in the upload"))
    bundle = Bundle(format=NAME)
    with tempfile.TemporaryDirectory(prefix="mh-meow-") as scratch:
        # A private copy (with its WAL, if uploaded): reading never touches the user's file.
        copy = Path(scratch) / "memory.db"
        shutil.copyfile(member.fs_path, copy)
        wal = tree.get(member.path + "-wal")
        if wal is not None:
            shutil.copyfile(wal.fs_path, Path(scratch) / "memory.db-wal")
        try:
            connection = sqlite3.connect(copy)
            try:
                connection.row_factory = sqlite3.Row
                tables = {
                    name
                    for (name,) in connection.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table'"
                    )
                }
                levels = [level for level in LEVELS if level in tables]
                if not levels:
                    message = gettext("no meow-memory level tables (soul, user, project, …)")
                    raise FormatError(member.path, None, message)
                for level in levels:
                    for row in connection.execute(
                        f"SELECT * FROM {level} ORDER BY created_at, id"  # noqa: S608 - fixed names
                    ):
                        with collecting(bundle.errors):  # every bad row is listed
                            bundle.memories.append(_row(level, row, member.path))
            finally:
                connection.close()
        except sqlite3.DatabaseError as exc:
            note = gettext("not a readable SQLite database: %(error)s") % {"error": exc}
            bundle.errors.append(problem(member.path, None, note))
    return bundle


def new_id(created_at: datetime, public_id: str) -> str:
    """meow-memory's id shape: base36 milliseconds (9 chars) - 26 hex chars."""
    ms = _to_ms(created_at) or 0
    digits = ""
    while ms:
        ms, remainder = divmod(ms, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[remainder] + digits
    return f"{digits.rjust(9, '0')}-{public_id.replace('-', '')[:26]}"


def _values(memory: SnapshotMemory, slug: str) -> tuple[str, dict[str, Any]]:
    level = _LEVEL_OF_KIND[memory.kind]
    meta = memory.metadata.get(META)
    meta = meta if isinstance(meta, dict) else {}
    own = memory.own_id(NAME)
    values: dict[str, Any] = {
        "id": own if _ID.match(own) else new_id(memory.created_at, memory.public_id),
        "title": memory.title or None,
        "content": memory.content,
        "importance": memory.importance,
        "keywords": json.dumps(memory.keywords, ensure_ascii=False),
        "status": memory.status,
        "source_session": memory.source_session or None,
        "hit_count": meta.get("hit_count", memory.hit_count) or 0,
        "created_at": _to_ms(memory.created_at),
        "updated_at": _to_ms(memory.updated_at),
        "last_accessed_at": meta.get("last_accessed_at", _to_ms(memory.last_accessed_at)),
    }
    if level in ("project", "fact", "lesson", "topic", "rules"):
        default = slug if memory.scope == Scope.PROJECT and level != "rules" else None
        project = meta.get("project", default)
        values["project"] = project if project is not None or level != "project" else slug
    if level == "project":
        values["subcategory"] = memory.subcategory or None
    if level == "lesson":
        values["corrected"] = 1 if memory.kind == Kind.FEEDBACK else 0
    if level == "topic":
        values["goal"] = memory.goal or None
    return level, values


def write(snapshot: Snapshot) -> dict[str, OutFile]:
    with tempfile.TemporaryDirectory(prefix="mh-meow-") as scratch:
        path = Path(scratch) / "memory.db"
        connection = sqlite3.connect(path)
        try:
            for statement in SCHEMA:
                connection.execute(statement)
            for memory in snapshot.memories:
                level, values = _values(memory, snapshot.project_slug)
                columns = ", ".join(values)
                marks = ", ".join("?" for _ in values)
                connection.execute(
                    f"INSERT OR IGNORE INTO {level} ({columns}) VALUES ({marks})",  # noqa: S608
                    list(values.values()),
                )
            connection.commit()
        finally:
            connection.close()
        data = path.read_bytes()
    newest = max((m.updated_at for m in snapshot.memories), default=None)
    return {DB_PATH: OutFile(data, newest)}
