"""REST API of the memory bank: /api/v1/projects/{slug}/memories/…"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.validators import ProhibitSurrogateCharactersValidator
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.core.api import (
    CommaSeparatedChoiceField,
    PageParams,
    Pagination,
    StrictInput,
    paginated_response,
)
from memoryhub.memories import kinds, selectors, services
from memoryhub.memories.kinds import Kind, Scope, Subcategory
from memoryhub.memories.models import Memory
from memoryhub.sessions import selectors as session_selectors
from projects.models import Role
from projects.selectors import ProjectAccess, project_access


class KindField(serializers.CharField):
    """Accepts a kind or one of the seeds' names for it (see memoryhub.memories.kinds)."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        kind = kinds.resolve_kind(value)
        if kind is None:
            raise serializers.ValidationError(
                f"Unknown kind {value!r}; use one of {', '.join(Kind.values)} or a seed alias."
            )
        return kind


_SURROGATE = re.compile("[\ud800-\udfff]")


class _SurrogateCheck(ProhibitSurrogateCharactersValidator):
    """DRF's check by one regex search, not a Python loop over every character (it was 4 % of
    a bulk import's CPU)."""

    def __call__(self, value: Any) -> None:
        found = _SURROGATE.search(str(value))
        if found:
            message = self.message.format(code_point=ord(found.group()))
            raise serializers.ValidationError(message, code=self.code)


class ContentField(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            _SurrogateCheck() if isinstance(v, ProhibitSurrogateCharactersValidator) else v
            for v in self.validators
        ]


class SourceSerializer(serializers.Serializer):
    session = serializers.CharField(max_length=200, required=False, allow_blank=True)
    record_start = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    record_end = serializers.IntegerField(min_value=0, required=False, allow_null=True)


class MemoryInputSerializer(serializers.Serializer):
    content = ContentField(trim_whitespace=False)
    kind = KindField()
    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    keywords = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    importance = serializers.IntegerField(min_value=1, max_value=32767, required=False)
    status = serializers.ChoiceField(
        choices=[Memory.Status.ACTIVE, Memory.Status.PROPOSED], required=False
    )
    subcategory = serializers.ChoiceField(
        choices=Subcategory.choices, required=False, allow_blank=True
    )
    goal = serializers.CharField(max_length=500, required=False, allow_blank=True)
    metadata = serializers.DictField(required=False)
    source = SourceSerializer(required=False)  # type: ignore[assignment]
    created_at = serializers.DateTimeField(required=False)
    updated_at = serializers.DateTimeField(required=False)


def _to_input(validated: dict[str, Any]) -> services.MemoryInput:
    data = dict(validated)
    source = data.pop("source", None) or {}
    return services.MemoryInput(
        **data,
        source_session=source.get("session", ""),
        source_record_start=source.get("record_start"),
        source_record_end=source.get("record_end"),
    )


class ProvenanceSerializer(serializers.Serializer):
    session = serializers.CharField(source="source_session")
    record_start = serializers.IntegerField(source="source_record_start", allow_null=True)
    record_end = serializers.IntegerField(source="source_record_end", allow_null=True)
    via = serializers.CharField(source="created_via")
    user = serializers.CharField(source="created_by_user.username", allow_null=True, default=None)
    token = serializers.CharField(source="created_by_token.prefix", allow_null=True, default=None)


class MemoryOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    project = serializers.CharField(source="project.slug")
    scope = serializers.CharField()
    owner = serializers.CharField(source="owner.username", allow_null=True, default=None)
    kind = serializers.CharField()
    subcategory = serializers.CharField()
    goal = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()
    keywords = serializers.ListField(child=serializers.CharField())
    importance = serializers.IntegerField()
    status = serializers.CharField()
    status_reason = serializers.CharField()
    superseded_by = serializers.UUIDField(
        source="superseded_by.public_id", allow_null=True, default=None
    )
    metadata = serializers.DictField()
    provenance = ProvenanceSerializer(source="*")
    content_hash = serializers.CharField()
    hit_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    last_accessed_at = serializers.DateTimeField(allow_null=True)


