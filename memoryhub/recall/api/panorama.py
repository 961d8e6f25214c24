"""REST API of the project panorama (meow-memory's memory_project): …/panorama/"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.recall import panorama
from memoryhub.recall.api.serializers import MemoryRowSerializer
from memoryhub.recall.language import accept_language
from projects.selectors import project_access


class PanoramaRowSerializer(MemoryRowSerializer):
    relative = serializers.CharField()


class TodoSerializer(serializers.Serializer):
    done = PanoramaRowSerializer(many=True)
    open = PanoramaRowSerializer(many=True)


class PanoramaSectionsSerializer(serializers.Serializer):
    overview = PanoramaRowSerializer(many=True)
    structure = PanoramaRowSerializer(many=True)
    decisions = PanoramaRowSerializer(many=True)
    quotes = PanoramaRowSerializer(many=True)
    ops = PanoramaRowSerializer(many=True)
    todo = TodoSerializer()
    other = PanoramaRowSerializer(many=True)


class PanoramaApi(APIView):
    class PanoramaInput(serializers.Serializer):
        as_of = serializers.DateTimeField(
            required=False, help_text="'Now' for the relative times (default: now)."
        )
        limit = serializers.IntegerField(
            min_value=1,
            max_value=1000,
            default=panorama.DEFAULT_LIMIT,
            help_text="Rows per group at most (the most recently updated ones).",
        )

    class PanoramaOutput(serializers.Serializer):
        text = serializers.CharField()
        rules = PanoramaRowSerializer(many=True)
        sections = PanoramaSectionsSerializer()

    @extend_schema(
        operation_id="project_panorama", parameters=[PanoramaInput], responses=PanoramaOutput
    )
    def get(self, request: Request, slug: str) -> Response:
        """The project at a glance: its rules, then its project memories by subcategory
        (overview, structure, decisions, quotes, ops, todo done/open), oldest first. The text's
        framework words follow the memories' language, or an Accept-Language naming en or zh."""
        access = project_access(slug=slug, actor=actor_of(request))
        params = self.PanoramaInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        view = panorama.project_panorama(
            access=access,
            as_of=params.validated_data.get("as_of"),
            limit=params.validated_data["limit"],
            lang=accept_language(request.headers.get("Accept-Language", "")),
        )
        sections: dict[str, Any] = {name: group.rows for name, group in view.sections.items()}
        sections["todo"] = {"done": view.todo_done.rows, "open": view.todo_open.rows}
        ordered = {
            name: sections[name] for name in [*map(str, panorama.SECTION_ORDER), panorama.OTHER]
        }
        return Response(
            self.PanoramaOutput(
                {"text": view.text, "rules": view.rules.rows, "sections": ordered}
            ).data
        )
