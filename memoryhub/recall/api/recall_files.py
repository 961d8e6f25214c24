"""REST API of recall files (directory memories): /api/v1/projects/{slug}/recall-files/…

A file is addressed by its scope and its path in that memory directory:
…/recall-files/project/testing.md or …/recall-files/user/prefs/editor.md. User-scope files
belong to the caller (nobody else sees them) and any member may write their own; project
files are written by members (role member and up).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.core.api import PageParams, Pagination, paginated_response
from memoryhub.memories.kinds import Scope
from memoryhub.recall import selectors, services
from memoryhub.recall.api import stored_path
from memoryhub.recall.api.serializers import BulkWriteResultSerializer
from memoryhub.recall.models import RecallFile
from projects.models import Role
from projects.selectors import ProjectAccess, project_access

SCOPE_PARAMETER = OpenApiParameter(
    "scope", str, OpenApiParameter.PATH, enum=Scope.values, description="user or project"
)


def _access(request: Request, slug: str, scope: str | None = None) -> ProjectAccess:
    access = project_access(slug=slug, actor=actor_of(request))
    if scope is not None and scope not in Scope.values:
        raise Http404("Unknown recall file scope; use user or project.")
    return access


def _require_write(access: ProjectAccess, scope: str) -> None:
    """Project files are written by members and up; one's own files by any role."""
    if scope == Scope.PROJECT and not access.at_least(Role.MEMBER):
        raise PermissionDenied(
            f"This action needs the {Role.MEMBER} role or higher; you are {access.role}."
        )


class RecallFileSummarySerializer(serializers.Serializer):
    scope = serializers.CharField()
    path = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    type = serializers.CharField(help_text="user, feedback, project, reference or empty.")
    bytes = serializers.SerializerMethodField()
    updated_at = serializers.DateTimeField(help_text="The file's mtime when it was synced.")
    updated_by = serializers.CharField(source="updated_by.username", default=None)

    def get_bytes(self, file: RecallFile) -> int:
        return len(file.content.encode())


class RecallFileSerializer(RecallFileSummarySerializer):
    content = serializers.CharField()


class RecallFileListApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    class RecallFileListParams(PageParams):
        scope = serializers.ChoiceField(choices=Scope.choices, required=False)

    @extend_schema(
        operation_id="recall_files_list",
        parameters=[RecallFileListParams],
        responses=RecallFileSummarySerializer(many=True),
    )
    def get(self, request: Request, slug: str) -> Response:
        """The project's recall files and the caller's own, newest first (no content)."""
        params = self.RecallFileListParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        scope = params.validated_data.get("scope")
        access = _access(request, slug)
        files = selectors.recall_file_list(access=access, scope=scope)
        return paginated_response(request, self, files, RecallFileSummarySerializer)


class RecallFileDetailApi(APIView):
    class RecallFileInput(serializers.Serializer):
        content = serializers.CharField(
            allow_blank=True, trim_whitespace=False, help_text="At most 200 KB (UTF-8)."
        )
        mtime = serializers.DateTimeField(
            required=False, help_text="The file's modification time; default: now."
        )

    @extend_schema(
        operation_id="recall_files_get",
        parameters=[SCOPE_PARAMETER],
        responses=RecallFileSerializer,
    )
    def get(self, request: Request, slug: str, scope: str, path: str) -> Response:
        access = _access(request, slug, scope)
        file = selectors.recall_file_get(
            access=access, scope=scope, path=stored_path(path, missing="Recall file not found.")
        )
        return Response(RecallFileSerializer(file).data)

    @extend_schema(
        operation_id="recall_files_put",
        parameters=[SCOPE_PARAMETER],
        request=RecallFileInput,
        responses={200: RecallFileSerializer, 201: RecallFileSerializer},
    )
    def put(self, request: Request, slug: str, scope: str, path: str) -> Response:
        """Create or replace a .md file; name, description and type come from its
        frontmatter."""
        access = _access(request, slug, scope)
        _require_write(access, scope)
        payload = self.RecallFileInput(data=request.data)
        payload.is_valid(raise_exception=True)
        file, created = services.recall_file_put(
            project=access.project,
            actor=access.actor,
            scope=scope,
            data=services.RecallFileInput(path=path, **payload.validated_data),
        )
        return Response(
            RecallFileSerializer(file).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(
        operation_id="recall_files_delete", parameters=[SCOPE_PARAMETER], responses={204: None}
    )
    def delete(self, request: Request, slug: str, scope: str, path: str) -> Response:
        access = _access(request, slug, scope)
        _require_write(access, scope)
        file = selectors.recall_file_get(
            access=access, scope=scope, path=stored_path(path, missing="Recall file not found.")
        )
        services.recall_file_delete(file=file, actor=access.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RecallFileSyncEntrySerializer(serializers.Serializer):
    path = serializers.CharField(max_length=1000)
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    mtime = serializers.DateTimeField(required=False)


class RecallFileSyncApi(APIView):
    class RecallFileSyncInput(serializers.Serializer):
        scope = serializers.ChoiceField(choices=Scope.choices)
        files = RecallFileSyncEntrySerializer(many=True)
        delete_missing = serializers.BooleanField(
            default=False, help_text="Delete stored files of this scope that are not listed."
        )

    @extend_schema(
        operation_id="recall_files_sync",
        request=RecallFileSyncInput,
        responses=BulkWriteResultSerializer,
    )
    def post(self, request: Request, slug: str) -> Response:
        """Mirror one memory directory (the project's or the caller's), all or nothing."""
        access = _access(request, slug)
        payload = self.RecallFileSyncInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        _require_write(access, data["scope"])
        result = services.recall_files_sync(
            project=access.project,
            actor=access.actor,
            scope=data["scope"],
            files=[services.RecallFileInput(**entry) for entry in data["files"]],
            delete_missing=data["delete_missing"],
        )
        return Response(BulkWriteResultSerializer(result).data)
