"""The Hindsight routes: thin views over banks (bank → project), selectors and services."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count
from django.http import Http404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.core import health
from memoryhub.integrations.hindsight import answers, banks, conf, selectors, services
from memoryhub.integrations.hindsight import tags as tagging
from memoryhub.integrations.hindsight.http import (
    HindsightView,
    PublicView,
    Text,
    query_error,
    valid,
    valid_query,
)
from memoryhub.integrations.hindsight.openapi import obj, page_of
from memoryhub.memories import selectors as memory_selectors
from memoryhub.sessions import services as session_services
from memoryhub.sessions.records import parse_timestamp
from projects.models import Role
from projects.selectors import ProjectAccess, project_list

API_VERSION = "1.1.0"  # the Hindsight API these routes follow (hindsight-client 1.1.0)
TYPES = list(selectors.TYPE_KINDS)
DISPOSITION = {"skepticism": 3, "literalism": 3, "empathy": 3}

# --- what the routes answer, for /v1/openapi.json (memoryhub/integrations/hindsight/openapi.py)
OBJECT = OpenApiTypes.OBJECT
ITEM = serializers.DictField  # a class: each use needs a field of its own
PAGE = [
    OpenApiParameter("limit", int, description="At most 1000."),
    OpenApiParameter("offset", int),
]
TAG_FILTER = [
    OpenApiParameter("tags", str, many=True, explode=True),
    OpenApiParameter("tags_match", str, enum=["any", "all", "any_strict", "all_strict"]),
]
PROFILE = obj(
    "HindsightBankProfile",
    {
        "bank_id": serializers.CharField(),
        "name": serializers.CharField(),
        "disposition": serializers.DictField(child=serializers.IntegerField()),
        "mission": serializers.CharField(),
        "background": serializers.CharField(),
    },
)
RESULTS = obj("HindsightRecallResults", {"results": serializers.ListField(child=ITEM())})


class Tags(serializers.ListField):
    child = Text(max_length=conf.TAG_MAX_CHARS, allow_blank=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=conf.TAGS_MAX, required=False, allow_null=True, **kwargs)


def tag_query(request: Request) -> list[str]:
    return [*request.query_params.getlist("tags"), *request.query_params.getlist("tags[]")]


def page(request: Request, default: int = 100) -> tuple[int, int]:
    """limit and offset, refused as FastAPI refuses Hindsight's `int = Query(ge=0)`."""

    def number(name: str, fallback: int, high: int) -> int:
        raw = request.query_params.get(name, "")
        if not raw:
            return fallback
        if not re.fullmatch(r"[+-]?[0-9]+", raw.strip()):
            raise query_error(
                name,
                "Input should be a valid integer, unable to parse string as an integer",
                "int_parsing",
            )
        value = int(raw)
        if value < 0:
            raise query_error(
                name, "Input should be greater than or equal to 0", "greater_than_equal"
            )
        return min(value, high)

    return number("limit", default, 1000), number("offset", 0, 10**9)


def profile(bank_id: str, access: ProjectAccess) -> dict[str, Any]:
    config = conf.hindsight_config(access.project.settings)
    mission = config.reflect_mission or access.project.description
    return {
        "bank_id": bank_id,
        "name": access.project.name,
        "disposition": DISPOSITION,
        "mission": mission,
        "background": mission,
    }


# --- banks ------------------------------------------------------------------------------------


class BankApi(HindsightView):
    class Input(serializers.Serializer):
        reflect_mission = Text(
            max_length=conf.MISSION_MAX_CHARS, required=False, allow_blank=True, allow_null=True
        )
        retain_mission = Text(
            max_length=conf.MISSION_MAX_CHARS, required=False, allow_blank=True, allow_null=True
        )
        mission = Text(  # deprecated alias of reflect_mission
            max_length=conf.MISSION_MAX_CHARS, required=False, allow_blank=True, allow_null=True
        )

    @extend_schema(operation_id="bank_profile_get", responses=PROFILE)
    def get(self, request: Request, bank_id: str) -> Response:
        return Response(profile(bank_id, banks.require(actor=self.actor, bank_id=bank_id)))

    @extend_schema(operation_id="bank_put", request=Input, responses=PROFILE)
    def put(self, request: Request, bank_id: str) -> Response:
        data = valid(self.Input, request.data or {})
        access = banks.resolve(actor=self.actor, bank_id=bank_id)
        if access is None:
            access = services.bank_create(actor=self.actor, bank_id=bank_id)
        return self._set_missions(bank_id, access, data)

    @extend_schema(operation_id="bank_patch", request=Input, responses=PROFILE)
    def patch(self, request: Request, bank_id: str) -> Response:
        data = valid(self.Input, request.data or {})
        return self._set_missions(bank_id, banks.require(actor=self.actor, bank_id=bank_id), data)

    def _set_missions(self, bank_id: str, access: ProjectAccess, data: dict[str, Any]) -> Response:
        missions = {
            "reflect_mission": data.get("reflect_mission") or data.get("mission"),
            "retain_mission": data.get("retain_mission"),
        }
        services.bank_set_missions(
            access=access, missions={k: v for k, v in missions.items() if v is not None}
        )
        access.project.refresh_from_db()
        return Response(profile(bank_id, access))