class MemoryFilterSerializer(PageParams):
    kind = CommaSeparatedChoiceField(choices=Kind.values, required=False)
    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    status = CommaSeparatedChoiceField(choices=[*Memory.Status.values, "all"], required=False)
    subcategory = serializers.ChoiceField(choices=Subcategory.choices, required=False)
    q = serializers.CharField(required=False, max_length=500)
    importance = serializers.IntegerField(required=False, min_value=1)
    importance_min = serializers.IntegerField(required=False, min_value=1)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    updated_after = serializers.DateTimeField(required=False)
    updated_before = serializers.DateTimeField(required=False)

    def to_filters(self) -> selectors.MemoryFilters:
        data = dict(self.validated_data)
        data.pop("limit", None)
        data.pop("offset", None)
        statuses = data.pop("status", ()) or selectors.DEFAULT_STATUSES
        if "all" in statuses:
            statuses = tuple(Memory.Status.values)
        return selectors.MemoryFilters(kinds=data.pop("kind", ()), statuses=tuple(statuses), **data)


def _access(request: Request, slug: str, *, write: bool = False) -> ProjectAccess:
    return project_access(
        slug=slug, actor=actor_of(request), min_role=Role.MEMBER if write else Role.VIEWER
    )


class MemoryCollectionApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    @extend_schema(
        operation_id="memories_list",
        parameters=[MemoryFilterSerializer],
        responses=MemoryOutputSerializer(many=True),
    )
    def get(self, request: Request, slug: str) -> Response:
        access = _access(request, slug)
        params = MemoryFilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        memories = selectors.memory_list(access=access, filters=params.to_filters())
        return paginated_response(request, self, memories, MemoryOutputSerializer)

    @extend_schema(
        operation_id="memories_create",
        request=MemoryInputSerializer,
        responses={201: MemoryOutputSerializer},
    )
    def post(self, request: Request, slug: str) -> Response:
        access = _access(request, slug, write=True)
        payload = MemoryInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = _to_input(payload.validated_data)
        session_selectors.check_citable(access=access, refs=[data.source_session])
        memory = services.memory_create(project=access.project, actor=access.actor, data=data)
        return Response(MemoryOutputSerializer(memory).data, status=status.HTTP_201_CREATED)


