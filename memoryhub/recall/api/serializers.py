"""Serializers more than one of recall's API modules answer with."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from memoryhub.memories.models import Memory


class BulkWriteResultSerializer(serializers.Serializer):
    """services.BulkWriteResult: what a tree upload or a sync did, path by path."""

    created = serializers.ListField(child=serializers.CharField())
    updated = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())
    deleted = serializers.ListField(child=serializers.CharField())


class MemoryRowSerializer(serializers.Serializer):
    """A memory inside a ranked or grouped result (the row object holds it as `memory`)."""

    id = serializers.UUIDField(source="memory.public_id")
    kind = serializers.CharField(source="memory.kind")
    scope = serializers.CharField(source="memory.scope")
    subcategory = serializers.CharField(source="memory.subcategory")
    title = serializers.CharField(source="memory.title")
    content = serializers.CharField(source="memory.content")
    keywords = serializers.ListField(source="memory.keywords", child=serializers.CharField())
    importance = serializers.IntegerField(source="memory.importance")
    status = serializers.CharField(source="memory.status")
    created_at = serializers.DateTimeField(source="memory.created_at")
    updated_at = serializers.DateTimeField(source="memory.updated_at")


def datetime_out(value: datetime | None) -> str | None:
    """DRF's DateTimeField output (ISO 8601 in the current time zone, "Z" for UTC) without a
    field per value."""
    if value is None:
        return None
    text = value.astimezone(timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def memory_row(memory: Memory) -> dict[str, Any]:
    """MemoryRowSerializer's output as a plain dict: the hot read paths (search, 20–100 rows
    per request) build it directly; tests hold the two equal."""
    return {
        "id": str(memory.public_id),
        "kind": memory.kind,
        "scope": memory.scope,
        "subcategory": memory.subcategory,
        "title": memory.title,
        "content": memory.content,
        "keywords": [str(k) for k in memory.keywords],
        "importance": int(memory.importance),
        "status": memory.status,
        "created_at": datetime_out(memory.created_at),
        "updated_at": datetime_out(memory.updated_at),
    }