class BankListApi(HindsightView):
    @extend_schema(
        operation_id="banks_list",
        parameters=[*PAGE, OpenApiParameter("q", str)],
        responses=page_of("HindsightBankList", ITEM, key="banks"),
    )
    def get(self, request: Request) -> Response:
        limit, offset = page(request)
        projects = project_list(actor=self.actor)
        q = request.query_params.get("q", "")
        if q:
            projects = projects.filter(slug__icontains=q)
        # Only what the caller may see: a teammate's private memories are not counted.
        visible = memory_selectors.memory_visible_q(user=self.actor.user, prefix="memories__")
        rows = projects.annotate(facts=Count("memories", filter=visible))[offset : offset + limit]
        items = [
            {
                "bank_id": p.slug,
                "name": p.name,
                "disposition": DISPOSITION,
                "mission": conf.hindsight_config(p.settings).reflect_mission or p.description,
                "created_at": p.created_at.isoformat(),
                "updated_at": p.updated_at.isoformat(),
                "fact_count": p.facts,
            }
            for p in rows
        ]
        return Response(
            {"banks": items, "total": projects.count(), "limit": limit, "offset": offset}
        )


class BankStatisticsApi(HindsightView):
    @extend_schema(
        operation_id="bank_stats",
        responses=obj(
            "HindsightBankStats",
            {
                "bank_id": serializers.CharField(),
                "total_nodes": serializers.IntegerField(),
                "total_documents": serializers.IntegerField(),
                "pending_operations": serializers.IntegerField(),
                "failed_operations": serializers.IntegerField(),
                "last_consolidated_at": serializers.CharField(allow_null=True),
            },
        ),
    )
    def get(self, request: Request, bank_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id)
        return Response({"bank_id": bank_id} | selectors.bank_statistics(access=access))


# --- retain, recall, reflect ------------------------------------------------------------------


class MemoryItemInput(serializers.Serializer):
    content = Text(trim_whitespace=False, allow_blank=True)
    timestamp = Text(required=False, allow_null=True, allow_blank=True)
    context = Text(  # type: ignore[assignment]
        required=False, allow_null=True, allow_blank=True, max_length=500
    )
    metadata = serializers.DictField(child=Text(allow_blank=True), required=False, allow_null=True)
    document_id = Text(required=False, allow_null=True, allow_blank=True, max_length=200)
    tags = Tags()
    update_mode = serializers.ChoiceField(
        choices=["replace", "append"], required=False, allow_null=True
    )

    def validate_timestamp(self, value: str | None) -> Any:
        if not value or value == "unset":
            return None
        try:
            return parse_timestamp(value)
        except ValueError:
            raise serializers.ValidationError("must be an ISO 8601 date-time or 'unset'") from None


