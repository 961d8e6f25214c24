"""REST API of agent sessions: /api/v1/projects/{slug}/sessions/…"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.core.api import PageParams, Pagination, paginated_response
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.parsers import JsonParser, NdjsonParser
from memoryhub.core.streams import iter_lines
from memoryhub.sessions import selectors, services
from memoryhub.sessions.conversation import estimate_tokens, messages_to_records
from memoryhub.sessions.importers import FORMATS
from memoryhub.sessions.models import AgentSession
from memoryhub.sessions.records import RECORD_TYPES, RecordInput, record_from_dict
from projects.models import Role
from projects.selectors import ProjectAccess, project_access


def _access(request: Request, slug: str, role: Role = Role.VIEWER) -> ProjectAccess:
    return project_access(slug=slug, actor=actor_of(request), min_role=role)


class SessionOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    external_id = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()
    status = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    record_count = serializers.IntegerField()
    message_count = serializers.IntegerField()
    token_estimate = serializers.IntegerField()
    redaction_count = serializers.IntegerField()
    injected_block_count = serializers.IntegerField()
    created_by = serializers.CharField(source="created_by_user.username", default=None)
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    last_active_at = serializers.DateTimeField()


class SessionCollectionApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    class SessionCreateInput(serializers.Serializer):
        # "/" is refused by services.session_get_or_create (which still finds an older one).
        external_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        metadata = serializers.DictField(required=False)

    class SessionFilterInput(PageParams):
        status = serializers.ChoiceField(choices=AgentSession.Status.choices, required=False)
        source = serializers.ChoiceField(  # type: ignore[assignment]
            choices=AgentSession.Source.choices, required=False
        )
        q = serializers.CharField(required=False, max_length=200)
        active_after = serializers.DateTimeField(required=False)
        active_before = serializers.DateTimeField(required=False)

    @extend_schema(
        operation_id="sessions_list",
        parameters=[SessionFilterInput],
        responses=SessionOutputSerializer(many=True),
    )
    def get(self, request: Request, slug: str) -> Response:
        access = _access(request, slug)
        params = self.SessionFilterInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = {k: v for k, v in params.validated_data.items() if k not in ("limit", "offset")}
        sessions = selectors.session_list(access=access, filters=selectors.SessionFilters(**data))
        return paginated_response(request, self, sessions, SessionOutputSerializer)

    @extend_schema(
        operation_id="sessions_create",
        request=SessionCreateInput,
        responses={201: SessionOutputSerializer, 200: SessionOutputSerializer},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Create a session, or return the existing one with this external id."""
        access = _access(request, slug, Role.MEMBER)
        payload = self.SessionCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        session, created = services.session_get_or_create(
            project=access.project, actor=access.actor, **payload.validated_data
        )
        return Response(
            SessionOutputSerializer(session).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class SessionDetailApi(APIView):
    @extend_schema(operation_id="sessions_get", responses=SessionOutputSerializer)
    def get(self, request: Request, slug: str, ref: str) -> Response:
        session = selectors.session_get(access=_access(request, slug), ref=ref)
        return Response(SessionOutputSerializer(session).data)

    @extend_schema(operation_id="sessions_delete", responses={204: None})
    def delete(self, request: Request, slug: str, ref: str) -> Response:
        access = _access(request, slug, Role.MAINTAINER)
        session = selectors.session_get(access=access, ref=ref)
        services.session_delete(session=session, actor=access.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionEndApi(APIView):
    @extend_schema(operation_id="sessions_end", request=None, responses=SessionOutputSerializer)
    def post(self, request: Request, slug: str, ref: str) -> Response:
        access = _access(request, slug, Role.MEMBER)
        session = selectors.session_get(access=access, ref=ref, write=True)
        return Response(
            SessionOutputSerializer(services.session_end(session=session, actor=access.actor)).data
        )


class RecordOutputSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    type = serializers.CharField()
    content = serializers.JSONField()
    tool_use_id = serializers.CharField()
    is_error = serializers.BooleanField()
    timestamp = serializers.DateTimeField(allow_null=True)
    seq = serializers.IntegerField(allow_null=True)
    redactions = serializers.IntegerField()
    contains_injection = serializers.BooleanField()
    metadata = serializers.DictField()


def _records_from_payload(data: Any) -> list[RecordInput]:
    """A JSON array of records, {"records": [...]}, {"messages": [...]} or NDJSON lines."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        try:
            return messages_to_records(data["messages"])
        except (ValueError, AttributeError, TypeError) as exc:
            raise serializers.ValidationError({"messages": [str(exc)]}) from None
    items = data.get("records") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise serializers.ValidationError(
            {
                "records": [
                    'Send a non-empty JSON array of records, {"records": [...]}, '
                    '{"messages": [...]} or application/x-ndjson lines.'
                ]
            }
        )
    records, errors = [], {}
    for index, item in enumerate(items):
        try:
            records.append(record_from_dict(item))
        except ValueError as exc:
            errors[str(index)] = [str(exc)]
    if errors:
        raise serializers.ValidationError({"records": errors})
    return records


class RecordCollectionApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page
    parser_classes = [JsonParser, NdjsonParser]

    class RecordFilterInput(PageParams):
        after = serializers.IntegerField(
            required=False, min_value=-1, help_text="Only records with a larger index."
        )
        type = serializers.MultipleChoiceField(choices=RECORD_TYPES, required=False)

    @extend_schema(
        operation_id="session_records_list",
        parameters=[RecordFilterInput],
        responses=RecordOutputSerializer(many=True),
    )
    def get(self, request: Request, slug: str, ref: str) -> Response:
        session = selectors.session_get(access=_access(request, slug), ref=ref)
        params = self.RecordFilterInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        records = selectors.records_page(
            session=session,
            after=params.validated_data.get("after"),
            types=tuple(request.query_params.getlist("type")),
        )
        return paginated_response(request, self, records, RecordOutputSerializer)

    @extend_schema(
        operation_id="session_records_append",
        request={"application/json": OpenApiTypes.OBJECT, "application/x-ndjson": OpenApiTypes.STR},
        responses={
            201: inline_serializer(
                "RecordAppendResult",
                {
                    "created": serializers.IntegerField(),
                    "skipped": serializers.IntegerField(),
                    "first_index": serializers.IntegerField(allow_null=True),
                    "session": SessionOutputSerializer(),
                },
            )
        },
    )
    def post(self, request: Request, slug: str, ref: str) -> Response:
        """Append records all-or-nothing (the session's author only); records with an already
        stored seq are skipped."""
        access = _access(request, slug, Role.MEMBER)
        session = selectors.session_get(access=access, ref=ref, author_only=True)
        records = _records_from_payload(request.data)
        result = services.records_append(session=session, actor=access.actor, records=records)
        session.refresh_from_db()
        return Response(
            {
                "created": len(result.created),
                "skipped": result.skipped,
                "first_index": result.created[0].index if result.created else None,
                "session": SessionOutputSerializer(session).data,
            },
            status=status.HTTP_201_CREATED,
        )


def _artifact_url(request: Request, slug: str, session: AgentSession) -> Any:
    base = f"{settings.SITE_URL}/api/v1/projects/{slug}/sessions/{session.public_id}/tool-results/"
    return lambda tool_use_id: f"{base}{tool_use_id}/"


class SessionResumeApi(APIView):
    @extend_schema(
        operation_id="sessions_resume",
        responses=inline_serializer(
            "SessionResume",
            {
                "session": SessionOutputSerializer(),
                "messages": serializers.ListField(child=serializers.JSONField()),
                "boundary_index": serializers.IntegerField(allow_null=True),
                "replayed_from_index": serializers.IntegerField(),
                "dropped_records": serializers.IntegerField(),
                "token_estimate": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request, slug: str, ref: str) -> Response:
        """Messages to continue the session: from the last compact boundary, with dangling
        tool calls cut and tool results trimmed (the same bytes on every call)."""
        session = selectors.session_get(access=_access(request, slug), ref=ref)
        conversation, messages = services.session_resume(
            session=session, artifact_url=_artifact_url(request, slug, session)
        )
        return Response(
            {
                "session": SessionOutputSerializer(session).data,
                "messages": messages,
                "boundary_index": conversation.boundary_index,
                "replayed_from_index": conversation.replayed_from_index,
                "dropped_records": conversation.dropped_records,
                "token_estimate": estimate_tokens(messages),
            }
        )


# Far beyond any model's window; a bound keeps absurd numbers out of the arithmetic and answer.
MAX_CONTEXT_TOKENS = 100_000_000


class CompactionInput(serializers.Serializer):
    context_window = serializers.IntegerField(min_value=1000, max_value=MAX_CONTEXT_TOKENS)
    current_tokens = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_CONTEXT_TOKENS,
        help_text="The agent's own count, if it has one.",
    )


CompactionAdvice = inline_serializer(
    "CompactionAdvice",
    {
        "should_compact": serializers.BooleanField(),
        "current_tokens": serializers.IntegerField(),
        "estimated": serializers.BooleanField(),
        "context_window": serializers.IntegerField(),
        "auto_threshold": serializers.IntegerField(),
        "manual_threshold": serializers.IntegerField(),
    },
)


class SessionCompactionAdviceApi(APIView):
    @extend_schema(
        operation_id="sessions_compaction_advice",
        parameters=[CompactionInput],
        responses=CompactionAdvice,
    )
    def get(self, request: Request, slug: str, ref: str) -> Response:
        """Should the agent compact now, given its context window?"""
        from memoryhub.sessions.compaction import Thresholds
        from memoryhub.sessions.conf import session_config

        session = selectors.session_get(access=_access(request, slug), ref=ref)
        params = CompactionInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        given = params.validated_data.get("current_tokens")
        tokens = (
            given
            if given is not None
            else estimate_tokens(services.session_conversation(session).messages)
        )
        thresholds = Thresholds.for_window(
            params.validated_data["context_window"], session_config(session.project.settings)
        )
        return Response(
            {
                "should_compact": tokens >= thresholds.auto,
                "current_tokens": tokens,
                "estimated": given is None,
                "context_window": thresholds.context_window,
                "auto_threshold": thresholds.auto,
                "manual_threshold": thresholds.manual,
            }
        )


COMPACT_RESULT = inline_serializer(
    "CompactResult",
    {
        "compacted": serializers.BooleanField(),
        "reason": serializers.CharField(),
        "current_tokens": serializers.IntegerField(),
        "auto_threshold": serializers.IntegerField(),
        "boundary_index": serializers.IntegerField(allow_null=True),
        "summary": serializers.CharField(),
        "kept_messages": serializers.IntegerField(),
        "tokens_after": serializers.IntegerField(),
    },
)


class SessionCompactApi(APIView):
    class CompactInput(CompactionInput):
        mode = serializers.ChoiceField(choices=["auto", "manual"], default="auto")

    @extend_schema(
        operation_id="sessions_compact",
        request=CompactInput,
        # 201 when a boundary was stored, 200 when there was nothing to compact.
        responses={201: COMPACT_RESULT, 200: COMPACT_RESULT},
    )
    def post(self, request: Request, slug: str, ref: str) -> Response:
        """Compact (auto: only past the threshold; manual: always): summarise the prefix,
        keep the tail verbatim and store a compact_boundary record."""
        access = _access(request, slug, Role.MEMBER)
        session = selectors.session_get(access=access, ref=ref, write=True)
        payload = self.CompactInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        outcome = services.session_compact(
            session=session,
            actor=access.actor,
            context_window=data["context_window"],
            manual=data["mode"] == "manual",
            current_tokens=data.get("current_tokens"),
        )
        return Response(
            {
                "compacted": outcome.compacted,
                "reason": outcome.reason,
                "current_tokens": outcome.current_tokens,
                "auto_threshold": outcome.thresholds.auto,
                "boundary_index": outcome.boundary.index if outcome.boundary else None,
                "summary": outcome.summary,
                "kept_messages": outcome.kept_messages,
                "tokens_after": outcome.tokens_after,
            },
            status=status.HTTP_201_CREATED if outcome.compacted else status.HTTP_200_OK,
        )


class ToolResultArtifactApi(APIView):
    @extend_schema(
        operation_id="sessions_tool_result", responses={(200, "text/plain"): OpenApiTypes.STR}
    )
    def get(self, request: Request, slug: str, ref: str, tool_use_id: str) -> HttpResponse:
        """The full output of a tool result that resume replaced by a preview."""
        session = selectors.session_get(access=_access(request, slug), ref=ref)
        text = selectors.tool_result_artifact(session=session, tool_use_id=tool_use_id)
        return HttpResponse(text, content_type="text/plain; charset=utf-8")


class InvalidTranscript(ApplicationError):
    code = "validation_error"


ImportJobOutput = inline_serializer(
    "SessionImportJob",
    {
        "id": serializers.CharField(),
        "status": serializers.ChoiceField(choices=["queued", "running", "succeeded", "failed"]),
        "bytes": serializers.IntegerField(),
        "retries_remaining": serializers.IntegerField(),
        "error": inline_serializer(
            "SessionImportJobError",
            {
                "code": serializers.CharField(),
                "message": serializers.CharField(),
                "details": serializers.DictField(),
            },
            allow_null=True,
            help_text="Why it failed (the error envelope's body); null unless failed.",
        ),
        "session": SessionOutputSerializer(
            allow_null=True, help_text="The imported session; null until succeeded."
        ),
        "created_at": serializers.DateTimeField(),
        "started_at": serializers.DateTimeField(allow_null=True),
        "finished_at": serializers.DateTimeField(allow_null=True),
    },
)


def _import_job_data(job: Any) -> dict[str, Any]:
    from memoryhub.pipeline.session_imports import PUBLIC_STATUS

    public = PUBLIC_STATUS[job.status]
    error = job.detail.get("error") if public == "failed" else None
    return {
        "id": job.key,
        "status": public,
        "bytes": job.detail.get("bytes", 0),
        "retries_remaining": job.retries_remaining,
        "error": error,
        "session": SessionOutputSerializer(job.session).data
        if public == "succeeded" and job.session is not None
        else None,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


def _read_head(chunks: Iterator[bytes], limit: int) -> tuple[bytes, bool]:
    """Read up to `limit` bytes (plus the piece that crosses it); True when there is more."""
    head = bytearray()
    for piece in chunks:
        head += piece
        if len(head) > limit:
            return bytes(head), True
    return bytes(head), False


class SessionImportApi(APIView):
    parser_classes = [MultiPartParser]
    max_body_bytes = settings.SESSION_IMPORT_MAX_BYTES

    class ImportParams(serializers.Serializer):
        # `format` is this endpoint's own parameter (DRF's ?format= override is off).
        format = serializers.ChoiceField(choices=list(FORMATS), required=False)
        # "/" is refused here, before a large upload is staged for the worker.
        external_id = serializers.CharField(
            max_length=200,
            required=False,
            allow_blank=True,
            validators=[services.validate_external_id],
        )

    @extend_schema(
        operation_id="sessions_import",
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=list(FORMATS),
                required=False,
                description="Force the transcript format instead of detecting it.",
            ),
            OpenApiParameter("external_id", str, required=False),
        ],
        request={
            "multipart/form-data": inline_serializer(
                "SessionImportUpload",
                {
                    "transcript": serializers.FileField(),
                    "meta": serializers.FileField(required=False),
                },
            ),
            "application/x-ndjson": OpenApiTypes.STR,
        },
        responses={201: SessionOutputSerializer, 202: ImportJobOutput},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Import a whole transcript: a MewCode {id}.jsonl (+ {id}.meta) or a Claude Code
        .jsonl, format auto-detected. All or nothing: a malformed line rejects the import.
        Up to SESSION_IMPORT_SYNC_MAX_BYTES (8 MiB) it is imported now (201, the session);
        a larger upload is streamed into the database and imported by the worker: 202 with
        the job, whose URL (`Location`) says queued, running, succeeded (with the session) or
        failed (with the error)."""
        from memoryhub.pipeline import session_imports
        from memoryhub.sessions.importers import TranscriptFormatError

        access = _access(request, slug, Role.MEMBER)
        params = self.ImportParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        meta = None
        chunks: Iterator[bytes]
        if request.content_type.startswith("multipart/form-data"):
            upload = request.FILES.get("transcript")
            if upload is None:
                raise serializers.ValidationError({"transcript": ["A file is required."]})
            chunks = iter(upload.chunks(session_imports.CHUNK_BYTES))
            if "meta" in request.FILES:
                meta = request.FILES["meta"].read()
        elif request.content_type.startswith(("application/x-ndjson", "application/jsonl")):
            stream = request.stream
            chunks = (
                iter(lambda: stream.read(session_imports.CHUNK_BYTES), b"") if stream else iter(())
            )
        else:
            raise serializers.ValidationError(
                {"transcript": ["Send multipart/form-data or application/x-ndjson."]}
            )
        transcript_format = params.validated_data.get("format")
        external_id = params.validated_data.get("external_id", "")
        head, more = _read_head(chunks, settings.SESSION_IMPORT_SYNC_MAX_BYTES)
        if more:
            job = session_imports.import_stage(
                project=access.project,
                actor=access.actor,
                transcript=itertools.chain([head], chunks),
                meta=meta,
                transcript_format=transcript_format,
                external_id=external_id,
                max_bytes=settings.SESSION_IMPORT_MAX_BYTES,
            )
            url = reverse("session-import-job", kwargs={"slug": slug, "job": job.key})
            return Response(
                _import_job_data(job),
                status=status.HTTP_202_ACCEPTED,
                headers={"Location": request.build_absolute_uri(url)},
            )
        try:
            session = services.session_import(
                project=access.project,
                actor=access.actor,
                lines=io.BytesIO(head),
                meta=meta,
                transcript_format=transcript_format,
                external_id=external_id,
            )
        except TranscriptFormatError as exc:
            raise InvalidTranscript(
                f"The transcript was not imported: {exc}",
                details={"transcript": [str(exc)], "line": exc.line},
            ) from None
        session_imports.extraction_ensure(session)
        return Response(SessionOutputSerializer(session).data, status=status.HTTP_201_CREATED)


class SessionImportJobApi(APIView):
    @extend_schema(operation_id="sessions_import_job", responses=ImportJobOutput)
    def get(self, request: Request, slug: str, job: str) -> Response:
        """A queued transcript import: poll until `status` is succeeded or failed."""
        from memoryhub.pipeline import session_imports

        access = _access(request, slug)
        found = session_imports.import_job_get(project=access.project, job_id=job)
        return Response(_import_job_data(found))


class SessionTranscriptPushApi(APIView):
    # The body is read as raw lines (blank ones count for line numbers); the parser only
    # declares the media type.
    parser_classes = [NdjsonParser]

    class TranscriptPushInput(serializers.Serializer):
        first_line = serializers.IntegerField(
            min_value=1, help_text="The file's line number (1-based) of the first line sent."
        )
        final = serializers.BooleanField(
            default=False, help_text="The file is complete: hold nothing back."
        )
        format = serializers.ChoiceField(choices=["mewcode", "claude_code"], required=False)

    @extend_schema(
        operation_id="sessions_transcript_push",
        parameters=[TranscriptPushInput],
        # text/plain too: the lines are text, and generic HTTP tools can send that.
        request={"application/x-ndjson": OpenApiTypes.STR, "text/plain": OpenApiTypes.STR},
        responses={
            201: inline_serializer(
                "TranscriptPushResult",
                {
                    "created": serializers.IntegerField(),
                    "skipped": serializers.IntegerField(),
                    "next_line": serializers.IntegerField(),
                    "held_back": serializers.BooleanField(),
                    "format": serializers.CharField(),
                    "session": SessionOutputSerializer(),
                },
            )
        },
    )
    def post(self, request: Request, slug: str, ref: str) -> Response:
        """Append the next lines of the agent's own transcript file (Claude Code or MewCode
        .jsonl), from the line the session says it continues at (`next_line` in its metadata
        "transcript"): earlier lines are ignored, so retries are safe; a gap answers 409."""
        from memoryhub.sessions.importers import TranscriptFormatError

        access = _access(request, slug, Role.MEMBER)
        session = selectors.session_get(access=access, ref=ref, author_only=True)
        params = self.TranscriptPushInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        if not request.content_type.startswith(
            ("application/x-ndjson", "application/jsonl", "text/plain")
        ):
            raise serializers.ValidationError({"transcript": ["Send application/x-ndjson."]})
        lines = list(iter_lines(request.stream)) if request.stream else []
        try:
            result = services.transcript_push(
                session=session,
                actor=access.actor,
                lines=lines,
                first_line=params.validated_data["first_line"],
                final=params.validated_data["final"],
                transcript_format=params.validated_data.get("format"),
            )
        except TranscriptFormatError as exc:
            raise InvalidTranscript(
                f"The transcript was not appended: {exc}",
                details={"transcript": [str(exc)], "line": exc.line},
            ) from None
        session.refresh_from_db()
        return Response(
            {
                "created": result.created,
                "skipped": result.skipped,
                "next_line": result.next_line,
                "held_back": result.held_back,
                "format": result.format,
                "session": SessionOutputSerializer(session).data,
            },
            status=status.HTTP_201_CREATED,
        )
