"""REST API of find-similar (meow-memory's memory_find_similar): …/memories/{id}/similar/"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.memories import selectors
from memoryhub.recall import similar
from memoryhub.recall.similar import Similar
from memoryhub.sessions.selectors import own_session
from projects.selectors import project_access


class SimilarResultSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="memory.public_id")
    kind = serializers.CharField(source="memory.kind")
    scope = serializers.CharField(source="memory.scope")
    title = serializers.CharField(source="memory.title")
    content = serializers.SerializerMethodField()
    keywords = serializers.ListField(source="memory.keywords", child=serializers.CharField())
    importance = serializers.IntegerField(source="memory.importance")
    status = serializers.CharField(source="memory.status")
    score = serializers.FloatField()
    created_at = serializers.DateTimeField(source="memory.created_at")
    updated_at = serializers.DateTimeField(source="memory.updated_at")

    def get_content(self, result: Similar) -> str:
        limit = self.context.get("content_max", 0)
        content = result.memory.content
        return content[:limit] if limit else content


class MemorySimilarApi(APIView):
    class SimilarInput(serializers.Serializer):
        k = serializers.IntegerField(
            min_value=1, max_value=similar.MAX_K, default=similar.DEFAULT_K
        )
        session_id = serializers.CharField(
            max_length=200,
            required=False,
            help_text="Skip memories this session saw or created; mark the results searched.",
        )
        content_max = serializers.IntegerField(
            min_value=0, default=200, help_text="Cut each content to N characters (0: whole)."
        )

    class SimilarOutput(serializers.Serializer):
        results = SimilarResultSerializer(many=True)

    @extend_schema(
        operation_id="memories_similar", parameters=[SimilarInput], responses=SimilarOutput
    )
    def get(self, request: Request, slug: str, memory_id: str) -> Response:
        """Memories most like this one (cosine over meow-memory's bigram term frequencies),
        for duplicate and contradiction checks; best first."""
        access = project_access(slug=slug, actor=actor_of(request))
        target = selectors.memory_get(access=access, public_id=memory_id)
        params = self.SimilarInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        session = own_session(access=access, ref=data.get("session_id"))
        results = similar.find_similar(access=access, target=target, k=data["k"], session=session)
        output = self.SimilarOutput(
            {"results": results}, context={"content_max": data["content_max"]}
        )
        return Response(output.data)