class RetainApi(HindsightView):
    class Input(serializers.Serializer):
        items = MemoryItemInput(many=True, allow_empty=True)
        document_tags = Tags()
        # `async` is a Python keyword: declared below. Extraction always runs on the worker.

    Input._declared_fields["async"] = serializers.BooleanField(required=False, default=True)

    @extend_schema(
        operation_id="retain",
        request=Input,
        responses=obj(
            "HindsightRetained",
            {
                "success": serializers.BooleanField(),
                "bank_id": serializers.CharField(),
                "items_count": serializers.IntegerField(),
                "async": serializers.BooleanField(),
                "operation_id": serializers.CharField(allow_null=True),
                "operation_ids": serializers.ListField(
                    child=serializers.CharField(), required=False
                ),
            },
        ),
    )
    def post(self, request: Request, bank_id: str) -> Response:
        data = valid(self.Input, request.data)
        items = [
            services.RetainItem(
                content=i["content"],
                timestamp=i.get("timestamp"),
                context=i.get("context") or "",
                metadata=i.get("metadata") or {},
                document_id=i.get("document_id") or "",
                tags=tuple(i.get("tags") or ()),
                update_mode=i.get("update_mode") or "replace",
            )
            for i in data["items"]
        ]
        item_tags = [t for i in items for t in i.tags] + list(data.get("document_tags") or [])
        access = banks.require(
            actor=self.actor, bank_id=bank_id, tags=item_tags, min_role=Role.MEMBER
        )
        operations = (
            services.retain(
                access=access, items=items, document_tags=tuple(data.get("document_tags") or ())
            )
            if items
            else []
        )
        body: dict[str, Any] = {
            "success": True,
            "bank_id": bank_id,
            "items_count": len(items),
            "async": True,
            "operation_id": operations[0] if operations else None,
        }
        if len(operations) > 1:
            body["operation_ids"] = operations
        return Response(body)


class RecallInput(serializers.Serializer):
    query = Text(max_length=8000)
    types = serializers.ListField(
        child=serializers.ChoiceField(choices=TYPES), required=False, allow_null=True
    )
    budget = serializers.ChoiceField(choices=list(selectors.BUDGET_DEPTH), default="mid")
    max_tokens = serializers.IntegerField(min_value=1, max_value=1_000_000, default=4096)
    tags = Tags()
    tags_match = serializers.ChoiceField(choices=tagging.MODES, default="any")


class RecallApi(HindsightView):
    post_reads = True

    @extend_schema(operation_id="recall", request=RecallInput, responses=RESULTS)
    def post(self, request: Request, bank_id: str) -> Response:
        data = valid(RecallInput, request.data)
        access = banks.resolve(actor=self.actor, bank_id=bank_id, tags=data.get("tags") or ())
        if access is None:
            return Response({"results": []})  # an unknown bank has no memories
        items = selectors.recall(
            access=access,
            query=data["query"],
            types=data.get("types"),
            tag_list=data.get("tags") or [],
            tags_match=data["tags_match"],
            max_tokens=data["max_tokens"],
            budget=data["budget"],
        )
        return Response({"results": [item.to_result() for item in items]})


