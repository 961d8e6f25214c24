"""REST API of imports and exports: /api/v1/projects/{slug}/interchange/…"""

from __future__ import annotations

import tempfile
from typing import IO, Any

from django.conf import settings
from django.http import FileResponse
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.interchange import archive, formats
from memoryhub.interchange.bundle import ImportFailed, problem
from memoryhub.interchange.services import ImportResult
from projects.models import Role
from projects.selectors import ProjectAccess, project_access

CHUNK = 1 << 20
ARCHIVE_TYPES = {"zip": ("application/zip", ".zip"), "tar": ("application/gzip", ".tar.gz")}


def _access(request: Request, slug: str, role: Role = Role.VIEWER) -> ProjectAccess:
    return project_access(slug=slug, actor=actor_of(request), min_role=role)


class ImportResultSerializer(serializers.Serializer):
    format = serializers.CharField()
    import_id = serializers.CharField()
    created = serializers.DictField(child=serializers.IntegerField())
    updated = serializers.DictField(child=serializers.IntegerField())
    unchanged = serializers.DictField(child=serializers.IntegerField())
    warnings = serializers.ListField(child=serializers.CharField())


class InterchangeFormatsApi(APIView):
    @extend_schema(
        operation_id="interchange_formats",
        responses={
            200: inline_serializer(
                "InterchangeFormat",
                {"name": serializers.CharField(), "description": serializers.CharField()},
                many=True,
            )
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        """The formats this project can import from and export to."""
        _access(request, slug)
        return Response(
            [{"name": name, "description": formats.DESCRIPTIONS[name]} for name in formats.FORMATS]
        )


def _no_file() -> ImportFailed:
    message = gettext("No file was uploaded.")
    return ImportFailed([problem("", None, message)], message=message)


def _spool(source: IO[bytes], into: IO[bytes], filename: str) -> int:
    """Copy the request body to a temporary file, refusing it past the import limit; the
    number of bytes copied."""
    limit = settings.SESSION_IMPORT_MAX_BYTES
    total = 0
    while chunk := source.read(CHUNK):
        total += len(chunk)
        if total > limit:
            raise archive.too_large(filename)
        into.write(chunk)
    into.seek(0)
    return total


class InterchangeImportApi(APIView):
    # Multipart uploads only go through a parser; any other body is read raw (_spool).
    parser_classes = [MultiPartParser]
    max_body_bytes = settings.SESSION_IMPORT_MAX_BYTES

    @extend_schema(
        operation_id="interchange_import",
        parameters=[
            OpenApiParameter("filename", str, required=False),
            OpenApiParameter(
                "dry_run",
                bool,
                required=False,
                description="Report what would change; write nothing.",
            ),
        ],
        request={
            "multipart/form-data": inline_serializer(
                "InterchangeUpload", {"file": serializers.FileField()}
            ),
            "application/zip": OpenApiTypes.BINARY,
            "application/gzip": OpenApiTypes.BINARY,
            "application/x-tar": OpenApiTypes.BINARY,
            "application/octet-stream": OpenApiTypes.BINARY,
        },
        responses={200: ImportResultSerializer, 201: ImportResultSerializer},
    )
    def post(self, request: Request, slug: str, fmt: str) -> Response:
        """Import a zip or tar of a format's directory, or its single file (multipart `file`,
        or the raw body with ?filename=). All or nothing; errors name the file and line.
        ?dry_run=1 answers what the import would create, update and keep, writing nothing."""
        access = _access(request, slug, Role.MEMBER)
        dry_run = request.query_params.get("dry_run", "") in ("1", "true")
        formats.format_module(fmt)
        with tempfile.TemporaryFile() as spooled:
            source: IO[bytes] = spooled
            if request.content_type.startswith("multipart/form-data"):
                # Django's upload handlers have already spooled it (to disk past 2.5 MB).
                upload = request.FILES.get("file")
                if upload is None:
                    raise _no_file()
                source, filename = upload, upload.name or ""
            else:
                filename = request.query_params.get("filename", "")
                stream = request.stream
                size = _spool(stream, spooled, filename) if stream is not None else 0
                if not size and not filename:  # no body at all (with a name: an empty file)
                    raise _no_file()
            with archive.unpack_upload(source, filename=filename) as unpacked:
                result = formats.interchange_import(
                    access=access, format=fmt, tree=unpacked.tree, dry_run=dry_run
                )
        return _result_response(result, dry_run)


def _result_response(result: ImportResult, dry_run: bool) -> Response:
    created = any(result.created.values()) and not dry_run
    return Response(
        ImportResultSerializer(result).data,
        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
    )


class InterchangeExportApi(APIView):
    @extend_schema(
        operation_id="interchange_export",
        parameters=[OpenApiParameter("archive", str, enum=list(ARCHIVE_TYPES), required=False)],
        responses={(200, "application/zip"): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, slug: str, fmt: str) -> Any:
        """Download what you can see in the project as `format`'s files, zipped (or
        ?archive=tar for a .tar.gz)."""
        access = _access(request, slug)
        kind = request.query_params.get("archive", "zip")
        if kind not in ARCHIVE_TYPES:
            message = gettext("Use one of %(values)s.") % {"values": ", ".join(ARCHIVE_TYPES)}
            raise serializers.ValidationError({"archive": [message]})
        files = formats.interchange_export(access=access, format=fmt)
        # FileResponse closes it once sent.
        out = tempfile.SpooledTemporaryFile(max_size=8 * CHUNK)  # noqa: SIM115
        (archive.write_zip if kind == "zip" else archive.write_tar)(files, out)
        out.seek(0)
        content_type, suffix = ARCHIVE_TYPES[kind]
        return FileResponse(
            out,
            as_attachment=True,
            filename=f"{access.project.slug}-{fmt}{suffix}",
            content_type=content_type,
        )