class MemoryBulkCreateApi(APIView):
    class MemoryBulkInput(serializers.Serializer):
        items = MemoryInputSerializer(many=True, allow_empty=False)

    @extend_schema(
        operation_id="memories_bulk_create",
        request=MemoryBulkInput,
        responses={
            201: inline_serializer(
                "MemoryBulkCreateResult",
                {"ids": serializers.ListField(child=serializers.UUIDField())},
            )
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        access = _access(request, slug, write=True)
        items = request.data.get("items") if isinstance(request.data, dict) else None
        if isinstance(items, list) and len(items) > services.BULK_MAX_ITEMS:
            raise serializers.ValidationError(
                {"items": [f"At most {services.BULK_MAX_ITEMS} items; got {len(items)}."]}
            )
        payload = self.MemoryBulkInput(data=request.data)
        payload.is_valid(raise_exception=True)
        inputs = [_to_input(item) for item in payload.validated_data["items"]]
        session_selectors.check_citable(access=access, refs=[i.source_session for i in inputs])
        memories = services.memory_bulk_create(
            project=access.project, actor=access.actor, items=inputs
        )
        return Response(
            {"ids": [str(m.public_id) for m in memories]}, status=status.HTTP_201_CREATED
        )


class MemoryDetailApi(APIView):
    class MemoryUpdateInput(StrictInput):
        changed_elsewhere = {
            "status": "Change it with POST …/approve/, …/reject/, …/archive/, …/stale/ or"
            " …/restore/.",
            "scope": "A user memory becomes a project memory with POST …/promote/.",
        }
        kind = KindField(required=False)
        subcategory = serializers.ChoiceField(
            choices=Subcategory.choices, required=False, allow_blank=True
        )
        goal = serializers.CharField(max_length=500, required=False, allow_blank=True)
        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        content = serializers.CharField(required=False, trim_whitespace=False)
        keywords = serializers.ListField(
            child=serializers.CharField(allow_blank=True), required=False
        )
        importance = serializers.IntegerField(min_value=1, max_value=32767, required=False)
        metadata = serializers.DictField(required=False)

    @extend_schema(operation_id="memories_get", responses=MemoryOutputSerializer)
    def get(self, request: Request, slug: str, memory_id: str) -> Response:
        memory = selectors.memory_get(access=_access(request, slug), public_id=memory_id)
        return Response(MemoryOutputSerializer(memory).data)

    @extend_schema(
        operation_id="memories_update", request=MemoryUpdateInput, responses=MemoryOutputSerializer
    )
    def patch(self, request: Request, slug: str, memory_id: str) -> Response:
        access = _access(request, slug, write=True)
        memory = selectors.memory_get(access=access, public_id=memory_id)
        payload = self.MemoryUpdateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        memory = services.memory_update(
            memory=memory, actor=access.actor, changes=dict(payload.validated_data)
        )
        return Response(
            MemoryOutputSerializer(
                selectors.memory_get(access=access, public_id=str(memory.public_id))
            ).data
        )


class StatusChangeSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")
    superseded_by = serializers.UUIDField(required=False, allow_null=True)


class _MemoryStatusApi(APIView):
    target_status: str = ""

    def post(self, request: Request, slug: str, memory_id: str) -> Response:
        access = _access(request, slug, write=True)
        memory = selectors.memory_get(access=access, public_id=memory_id)
        payload = StatusChangeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        successor_id = payload.validated_data.get("superseded_by")
        successor = (
            selectors.memory_get(access=access, public_id=str(successor_id))
            if successor_id
            else None
        )
        memory = services.memory_set_status(
            memory=memory,
            actor=access.actor,
            status=self.target_status,
            reason=payload.validated_data["reason"],
            superseded_by=successor,
        )
        return Response(
            MemoryOutputSerializer(
                selectors.memory_get(access=access, public_id=str(memory.public_id))
            ).data
        )


def _status_schema(operation_id: str) -> Any:
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            request=StatusChangeSerializer,
            responses=MemoryOutputSerializer,
        )
    )


@_status_schema("memories_archive")
class MemoryArchiveApi(_MemoryStatusApi):
    target_status = Memory.Status.ARCHIVED


@_status_schema("memories_mark_stale")
class MemoryMarkStaleApi(_MemoryStatusApi):
    target_status = Memory.Status.STALE


@_status_schema("memories_restore")
class MemoryRestoreApi(_MemoryStatusApi):
    target_status = Memory.Status.ACTIVE


def _review_access(request: Request, slug: str, memory_id: str) -> tuple[ProjectAccess, Memory]:
    access = project_access(slug=slug, actor=actor_of(request), min_role=Role.MEMBER)
    memory = selectors.memory_get(access=access, public_id=memory_id)
    selectors.memory_review_check(access=access, memory=memory)
    return access, memory


class MemoryApproveApi(APIView):
    @extend_schema(operation_id="memories_approve", request=None, responses=MemoryOutputSerializer)
    def post(self, request: Request, slug: str, memory_id: str) -> Response:
        """Review: a maintainer makes a proposed memory active (injectable); a member may
        review their own private proposals."""
        access, memory = _review_access(request, slug, memory_id)
        memory = services.memory_approve(memory=memory, actor=access.actor)
        return Response(
            MemoryOutputSerializer(
                selectors.memory_get(access=access, public_id=str(memory.public_id))
            ).data
        )


class MemoryEventOutputSerializer(serializers.Serializer):
    verb = serializers.CharField()
    actor = serializers.CharField(source="actor_label")
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()


class MemoryHistoryApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    @extend_schema(
        operation_id="memories_history", responses=MemoryEventOutputSerializer(many=True)
    )
    def get(self, request: Request, slug: str, memory_id: str) -> Response:
        memory = selectors.memory_get(access=_access(request, slug), public_id=memory_id)
        events = selectors.memory_events(memory=memory)
        return paginated_response(request, self, events, MemoryEventOutputSerializer)


class MemoryKindsApi(APIView):
    @extend_schema(
        operation_id="memory_kinds",
        responses=inline_serializer(
            "MemoryKind",
            {
                "kind": serializers.CharField(),
                "label": serializers.CharField(),
                "default_scope": serializers.CharField(),
                "aliases": serializers.ListField(child=serializers.CharField()),
                "subcategories": serializers.ListField(child=serializers.CharField()),
                "has_goal": serializers.BooleanField(),
            },
            many=True,
        ),
    )
    def get(self, request: Request) -> Response:
        return Response(kinds.taxonomy())


def _memory_response(access: ProjectAccess, memory: Memory) -> Response:
    return Response(
        MemoryOutputSerializer(
            selectors.memory_get(access=access, public_id=str(memory.public_id))
        ).data
    )


class MemoryRejectApi(APIView):
    class RejectInput(serializers.Serializer):
        reason = serializers.CharField(max_length=1000)

    @extend_schema(
        operation_id="memories_reject", request=RejectInput, responses=MemoryOutputSerializer
    )
    def post(self, request: Request, slug: str, memory_id: str) -> Response:
        """Review: a maintainer refuses a proposed memory (a member their own private one);
        it is archived with the reason."""
        access, memory = _review_access(request, slug, memory_id)
        payload = self.RejectInput(data=request.data)
        payload.is_valid(raise_exception=True)
        memory = services.memory_reject(
            memory=memory, actor=access.actor, reason=payload.validated_data["reason"]
        )
        return _memory_response(access, memory)


class MemoryPromoteApi(APIView):
    @extend_schema(operation_id="memories_promote", request=None, responses=MemoryOutputSerializer)
    def post(self, request: Request, slug: str, memory_id: str) -> Response:
        """The owner of a user-scope memory shares it with the project."""
        access = _access(request, slug, write=True)
        memory = selectors.memory_get(access=access, public_id=memory_id)
        memory = services.memory_promote(memory=memory, actor=access.actor)
        return _memory_response(access, memory)


class MemoryMergeApi(APIView):
    class MergeInput(serializers.Serializer):
        other = serializers.UUIDField(help_text="The memory merged into this one (archived).")
        content = serializers.CharField(
            required=False, trim_whitespace=False, help_text="Default: both texts, this first."
        )

    @extend_schema(
        operation_id="memories_merge", request=MergeInput, responses=MemoryOutputSerializer
    )
    def post(self, request: Request, slug: str, memory_id: str) -> Response:
        """Merge another memory into this one; the other is archived, both histories kept."""
        access = _access(request, slug, write=True)
        keep = selectors.memory_get(access=access, public_id=memory_id)
        payload = self.MergeInput(data=request.data)
        payload.is_valid(raise_exception=True)
        other = selectors.memory_get(access=access, public_id=str(payload.validated_data["other"]))
        keep = services.memory_merge(
            keep=keep,
            other=other,
            actor=access.actor,
            content=payload.validated_data.get("content"),
        )
        return _memory_response(access, keep)


class MemoryDeleteApi(APIView):
    class DeleteInput(serializers.Serializer):
        confirm = serializers.CharField(help_text="The first 8 characters of the memory's id.")

    @extend_schema(operation_id="memories_delete", request=DeleteInput, responses={204: None})
    def post(self, request: Request, slug: str, memory_id: str) -> Response:
        """Owners only: delete a memory for good (soft states are archive and stale)."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.OWNER)
        memory = selectors.memory_get(access=access, public_id=memory_id)
        payload = self.DeleteInput(data=request.data)
        payload.is_valid(raise_exception=True)
        services.memory_delete_unsafe(
            memory=memory, actor=access.actor, confirm=payload.validated_data["confirm"]
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
