"""REST API of recall: /api/v1/projects/{slug}/memories/search/ …"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.core.api import CommaSeparatedChoiceField
from memoryhub.memories.kinds import Kind, Scope, Subcategory
from memoryhub.memories.models import Memory
from memoryhub.recall import search
from memoryhub.recall.api.serializers import MemoryRowSerializer, memory_row
from memoryhub.sessions.selectors import own_session
from projects.selectors import project_access


class SearchResultSerializer(MemoryRowSerializer):
    metadata = serializers.DictField(source="memory.metadata")
    score = serializers.FloatField()


class MemorySearchApi(APIView):
    class SearchInput(serializers.Serializer):
        q = serializers.CharField(max_length=2000)
        k = serializers.IntegerField(min_value=1, max_value=100, default=20)
        kind = CommaSeparatedChoiceField(choices=Kind.values, required=False)
        scope = serializers.ChoiceField(choices=Scope.choices, required=False)
        status = CommaSeparatedChoiceField(choices=[*Memory.Status.values, "all"], required=False)
        subcategory = serializers.ChoiceField(choices=Subcategory.choices, required=False)
        days = serializers.IntegerField(
            min_value=0,
            max_value=36_500,
            required=False,
            help_text="Only memories created in the last N days.",
        )
        as_of = serializers.DateTimeField(
            required=False, help_text="'Now' for recency decay (replays)."
        )
        session_id = serializers.CharField(
            max_length=200,
            required=False,
            help_text="Skip memories this session already saw (after the first five).",
        )

    class SearchOutput(serializers.Serializer):
        results = SearchResultSerializer(many=True)

    @extend_schema(operation_id="memories_search", parameters=[SearchInput], responses=SearchOutput)
    def get(self, request: Request, slug: str) -> Response:
        """Memories ranked by the one ranking (BM25 × recency, the context signals), best first."""
        access = project_access(slug=slug, actor=actor_of(request))
        params = self.SearchInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        statuses = data.get("status") or (Memory.Status.ACTIVE,)
        if "all" in statuses:
            statuses = tuple(Memory.Status.values)
        session = own_session(access=access, ref=data.get("session_id"))
        hits = search.memory_search(
            access=access,
            query=search.SearchQuery(
                text=data["q"],
                k=data["k"],
                kinds=data.get("kind", ()),
                scope=data.get("scope"),
                statuses=tuple(statuses),
                subcategory=data.get("subcategory"),
                days=data.get("days"),
                as_of=data.get("as_of"),
                session=session,
            ),
        )
        # Plain dicts (SearchResultSerializer's fields, held equal by a test): serializers per
        # row cost more than the ranking itself.
        results = [
            {**memory_row(hit.memory), "metadata": hit.memory.metadata, "score": float(hit.score)}
            for hit in hits
        ]
        return Response({"results": results})
