"""REST API of project backups (owners): download one, restore one as a new project."""

from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of, user_of
from memoryhub.backups import selectors, services
from projects.models import Role
from projects.selectors import project_access


class ProjectBackupApi(APIView):
    @extend_schema(
        operation_id="projects_backup",
        responses={(200, "application/gzip"): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        """The whole project — memories with their history, sessions with records, recall files,
        instructions, artifacts, settings, members — as a gzip'd JSON Lines backup (owners)."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.OWNER)
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response = StreamingHttpResponse(
            selectors.backup_gzip_chunks(project=access.project), content_type="application/gzip"
        )
        name = f"{access.project.slug}-{stamp}.memoryhub.jsonl.gz"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class ProjectRestoreApi(APIView):
    parser_classes = [MultiPartParser]
    # A backup can be as large as a transcript import; the upload is spooled to disk.
    max_body_bytes = settings.SESSION_IMPORT_MAX_BYTES

    class RestoreInput(serializers.Serializer):
        backup = serializers.FileField()
        slug = serializers.SlugField(max_length=64, help_text="The new project's slug.")

    @extend_schema(
        operation_id="projects_restore",
        request={"multipart/form-data": RestoreInput},
        responses={
            201: inline_serializer(
                "RestoreResult",
                {
                    "slug": serializers.CharField(),
                    "rows": serializers.DictField(child=serializers.IntegerField()),
                    "users_created": serializers.ListField(child=serializers.CharField()),
                },
            )
        },
    )
    def post(self, request: Request) -> Response:
        """Server administrators (staff) only: restore a backup as a new project owned by the
        caller; all or nothing. People are matched by username and become members as the
        backup says; those missing are created (with no usable password)."""
        actor = actor_of(request)
        services.restore_check(actor)  # before the upload is read
        payload = self.RestoreInput(data=request.data)
        payload.is_valid(raise_exception=True)
        report = services.project_restore(
            stream=payload.validated_data["backup"],
            slug=payload.validated_data["slug"],
            owner=user_of(request),
            actor=actor,
        )
        body = {"slug": report.project.slug, "rows": report.rows}
        return Response(body | {"users_created": report.users_created}, status.HTTP_201_CREATED)