class ReflectApi(HindsightView):
    post_reads = True

    class Input(RecallInput):
        budget = serializers.ChoiceField(choices=list(selectors.BUDGET_DEPTH), default="low")
        context = Text(required=False, allow_null=True, allow_blank=True)  # type: ignore[assignment]
        fact_types = serializers.ListField(
            child=serializers.ChoiceField(choices=TYPES), required=False, allow_null=True
        )
        include_facts = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        operation_id="reflect",
        request=Input,
        responses=obj(
            "HindsightReflection",
            {
                "text": serializers.CharField(),
                "usage": serializers.DictField(child=serializers.IntegerField()),
                "based_on": serializers.DictField(required=False),
            },
        ),
    )
    def post(self, request: Request, bank_id: str) -> Response:
        data = valid(self.Input, request.data)
        access = banks.require(actor=self.actor, bank_id=bank_id, tags=data.get("tags") or ())
        query = data["query"] + (f"\n\n{data['context']}" if data.get("context") else "")
        items = selectors.recall(
            access=access,
            query=query,
            types=data.get("fact_types") or data.get("types"),
            tag_list=data.get("tags") or [],
            tags_match=data["tags_match"],
            max_tokens=min(data["max_tokens"], 8192),
            budget=data["budget"],
        )
        mission = conf.hindsight_config(access.project.settings).reflect_mission
        text, tokens_in, tokens_out = answers.reflect_text(
            project=access.project,
            query=data["query"],
            items=items,
            mission=mission,
            max_tokens=data["max_tokens"],
        )
        body: dict[str, Any] = {
            "text": text,
            "usage": {
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }
        if data["include_facts"]:
            body["based_on"] = {"memories": [item.to_result() for item in items]}
        return Response(body)


# --- memories (§4.3) --------------------------------------------------------------------------


class MemoryListApi(HindsightView):
    class Filters(serializers.Serializer):
        type = serializers.ChoiceField(choices=TYPES, required=False)
        q = Text(required=False, allow_blank=True, max_length=2000, default="")
        state = serializers.ChoiceField(
            choices=["valid", "invalidated", "all"], required=False, default="valid"
        )
        document_id = Text(required=False, max_length=200)
        tags_match = serializers.ChoiceField(choices=tagging.MODES, required=False, default="any")

    @extend_schema(
        operation_id="memories_list",
        parameters=[Filters, *PAGE, *TAG_FILTER[:1]],
        responses=page_of("HindsightMemoryList", ITEM),
    )
    def get(self, request: Request, bank_id: str) -> Response:
        data = valid_query(self.Filters, request)
        limit, offset = page(request)
        wanted = tag_query(request)
        access = banks.resolve(actor=self.actor, bank_id=bank_id, tags=wanted)
        if access is None:
            raise banks.BankNotFound()
        rows = selectors.memory_rows(
            access=access,
            fact_type=data.get("type"),
            q=data["q"],
            state=data["state"],
            document_id=data.get("document_id"),
            tag_list=wanted,
            tags_match=data["tags_match"],
        )
        page_rows = list(rows[offset : offset + limit])
        by_session = tagging.session_tags(
            project=access.project, external_ids={m.source_session for m in page_rows}
        )
        items = [selectors.memory_row(m, by_session.get(m.source_session, ())) for m in page_rows]
        return Response({"items": items, "total": rows.count(), "limit": limit, "offset": offset})


class MemoryDetailApi(HindsightView):
    class Input(serializers.Serializer):
        state = serializers.ChoiceField(choices=["valid", "invalidated"], required=False)
        reason = Text(required=False, allow_blank=True, max_length=1000)
        text = Text(required=False, max_length=settings.MEMORY_MAX_CONTENT_CHARS)

        # Fields of Hindsight's UpdateMemoryRequest with no counterpart here: refused by name
        # rather than answered 200 with nothing changed. null is "leave it", as clients send it.
        UNSUPPORTED = ("context", "occurred_start", "occurred_end", "fact_type", "entities")

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            given = [f for f in self.UNSUPPORTED if self.initial_data.get(f) is not None]
            if given:
                raise serializers.ValidationError(
                    {
                        f: "MemoryHub does not change this field of a memory; "
                        "PATCH accepts text, state and reason"
                        for f in given
                    }
                )
            return attrs

    def _memory(self, bank_id: str, memory_id: str, role: Role = Role.VIEWER) -> tuple[Any, Any]:
        access = banks.require(actor=self.actor, bank_id=bank_id, min_role=role)
        try:
            return access, memory_selectors.memory_get(access=access, public_id=memory_id)
        except (Http404, ValueError, DjangoValidationError):
            raise Http404(f"Memory unit '{memory_id}' not found") from None

    @extend_schema(operation_id="memory_get", responses=OBJECT)
    def get(self, request: Request, bank_id: str, memory_id: str) -> Response:
        access, memory = self._memory(bank_id, memory_id)
        by_session = tagging.session_tags(
            project=access.project, external_ids=[memory.source_session]
        )
        return Response(selectors.memory_row(memory, by_session.get(memory.source_session, ())))

    @extend_schema(operation_id="memory_patch", request=Input, responses=OBJECT)
    def patch(self, request: Request, bank_id: str, memory_id: str) -> Response:
        data = valid(self.Input, request.data)
        access, memory = self._memory(bank_id, memory_id, Role.MEMBER)
        if "text" in data:
            memory = services.memory_services.memory_update(
                memory=memory, actor=access.actor, changes={"content": data["text"]}
            )
        if "state" in data:
            memory = services.memory_set_state(
                access=access, memory=memory, state=data["state"], reason=data.get("reason", "")
            )
        by_session = tagging.session_tags(
            project=access.project, external_ids=[memory.source_session]
        )
        return Response(selectors.memory_row(memory, by_session.get(memory.source_session, ())))


# --- documents --------------------------------------------------------------------------------


def document_row(bank_id: str, session: Any, count: int) -> dict[str, Any]:
    return {
        "id": session.external_id,
        "bank_id": bank_id,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.last_active_at.isoformat(),
        "text_length": session.token_estimate * 4,
        "memory_unit_count": count,
        "tags": list(session.metadata.get(tagging.META_KEY) or []),
        "document_metadata": session.metadata.get("hindsight", {}).get("metadata"),
    }


class DocumentListApi(HindsightView):
    @extend_schema(
        operation_id="documents_list",
        parameters=[*PAGE, OpenApiParameter("q", str), *TAG_FILTER],
        responses=page_of("HindsightDocumentList", ITEM),
    )
    def get(self, request: Request, bank_id: str) -> Response:
        limit, offset = page(request)
        access = banks.require(actor=self.actor, bank_id=bank_id)
        rows = selectors.documents(access=access, q=request.query_params.get("q", ""))
        wanted = tag_query(request)
        mode = request.query_params.get("tags_match", "any_strict")
        if mode not in tagging.MODES:
            raise query_error("tags_match", f"one of {', '.join(tagging.MODES)}", "value_error")
        if wanted:
            keep = tagging.session_filter(project=access.project, tags=wanted, mode=mode)
            if keep.only is not None:
                rows = rows.filter(external_id__in=keep.only)
            rows = rows.exclude(external_id__in=keep.exclude)
        sessions = list(rows[offset : offset + limit])
        counts = selectors.memory_counts(
            access=access, document_ids=[s.external_id for s in sessions]
        )
        items = [document_row(bank_id, s, counts.get(s.external_id, 0)) for s in sessions]
        return Response({"items": items, "total": rows.count(), "limit": limit, "offset": offset})


class DocumentDetailApi(HindsightView):
    @extend_schema(operation_id="document_get", responses=OBJECT)
    def get(self, request: Request, bank_id: str, document_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id)
        session = selectors.document_get(access=access, document_id=document_id)
        text = selectors.document_text(session)
        count = selectors.memory_counts(access=access, document_ids=[session.external_id])
        row = document_row(bank_id, session, count.get(session.external_id, 0))
        return Response(row | {"original_text": text, "content_hash": selectors.text_hash(text)})

    @extend_schema(
        operation_id="document_delete",
        responses={  # Hindsight answers 200 with a body, not 204
            200: obj(
                "HindsightDocumentDeleted",
                {
                    "success": serializers.BooleanField(),
                    "message": serializers.CharField(),
                    "document_id": serializers.CharField(),
                    "memory_units_deleted": serializers.IntegerField(),
                },
            )
        },
    )
    def delete(self, request: Request, bank_id: str, document_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id, min_role=Role.MAINTAINER)
        session = selectors.document_get(access=access, document_id=document_id)
        session_services.session_delete(session=session, actor=access.actor)
        return Response(
            {
                "success": True,
                "message": "Document deleted; memories learned from it stay in the bank.",
                "document_id": document_id,
                "memory_units_deleted": 0,
            }
        )


# --- mental models ----------------------------------------------------------------------------


class MentalModelListApi(HindsightView):
    class Input(serializers.Serializer):
        id = Text(required=False, allow_null=True, max_length=128)
        name = Text(max_length=conf.NAME_MAX_CHARS)
        source_query = Text(max_length=conf.QUERY_MAX_CHARS)
        tags = Tags()
        max_tokens = serializers.IntegerField(
            min_value=1, max_value=conf.MAX_TOKENS_LIMIT, required=False, allow_null=True
        )
        trigger = serializers.DictField(required=False, allow_null=True)

    @extend_schema(
        operation_id="mental_models_list",
        parameters=[
            OpenApiParameter("detail", str, enum=["metadata", "content", "full"]),
            *PAGE,
            *TAG_FILTER,
        ],
        responses=page_of("HindsightMentalModelList", ITEM),
    )
    def get(self, request: Request, bank_id: str) -> Response:
        detail = request.query_params.get("detail", "metadata")  # Hindsight's list default
        if detail not in ("metadata", "content", "full"):
            raise query_error("detail", "one of metadata, content, full", "value_error")
        limit, offset = page(request)
        wanted = tag_query(request)
        access = banks.resolve(actor=self.actor, bank_id=bank_id, tags=wanted)
        views = (
            selectors.mental_models(
                access=access,
                tag_list=wanted,
                tags_match=request.query_params.get("tags_match", "any"),
            )
            if access is not None
            else []
        )
        items = [v.to_response(bank_id, detail) for v in views[offset : offset + limit]]
        return Response({"items": items, "total": len(views), "limit": limit, "offset": offset})

    @extend_schema(
        operation_id="mental_model_create",
        request=Input,
        responses=obj(
            "HindsightMentalModelCreated",
            {"mental_model_id": serializers.CharField(), "operation_id": serializers.CharField()},
        ),
    )
    def post(self, request: Request, bank_id: str) -> Response:
        data = valid(self.Input, request.data)
        model_tags = conf.check_tags(data.get("tags") or [], "tags")
        access = banks.require(
            actor=self.actor, bank_id=bank_id, tags=model_tags, min_role=Role.MEMBER
        )
        trigger = data.get("trigger") or {}
        definition = conf.MentalModelDef(
            id=conf.check_model_id(data.get("id") or services.new_model_id(data["name"])),
            name=data["name"],
            source_query=data["source_query"],
            tags=model_tags,
            max_tokens=data.get("max_tokens") or conf.DEFAULT_MODEL_TOKENS,
            mode=trigger.get("mode") or "full",
            refresh_after_consolidation=bool(trigger.get("refresh_after_consolidation", False)),
            created_at=timezone.now().isoformat(),
        )
        stored, created = services.mental_model_create(access=access, definition=definition)
        requested = (
            services.mental_model_refresh_request(project=access.project, model_id=stored.id)
            if created
            else timezone.now()
        )
        return Response(
            {
                "mental_model_id": stored.id,
                "operation_id": selectors.refresh_operation_id(stored.id, requested),
            }
        )


class MentalModelDetailApi(HindsightView):
    @extend_schema(
        operation_id="mental_model_get",
        parameters=[OpenApiParameter("detail", str, enum=["metadata", "content", "full"])],
        responses=OBJECT,
    )
    def get(self, request: Request, bank_id: str, model_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id)
        view = selectors.mental_model(access=access, model_id=model_id)
        return Response(view.to_response(bank_id, request.query_params.get("detail", "full")))

    @extend_schema(
        operation_id="mental_model_delete",
        responses={200: obj("HindsightMentalModelDeleted", {"status": serializers.CharField()})},
    )
    def delete(self, request: Request, bank_id: str, model_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id, min_role=Role.MAINTAINER)
        selectors.mental_model(access=access, model_id=model_id)
        services.mental_model_delete(access=access, model_id=model_id)
        return Response({"status": "deleted"})


class MentalModelHistoryApi(HindsightView):
    @extend_schema(
        operation_id="mental_model_history",
        responses=OpenApiResponse(
            response={"type": "array", "items": {"type": "object"}},
            description="Each change of content, newest first.",
        ),
    )
    def get(self, request: Request, bank_id: str, model_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id)
        return Response(selectors.mental_model_history(access=access, model_id=model_id))


class MentalModelRefreshApi(HindsightView):
    @extend_schema(
        operation_id="mental_model_refresh",
        request=None,
        responses=obj(
            "HindsightRefreshQueued",
            {"operation_id": serializers.CharField(), "status": serializers.CharField()},
        ),
    )
    def post(self, request: Request, bank_id: str, model_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id, min_role=Role.MEMBER)
        selectors.mental_model(access=access, model_id=model_id)
        requested = services.mental_model_refresh_request(
            project=access.project, model_id=model_id, actor=access.actor
        )
        return Response(
            {
                "operation_id": selectors.refresh_operation_id(model_id, requested),
                "status": "queued",
            }
        )


# --- operations, health, version --------------------------------------------------------------


class OperationApi(HindsightView):
    @extend_schema(operation_id="operation_get", responses=OBJECT)
    def get(self, request: Request, bank_id: str, operation_id: str) -> Response:
        access = banks.require(actor=self.actor, bank_id=bank_id)
        return Response(selectors.operation(access=access, operation_id=operation_id))


class HealthApi(PublicView):
    @extend_schema(
        operation_id="health",
        responses={
            200: obj(
                "HindsightHealth",
                {"status": serializers.CharField(), "database": serializers.DictField()},
            ),
            503: OBJECT,
        },
    )
    def get(self, request: Request) -> Response:
        database = health._check_database()
        body = {"status": "healthy" if database["ok"] else "unhealthy", "database": database}
        return Response(body, status=200 if database["ok"] else 503)


class VersionApi(PublicView):
    @extend_schema(
        operation_id="version",
        responses=obj(
            "HindsightVersion",
            {
                "api_version": serializers.CharField(),
                "features": serializers.DictField(child=serializers.BooleanField()),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        features = dict.fromkeys(
            (
                "observations",
                "mcp",
                "bank_config_api",
                "bank_llm_health",
                "file_upload_api",
                "document_export_api",
                "document_import_api",
                "audit_log",
                "llm_trace",
            ),
            False,
        )
        features |= {"worker": True, "store_document_text": True, "audit_log": True}
        return Response({"api_version": API_VERSION, "features": features})


def not_found(request: Any, *args: Any, **kwargs: Any) -> Any:
    """Unknown paths under /v1/ answer in Hindsight's shape, not Django's HTML page."""
    from django.http import JsonResponse

    return JsonResponse({"detail": "Not Found"}, status=404)
