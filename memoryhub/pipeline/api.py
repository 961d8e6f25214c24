"""REST API of bank administration: /api/v1/projects/{slug}/bank/…"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.core.selectors import worker_status
from memoryhub.llm import selectors as llm_selectors
from memoryhub.llm.api import LlmUsageApi
from memoryhub.pipeline import selectors, services
from memoryhub.pipeline.dream import schedule
from memoryhub.pipeline.dream import selectors as dream_selectors
from memoryhub.sessions.selectors import session_get
from projects.models import Role
from projects.selectors import project_access


class JobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    kind = serializers.CharField()
    key = serializers.CharField()
    session = serializers.CharField(source="session.external_id", default=None, allow_null=True)
    status = serializers.CharField()
    lease_until = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    retry_at = serializers.DateTimeField(allow_null=True)
    retries_remaining = serializers.IntegerField()
    last_error = serializers.CharField()
    input_watermark = serializers.IntegerField()
    success_watermark = serializers.IntegerField()
    progress = serializers.IntegerField()
    detail = serializers.DictField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


BankStats = inline_serializer(
    "BankStats",
    {
        "memories": serializers.DictField(),
        "sessions": serializers.IntegerField(),
        "records": serializers.IntegerField(),
        "artifacts": serializers.IntegerField(),
        "jobs": serializers.DictField(),
    },
)


class BankStatsApi(APIView):
    @extend_schema(operation_id="bank_stats", responses=BankStats)
    def get(self, request: Request, slug: str) -> Response:
        access = project_access(slug=slug, actor=actor_of(request))
        return Response(selectors.bank_stats(project=access.project, access=access))


class BankDiagnoseApi(APIView):
    class BankDiagnoseOutput(serializers.Serializer):
        running = JobOutputSerializer(many=True)
        failing = JobOutputSerializer(many=True, help_text="In error (will retry) or failed.")
        recent = JobOutputSerializer(many=True)
        llm = LlmUsageApi.LlmUsageOutput()
        worker = serializers.DictField()

    @extend_schema(operation_id="bank_diagnose", responses=BankDiagnoseOutput)
    def get(self, request: Request, slug: str) -> Response:
        """Jobs and leases, failures with their last errors, LLM usage and budget, worker."""
        access = project_access(slug=slug, actor=actor_of(request))
        data = selectors.job_overview(project=access.project)
        data["llm"] = llm_selectors.llm_usage(project=access.project)
        data["worker"] = worker_status()
        return Response(self.BankDiagnoseOutput(data).data)


class BankEnqueueApi(APIView):
    @extend_schema(
        operation_id="bank_enqueue",
        request=None,
        responses={
            202: inline_serializer(
                "BankEnqueued",
                {
                    "stage1": serializers.IntegerField(),
                    "stage2": serializers.IntegerField(),
                    "dream": serializers.IntegerField(),
                },
            )
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Mark stage 2 dirty and send all due work to the workers now."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.MAINTAINER)
        sent = services.bank_enqueue(project=access.project, actor=access.actor)
        return Response(sent, status=status.HTTP_202_ACCEPTED)


class ConfirmInput(serializers.Serializer):
    confirm = serializers.CharField(help_text="The project's slug, to confirm.")


class BankClearApi(APIView):
    class BankClearInput(ConfirmInput):
        include_transcripts = serializers.BooleanField(default=False)

    @extend_schema(
        operation_id="bank_clear",
        request=BankClearInput,
        responses=inline_serializer(
            "BankCleared", {"deleted": serializers.DictField(child=serializers.IntegerField())}
        ),
    )
    def post(self, request: Request, slug: str) -> Response:
        """Owner only: delete derived memories, artifacts and jobs (transcripts on request)."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.OWNER)
        payload = self.BankClearInput(data=request.data)
        payload.is_valid(raise_exception=True)
        counts = services.bank_clear(
            project=access.project, actor=access.actor, **payload.validated_data
        )
        return Response({"deleted": counts})


class BankRebuildApi(APIView):
    @extend_schema(operation_id="bank_rebuild_status", responses=JobOutputSerializer)
    def get(self, request: Request, slug: str) -> Response:
        """The latest rebuild's state and progress (percent)."""
        access = project_access(slug=slug, actor=actor_of(request))
        return Response(JobOutputSerializer(selectors.rebuild_job(project=access.project)).data)

    @extend_schema(
        operation_id="bank_rebuild", request=ConfirmInput, responses={202: JobOutputSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        """Owner only: clear derived data, then replay every session in the background."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.OWNER)
        payload = ConfirmInput(data=request.data)
        payload.is_valid(raise_exception=True)
        job = services.bank_rebuild_start(
            project=access.project, actor=access.actor, confirm=payload.validated_data["confirm"]
        )
        return Response(JobOutputSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class DreamScheduleOutput(serializers.Serializer):
    timezone = serializers.CharField()
    local_time = serializers.CharField(help_text="Now, in the project's timezone.")
    suppressed_by = serializers.CharField(
        allow_null=True,
        help_text="The suppression window (with its lead time) scheduled dreams wait for.",
    )
    idle_minutes = serializers.IntegerField()
    suppress_windows = serializers.ListField(child=serializers.CharField())
    lead_minutes = serializers.IntegerField()
    cooldown_hours = serializers.IntegerField()
    max_attempts = serializers.IntegerField()


class BankDreamApi(APIView):
    class BankDreamOutput(serializers.Serializer):
        schedule = DreamScheduleOutput()
        runs = JobOutputSerializer(many=True, help_text="Dream jobs, latest start first.")

    class BankDreamInput(serializers.Serializer):
        session_id = serializers.CharField(
            required=False,
            help_text="The window: a session id or external id (default: the latest session).",
        )

    @extend_schema(operation_id="bank_dream_status", responses=BankDreamOutput)
    def get(self, request: Request, slug: str) -> Response:
        """The dream schedule of the project and its last dream runs (one job per window)."""
        access = project_access(slug=slug, actor=actor_of(request))
        data = {
            "schedule": dream_selectors.dream_schedule(project=access.project),
            "runs": dream_selectors.dream_runs(project=access.project),
        }
        return Response(self.BankDreamOutput(data).data)

    @extend_schema(
        operation_id="bank_dream", request=BankDreamInput, responses={202: JobOutputSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        """Maintainers: dream about one window now, whatever the idle time, suppression windows
        and cooldown (409 while a dream of it holds its lease)."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.MAINTAINER)
        payload = self.BankDreamInput(data=request.data or {})
        payload.is_valid(raise_exception=True)
        ref = payload.validated_data.get("session_id")
        session = (
            session_get(access=access, ref=ref)
            if ref
            else dream_selectors.latest_window(project=access.project)
        )
        job = schedule.dream_request(project=access.project, session=session, actor=access.actor)
        return Response(JobOutputSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class SessionExtractApi(APIView):
    @extend_schema(
        operation_id="sessions_extract", request=None, responses={202: JobOutputSerializer}
    )
    def post(self, request: Request, slug: str, ref: str) -> Response:
        """Extract memories from this session now (its author or a maintainer), without waiting
        for it to be idle; 400 when nothing past the last extraction."""
        access = project_access(slug=slug, actor=actor_of(request), min_role=Role.MEMBER)
        session = session_get(access=access, ref=ref, write=True)
        job = services.stage1_request(project=access.project, session=session, actor=access.actor)
        return Response(JobOutputSerializer(job).data, status=status.HTTP_202_ACCEPTED)
