"""Serializers more than one of recall's API modules answer with."""

from __future__ import annotations

from rest_framework import serializers


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
