"""Serializers more than one of recall's API modules answer with."""

from __future__ import annotations

from rest_framework import serializers


class BulkWriteResultSerializer(serializers.Serializer):
    """services.BulkWriteResult: what a tree upload or a sync did, path by path."""

    created = serializers.ListField(child=serializers.CharField())
    updated = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())
    deleted = serializers.ListField(child=serializers.CharField())
