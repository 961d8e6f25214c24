"""Fixture trees packed the way users pack them, the documented meow-memory schema, and a
comparable view of a bank."""

from __future__ import annotations

import io
import json
import sqlite3
import tarfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Q
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.memories.models import Memory
from projects.models import Project

FIXTURES = Path(__file__).parent / "fixtures"
# Files in the fixture trees are dated by this (git does not keep mtimes).
FIXTURE_MTIME = datetime(2026, 3, 14, 10, 30, 0, tzinfo=UTC)


def tree_files(name: str) -> dict[str, bytes]:
    root = FIXTURES / name
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def zip_bytes(
    files: dict[str, bytes], *, mtime: datetime = FIXTURE_MTIME, prefix: str = ""
) -> bytes:
    """A zip as `zip -r` makes it (DOS times, no extended timestamps)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(prefix + path, date_time=mtime.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return out.getvalue()


def tar_bytes(files: dict[str, bytes], *, mtime: datetime = FIXTURE_MTIME) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), int(mtime.timestamp())
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def import_url(slug: str, fmt: str) -> str:
    return f"/api/v1/projects/{slug}/interchange/{fmt}/import/"


def export_url(slug: str, fmt: str, archive: str = "zip") -> str:
    return f"/api/v1/projects/{slug}/interchange/{fmt}/export/?archive={archive}"


def upload(
    client: APIClient, slug: str, fmt: str, data: bytes, filename: str = "upload.zip"
) -> Any:
    return client.post(
        import_url(slug, fmt),
        {"file": SimpleUploadedFile(filename, data)},
        format="multipart",
    )


def download(client: APIClient, slug: str, fmt: str, archive: str = "zip") -> bytes:
    response = client.get(export_url(slug, fmt, archive))
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)  # type: ignore[attr-defined]


def unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def bank(project: Project, user: User | None = None) -> list[tuple[Any, ...]]:
    """The bank as comparable rows: what a round trip must keep. User-scope rows are `user`'s
    (None: all)."""
    memories = Memory.objects.filter(project=project)
    if user is not None:
        memories = memories.filter(Q(scope="project") | Q(owner=user))
    return sorted(
        (
            m.kind,
            m.scope,
            m.content,
            tuple(m.keywords),
            m.importance,
            m.status,
            m.subcategory,
            m.goal,
            m.created_at,
            m.updated_at,
        )
        for m in memories
    )


# meow-memory's level tables, written out here from the schema documented in
# ../shared/reference/seed-algorithms.md §5.1 (independently of the exporter's copy).
MEOW_COMMON = (
    "id TEXT PRIMARY KEY, title TEXT, content TEXT NOT NULL, "
    "importance INTEGER NOT NULL DEFAULT 1, keywords TEXT NOT NULL DEFAULT '[]', "
    "status TEXT NOT NULL DEFAULT 'active', source_session TEXT, "
    "hit_count INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, "
    "updated_at INTEGER NOT NULL, last_accessed_at INTEGER"
)
MEOW_TABLES = {
    "soul": "",
    "user": "",
    "project": ", project TEXT NOT NULL, subcategory TEXT",
    "fact": ", project TEXT",
    "lesson": ", corrected INTEGER NOT NULL DEFAULT 0, project TEXT",
    "topic": ", goal TEXT, project TEXT",
    "rules": ", project TEXT",
}
T0 = 1773482400000  # 2026-03-14 10:00:00 UTC in ms
DAY = 86_400_000

MEOW_ROWS: list[tuple[str, dict[str, Any]]] = [
    (
        "soul",
        {
            "id": "mmqf1a2b3-0a1b2c3d4e5f60718293a4b5c6",
            "content": "我是 DSH 的编码助手，说话直接、先给结论。",
            "keywords": ["身份", "语气", "结论"],
            "importance": 3,
        },
    ),
    (
        "user",
        {
            "id": "mmqf1a2b4-1a1b2c3d4e5f60718293a4b5c6",
            "content": "用户是后端工程师，偏好简短回答，commit message 用英文。",
            "keywords": ["用户", "偏好", "简短", "commit"],
            "importance": 2,
        },
    ),
    (
        "project",
        {
            "id": "mmqf1a2b5-2a1b2c3d4e5f60718293a4b5c6",
            "content": "calendar-kit 是一个 Python 日期工具库，发布到 PyPI。",
            "keywords": ["calendar-kit", "日期", "PyPI"],
            "importance": 2,
            "project": "calendar-kit",
            "subcategory": "overview",
        },
    ),
    (
        "project",
        {
            "id": "mmqf1a2b6-3a1b2c3d4e5f60718293a4b5c6",
            "content": "实现 ISO 周格式解析",
            "keywords": ["ISO", "周格式", "parse_day"],
            "project": "calendar-kit",
            "subcategory": "todo",
            "status": "stale",
        },
    ),
    (
        "project",
        {
            "id": "mmqf1a2b7-4a1b2c3d4e5f60718293a4b5c6",
            "content": "用户原话：“测试一律 TZ=UTC 跑”",
            "keywords": ["测试", "TZ", "UTC"],
            "importance": 3,
            "project": "calendar-kit",
            "subcategory": "quotes",
        },
    ),
    (
        "fact",
        {
            "id": "mmqf1a2b8-5a1b2c3d4e5f60718293a4b5c6",
            "content": "2020-W53 存在，2021-W53 不存在。",
            "keywords": ["ISO", "W53", "周"],
            "project": "calendar-kit",
            "hit_count": 4,
            "last_accessed_at": T0 + 3 * DAY,
        },
    ),
    (
        "fact",
        {
            "id": "mmqf1a2b9-6a1b2c3d4e5f60718293a4b5c6",
            "content": "旧的 dates_v1 模块已删除。",
            "keywords": ["dates_v1", "删除"],
            "project": None,
            "status": "archived",
        },
    ),
    (
        "lesson",
        {
            "id": "mmqf1a2ba-7a1b2c3d4e5f60718293a4b5c6",
            "content": "freezegun 与 pytest-xdist 一起用会串时间，改用注入时钟。",
            "keywords": ["freezegun", "xdist", "时钟"],
            "importance": 2,
            "project": "calendar-kit",
        },
    ),
    (
        "lesson",
        {
            "id": "mmqf1a2bb-8a1b2c3d4e5f60718293a4b5c6",
            "content": "项目实际是 Python 而非 Go。",
            "keywords": ["Python", "Go", "纠正"],
            "importance": 3,
            "project": "全局",
            "corrected": 1,
        },
    ),
    (
        "topic",
        {
            "id": "mmqf1a2bc-9a1b2c3d4e5f60718293a4b5c6",
            "title": "时区测试",
            "content": "讨论是否在 CI 里固定 TZ=UTC。",
            "keywords": ["时区", "CI", "TZ"],
            "project": "calendar-kit",
            "goal": "决定 CI 的时区策略",
        },
    ),
    (
        "rules",
        {
            "id": "mmqf1a2bd-aa1b2c3d4e5f60718293a4b5c6",
            "content": "先写失败的测试，再改代码。",
            "keywords": ["测试", "TDD"],
            "importance": 2,
            "project": None,
        },
    ),
    (
        "rules",
        {
            "id": "mmqf1a2be-ba1b2c3d4e5f60718293a4b5c6",
            "content": "calendar-kit 的公开函数必须有类型注解。",
            "keywords": ["类型注解", "公开函数"],
            "project": "calendar-kit",
        },
    ),
]


def meow_db(path: Path, rows: list[tuple[str, dict[str, Any]]] = MEOW_ROWS) -> Path:
    """A memory.db with the seven level tables and `rows` (timestamps one hour apart)."""
    connection = sqlite3.connect(path)
    for table, extra in MEOW_TABLES.items():
        connection.execute(f"CREATE TABLE {table} ({MEOW_COMMON}{extra})")
    for position, (table, row) in enumerate(rows):
        values = {
            "title": None,
            "importance": 1,
            "status": "active",
            "source_session": "sess-7f3a",
            "hit_count": 0,
            "created_at": T0 + position * 3_600_000 + 123,
            "updated_at": T0 + position * 3_600_000 + DAY + 456,
            "last_accessed_at": None,
            **row,
        }
        values["keywords"] = json.dumps(values["keywords"], ensure_ascii=False)
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        connection.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(values.values())
        )
    connection.commit()
    connection.close()
    return path


def meow_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    try:
        return {
            table: [dict(r) for r in connection.execute(f"SELECT * FROM {table} ORDER BY id")]
            for table in MEOW_TABLES
        }
    finally:
        connection.close()
