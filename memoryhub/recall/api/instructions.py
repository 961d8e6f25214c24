"""REST API of the MEWCODE.md layer: /api/v1/projects/{slug}/instructions/…

Project files are read by every member and written by members (role member and up); each
user's own file (/instructions/user/) is private to them and writable by any member of the
project, viewers included, since it only changes what that user's agents are told.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of, user_of
from memoryhub.core.api import PageParams, Pagination, paginated_response
from memoryhub.recall import instructions, selectors, services
from memoryhub.recall.api import stored_path
from memoryhub.recall.api.serializers import BulkWriteResultSerializer
from memoryhub.recall.models import InstructionFile
from projects.models import Role
from projects.selectors import ProjectAccess, project_access


def _access(request: Request, slug: str, role: Role = Role.VIEWER) -> ProjectAccess:
    return project_access(slug=slug, actor=actor_of(request), min_role=role)


class InstructionFileSummarySerializer(serializers.Serializer):
    path = serializers.CharField()
    bytes = serializers.SerializerMethodField()
    updated_at = serializers.DateTimeField()
    updated_by = serializers.CharField(source="updated_by.username", default=None)

    def get_bytes(self, file: InstructionFile) -> int:
        return len(file.content.encode())


class InstructionFileSerializer(InstructionFileSummarySerializer):
    content = serializers.CharField()


class InstructionFileContentSerializer(serializers.Serializer):
    content = serializers.CharField(
        allow_blank=True, trim_whitespace=False, help_text="At most 200 KB (UTF-8)."
    )


class InstructionsResolvedApi(APIView):
    class ResolvedInstructionsOutput(serializers.Serializer):
        text = serializers.CharField()
        files = serializers.ListField(
            child=serializers.CharField(),
            help_text='Files used, in order; the caller\'s own file is "~/.mewcode/MEWCODE.md".',
        )

    @extend_schema(operation_id="instructions_resolved", responses=ResolvedInstructionsOutput)
    def get(self, request: Request, slug: str) -> Response:
        """The caller's instructions: MEWCODE.md, .mewcode/MEWCODE.md and their own file,
        @includes expanded, joined with "\\n---\\n"."""
        access = _access(request, slug)
        resolved = instructions.instructions_resolve(project=access.project, user=access.actor.user)
        return Response(self.ResolvedInstructionsOutput(resolved).data)


class InstructionFileListApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    class InstructionFileListParams(PageParams):
        """Only the page: the list has no filters."""

    @extend_schema(
        operation_id="instruction_files_list",
        parameters=[InstructionFileListParams],
        responses=InstructionFileSummarySerializer(many=True),
    )
    def get(self, request: Request, slug: str) -> Response:
        """The project's instruction files by path (users' own files are not listed)."""
        files = selectors.instruction_file_list(access=_access(request, slug))
        return paginated_response(request, self, files, InstructionFileSummarySerializer)


class InstructionFileDetailApi(APIView):
    @extend_schema(operation_id="instruction_files_get", responses=InstructionFileSerializer)
    def get(self, request: Request, slug: str, path: str) -> Response:
        file = selectors.instruction_file_get(
            access=_access(request, slug),
            path=stored_path(path, missing="Instruction file not found."),
        )
        return Response(InstructionFileSerializer(file).data)

    @extend_schema(
        operation_id="instruction_files_put",
        request=InstructionFileContentSerializer,
        responses={200: InstructionFileSerializer, 201: InstructionFileSerializer},
    )
    def put(self, request: Request, slug: str, path: str) -> Response:
        """Create or replace the project file at `path` (relative to the project root)."""
        access = _access(request, slug, Role.MEMBER)
        payload = InstructionFileContentSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        file, created = services.instruction_file_put(
            project=access.project,
            actor=access.actor,
            path=path,
            content=payload.validated_data["content"],
        )
        return Response(
            InstructionFileSerializer(file).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(operation_id="instruction_files_delete", responses={204: None})
    def delete(self, request: Request, slug: str, path: str) -> Response:
        access = _access(request, slug, Role.MEMBER)
        file = selectors.instruction_file_get(
            access=access, path=stored_path(path, missing="Instruction file not found.")
        )
        services.instruction_file_delete(file=file, actor=access.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InstructionTreeApi(APIView):
    class InstructionTreeInput(serializers.Serializer):
        files = serializers.DictField(
            child=serializers.CharField(allow_blank=True, trim_whitespace=False),
            help_text="Path (relative to the project root) → content.",
        )
        replace = serializers.BooleanField(
            default=False, help_text="Delete the project's files that are not in `files`."
        )

    @extend_schema(
        operation_id="instruction_tree_upload",
        request=InstructionTreeInput,
        responses=BulkWriteResultSerializer,
    )
    def post(self, request: Request, slug: str) -> Response:
        """Upload a whole tree of project instruction files in one request, all or nothing."""
        access = _access(request, slug, Role.MEMBER)
        payload = self.InstructionTreeInput(data=request.data)
        payload.is_valid(raise_exception=True)
        result = services.instruction_tree_put(
            project=access.project, actor=access.actor, **payload.validated_data
        )
        return Response(BulkWriteResultSerializer(result).data)


class UserInstructionFileApi(APIView):
    @extend_schema(operation_id="user_instruction_file_get", responses=InstructionFileSerializer)
    def get(self, request: Request, slug: str) -> Response:
        """The caller's own instruction file (the ~/.mewcode/MEWCODE.md layer)."""
        file = selectors.user_instruction_file_get(access=_access(request, slug))
        return Response(InstructionFileSerializer(file).data)

    @extend_schema(
        operation_id="user_instruction_file_put",
        request=InstructionFileContentSerializer,
        responses={200: InstructionFileSerializer, 201: InstructionFileSerializer},
    )
    def put(self, request: Request, slug: str) -> Response:
        access = _access(request, slug)
        payload = InstructionFileContentSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        file, created = services.instruction_file_put(
            project=access.project,
            actor=access.actor,
            path=InstructionFile.USER_FILE_PATH,
            content=payload.validated_data["content"],
            owner=user_of(request),
        )
        return Response(
            InstructionFileSerializer(file).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(operation_id="user_instruction_file_delete", responses={204: None})
    def delete(self, request: Request, slug: str) -> Response:
        access = _access(request, slug)
        file = selectors.user_instruction_file_get(access=access)
        services.instruction_file_delete(file=file, actor=access.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
