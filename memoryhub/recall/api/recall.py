"""REST API of per-message recall: POST /api/v1/projects/{slug}/recall/"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_field
from rest_framework import exceptions, permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.recall import recall_files, services
from memoryhub.recall.api.serializers import datetime_out
from memoryhub.recall.models import RecallFile
from memoryhub.recall.search import Hit
from memoryhub.sessions.selectors import own_session
from projects.selectors import project_access


class ReadWithBookkeeping(permissions.BasePermission):
    """Authenticated, read-only tokens included: recall is a read (POST only because of its
    body) whose one side effect is the session's seen set, as with search."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.user is None or not request.user.is_authenticated:
            raise exceptions.NotAuthenticated()
        return True


class RecallMemoryResultSerializer(serializers.Serializer):
    type = serializers.SerializerMethodField()
    id = serializers.UUIDField(source="memory.public_id")
    kind = serializers.CharField(source="memory.kind")
    scope = serializers.CharField(source="memory.scope")
    title = serializers.CharField(source="memory.title")
    content = serializers.CharField(source="memory.content")
    importance = serializers.IntegerField(source="memory.importance")
    score = serializers.FloatField()
    updated_at = serializers.DateTimeField(source="memory.updated_at")

    def get_type(self, hit: Hit) -> str:
        return "memory"


def recall_memory_row(hit: Hit) -> dict[str, Any]:
    """RecallMemoryResultSerializer's output as a plain dict, built directly: recall runs on
    every user message, and DRF's fields cost more than the rest of the answer. Tests hold
    the two equal."""
    memory = hit.memory
    return {
        "type": "memory",
        "id": str(memory.public_id),
        "kind": memory.kind,
        "scope": memory.scope,
        "title": memory.title,
        "content": memory.content,
        "importance": int(memory.importance),
        "score": float(hit.score),
        "updated_at": datetime_out(memory.updated_at),
    }


class RecallFileResultSerializer(serializers.Serializer):
    type = serializers.SerializerMethodField()
    scope = serializers.CharField()
    path = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    memory_type = serializers.CharField(source="type", help_text="The frontmatter type.")
    updated_at = serializers.DateTimeField()
    age_days = serializers.SerializerMethodField()

    def get_type(self, file: RecallFile) -> str:
        return "file"

    def get_age_days(self, file: RecallFile) -> int:
        return recall_files.age_days(file.updated_at, self.context["now"])


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="RecallResult",
        serializers={"memory": RecallMemoryResultSerializer, "file": RecallFileResultSerializer},
        resource_type_field_name="type",
        many=True,
    )
)
class RecallResultsField(serializers.ListField):
    """Keyword hits ({"type": "memory", …}) first, then recall files ({"type": "file", …})."""


class RecallApi(APIView):
    permission_classes = [ReadWithBookkeeping]

    class RecallInput(serializers.Serializer):
        query = serializers.CharField(
            allow_blank=True, trim_whitespace=False, max_length=20_000, help_text="The message."
        )
        session_id = serializers.CharField(
            max_length=200,
            required=False,
            help_text=(
                "Id or external id of the caller's own session: what is returned is marked as"
                " shown there and not returned again until it compacts. Without it nothing is"
                " marked."
            ),
        )
        recent_tools = serializers.ListField(
            child=serializers.CharField(max_length=200), max_length=50, required=False
        )
        as_of = serializers.DateTimeField(
            required=False, help_text="'Now' for recency and ages (replays)."
        )

    class RecallOutput(serializers.Serializer):
        results = RecallResultsField()
        text = serializers.CharField(help_text='The injection; "" when nothing was found.')

    @extend_schema(operation_id="recall", request=RecallInput, responses=RecallOutput)
    def post(self, request: Request, slug: str) -> Response:
        """The one ranking's top two memories and the recall files chosen for a user message,
        as one injection text;
        what is returned counts as shown to the caller's session, when one is named (not shown
        again until it compacts). Read-only tokens and viewers may call it."""
        access = project_access(slug=slug, actor=actor_of(request))
        payload = self.RecallInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        result = services.recall_for_message(
            access=access,
            session=own_session(access=access, ref=data.get("session_id")),
            query=data["query"],
            recent_tools=data.get("recent_tools", ()),
            as_of=data.get("as_of"),
        )
        results = [recall_memory_row(hit) for hit in result.hits] + [
            RecallFileResultSerializer(file, context={"now": result.now}).data
            for file in result.files
        ]
        return Response({"results": results, "text": result.text})  # RecallOutput's shape
