"""Reading a whole project as backup lines (memoryhub/backups/format.py), streamed."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import User
from memoryhub.backups import format as fmt
from projects.models import Project

CHUNK = 2000


class _Usernames(dict[int, str]):
    """id → username, fetched on first use (rows name few distinct people)."""

    def __missing__(self, user_id: int) -> str:
        self[user_id] = User.objects.values_list("username", flat=True).get(pk=user_id)
        return self[user_id]


def _row(obj: models.Model, usernames: _Usernames, exported: set[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for field in obj._meta.concrete_fields:
        if field.primary_key:
            continue
        if field.is_relation:
            assert field.related_model is not None
            target = field.related_model._meta.label
            value = getattr(obj, field.attname)
            if target == "projects.Project":
                continue  # the project is implicit
            if target == settings.AUTH_USER_MODEL:
                fields[field.name] = None if value is None else usernames[value]
            elif target in exported:
                fields[field.name] = value  # the pk of that row in this backup
            else:
                fields[field.name] = None  # agent tokens and pipeline jobs are not moved
            continue
        fields[field.name] = fmt.encode(field.value_from_object(obj))
    return fields


def backup_lines(*, project: Project) -> Iterator[bytes]:
    """Every line of the project's backup, uncompressed, in restore order."""
    header = {
        "format": fmt.FORMAT,
        "version": fmt.VERSION,
        "created_at": timezone.now().isoformat(),
        "project": {"slug": project.slug}
        | {name: fmt.encode(getattr(project, name)) for name in fmt.PROJECT_FIELDS},
    }
    yield json.dumps(header).encode() + b"\n"
    usernames = _Usernames()
    exported = fmt.exported_labels()
    counts: dict[str, int] = {}
    for label, path in fmt.MODELS:
        model = fmt.model_of(label)
        rows = model._default_manager.filter(**{path: project}).order_by("pk")
        counts[label] = 0
        for obj in rows.iterator(chunk_size=CHUNK):
            line = {"model": label, "pk": obj.pk, "fields": _row(obj, usernames, exported)}
            yield json.dumps(line, ensure_ascii=False).encode() + b"\n"
            counts[label] += 1
    yield json.dumps({"end": True, "rows": counts}).encode() + b"\n"


def backup_gzip_chunks(*, project: Project) -> Iterator[bytes]:
    """The backup as a gzip stream, in chunks of about 64 KiB (for HTTP responses)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: gzip container
    pending: list[bytes] = []
    size = 0
    for line in backup_lines(project=project):
        pending.append(compressor.compress(line))
        size += len(pending[-1])
        if size >= 65536:
            yield b"".join(pending)
            pending, size = [], 0
    pending.append(compressor.flush())
    yield b"".join(pending)
