"""Small helpers shared by every app's api.py (who is asking: accounts.actors.actor_of)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django.conf import settings
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class Pagination(LimitOffsetPagination):
    @property
    def default_limit(self) -> int:  # type: ignore[override]
        return settings.API_PAGE_SIZE

    @property
    def max_limit(self) -> int:  # type: ignore[override]
        return settings.API_MAX_PAGE_SIZE


class StrictInput(serializers.Serializer):
    """An input that refuses a field it does not take (400, per field) instead of dropping it:
    a client PATCHing `status` would otherwise believe it worked. `changed_elsewhere` says where
    such a field is changed instead."""

    changed_elsewhere: ClassVar[dict[str, str]] = {}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = [name for name in data if name not in self.fields]
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [self.changed_elsewhere.get(name, "This request cannot set it.")]
                        for name in unknown
                    }
                )
        return super().to_internal_value(data)


class PageParams(serializers.Serializer):
    """?limit=&offset= of a paginated list (Pagination reads them; declared for the schema)."""

    limit = serializers.IntegerField(required=False, min_value=1)
    offset = serializers.IntegerField(required=False, min_value=0)


def paginated_response(
    request: Request,
    view: APIView,
    queryset: QuerySet[Any],
    serializer: type[serializers.Serializer],
) -> Response:
    paginator = Pagination()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True).data)


@extend_schema_field({"type": "string", "description": "Comma-separated list of values."})
class CommaSeparatedChoiceField(serializers.Field):
    """`?kind=fact,lesson` → ("fact", "lesson"), each checked against `choices`."""

    def __init__(self, *, choices: list[str], **kwargs: Any) -> None:
        self.allowed = list(choices)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> tuple[str, ...]:
        values = tuple(v.strip() for v in str(data).split(",") if v.strip())
        bad = [v for v in values if v not in self.allowed]
        if bad:
            raise serializers.ValidationError(
                f"Unknown value(s) {', '.join(bad)}; allowed: {', '.join(self.allowed)}."
            )
        return values

    def to_representation(self, value: Any) -> str:
        return ",".join(value)
