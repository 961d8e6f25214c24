"""REST API of the bank's artifacts and of memory:// resolution:
/api/v1/projects/{slug}/artifacts/… and /api/v1/projects/{slug}/memory/?uri=…"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.core.api import Pagination, paginated_response
from memoryhub.core.exceptions import ApplicationError
from memoryhub.memories import artifacts
from memoryhub.memories.models import BankArtifact
from projects.models import Role
from projects.selectors import ProjectAccess, project_access


class InvalidMemoryUri(ApplicationError):
    code = "invalid_uri"


def _access(request: Request, slug: str, *, write: bool = False) -> ProjectAccess:
    return project_access(
        slug=slug, actor=actor_of(request), min_role=Role.MAINTAINER if write else Role.VIEWER
    )


def _uri(path: str) -> str:
    return f"{artifacts.MEMORY_URI_SCHEME}{artifacts.MEMORY_URI_ROOT}/{path}"


class _WithUri(serializers.Serializer):
    """An artifact's path and its memory:// address."""

    path = serializers.CharField()
    uri = serializers.SerializerMethodField()

    def get_uri(self, artifact: BankArtifact) -> str:
        return _uri(artifact.path)


class ArtifactSummarySerializer(_WithUri):
    version = serializers.IntegerField()
    content_hash = serializers.CharField()
    chars = serializers.IntegerField()
    updated_at = serializers.DateTimeField()
    updated_by = serializers.CharField()


class ArtifactSerializer(_WithUri):
    content = serializers.CharField()
    version = serializers.IntegerField()
    content_hash = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    updated_by = serializers.CharField()


class ArtifactListApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    @extend_schema(operation_id="artifacts_list", responses=ArtifactSummarySerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        """The project's artifacts (MEMORY.md, memory_summary.md, skills/…), by path."""
        access = _access(request, slug)
        rows = artifacts.artifact_list(project=access.project)
        return paginated_response(request, self, rows, ArtifactSummarySerializer)


class ArtifactDetailApi(APIView):
    class ArtifactInput(serializers.Serializer):
        content = serializers.CharField(allow_blank=True, trim_whitespace=False)

    @extend_schema(operation_id="artifacts_get", responses=ArtifactSerializer)
    def get(self, request: Request, slug: str, path: str) -> Response:
        access = _access(request, slug)
        artifact = artifacts.artifact_get(project=access.project, path=path)
        return Response(ArtifactSerializer(artifact).data)

    @extend_schema(
        operation_id="artifacts_put",
        request=ArtifactInput,
        responses={200: ArtifactSerializer, 201: ArtifactSerializer},
    )
    def put(self, request: Request, slug: str, path: str) -> Response:
        """Create or replace an artifact (maintainers; manual edits and imports). The same
        content again is not a new version."""
        access = _access(request, slug, write=True)
        payload = self.ArtifactInput(data=request.data)
        payload.is_valid(raise_exception=True)
        existed = artifacts.artifact_find(project=access.project, path=path) is not None
        artifact, _ = artifacts.artifact_put(
            project=access.project,
            path=path,
            content=payload.validated_data["content"],
            actor=access.actor,
        )
        return Response(
            ArtifactSerializer(artifact).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )

    @extend_schema(operation_id="artifacts_delete", responses={204: None})
    def delete(self, request: Request, slug: str, path: str) -> Response:
        access = _access(request, slug, write=True)
        if not artifacts.artifact_delete(project=access.project, path=path, actor=access.actor):
            raise Http404("Artifact not found.")
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryUriEntrySerializer(_WithUri):
    version = serializers.IntegerField()
    chars = serializers.IntegerField()
    updated_at = serializers.DateTimeField()


class MemoryUriApi(APIView):
    class UriInput(serializers.Serializer):
        uri = serializers.CharField(
            max_length=1000,
            trim_whitespace=False,
            help_text="memory://root, memory://root/MEMORY.md, memory://root/skills/<name>/SKILL.md…",
        )

    class UriOutput(serializers.Serializer):
        uri = serializers.CharField()
        type = serializers.ChoiceField(choices=["directory", "file"])
        path = serializers.CharField(allow_null=True)
        content = serializers.CharField(allow_null=True)
        version = serializers.IntegerField(allow_null=True)
        content_hash = serializers.CharField(allow_null=True)
        updated_at = serializers.DateTimeField(allow_null=True)
        entries = MemoryUriEntrySerializer(many=True)

    @extend_schema(operation_id="memory_uri_resolve", parameters=[UriInput], responses=UriOutput)
    def get(self, request: Request, slug: str) -> Response:
        """Resolve a memory:// URI: the root lists MEMORY.md, memory_summary.md and each
        skills/<name>/SKILL.md that exists; any other path is that artifact's content."""
        access = _access(request, slug)
        params = self.UriInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        uri = params.validated_data["uri"]
        try:
            path = artifacts.parse_memory_uri(uri)
        except ValidationError as exc:
            raise InvalidMemoryUri(
                f"Invalid memory URI: {' '.join(exc.messages)}", details={"uri": exc.messages}
            ) from None
        if path is None:
            listing = artifacts.artifact_root_listing(project=access.project)
            data = {
                "uri": uri,
                "type": "directory",
                "path": None,
                "content": None,
                "version": None,
                "content_hash": None,
                "updated_at": None,
                "entries": listing,
            }
        else:
            artifact = artifacts.artifact_get(project=access.project, path=path)
            data = {
                "uri": uri,
                "type": "file",
                "path": artifact.path,
                "content": artifact.content,
                "version": artifact.version,
                "content_hash": artifact.content_hash,
                "updated_at": artifact.updated_at,
                "entries": [],
            }
        return Response(self.UriOutput(data).data)
