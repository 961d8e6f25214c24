"""REST API of the LLM layer: /api/v1/projects/{slug}/llm/…"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.llm import selectors
from projects.selectors import project_access

# Plain CharFields with the values in help_text rather than ChoiceFields: an enum component
# named after the field ("StateEnum", "OutcomeEnum") would clash with other apps' fields of
# the same name and fail `spectacular --fail-on-warn`.


class LlmCallOutputSerializer(serializers.Serializer):
    purpose = serializers.CharField()
    role = serializers.CharField(help_text="default | smol")
    provider = serializers.CharField(help_text="offline | openai | anthropic")
    model = serializers.CharField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    latency_ms = serializers.IntegerField()
    outcome = serializers.CharField(
        help_text="ok | error | timeout | invalid_output | budget_exhausted"
    )
    error = serializers.CharField()
    created_at = serializers.DateTimeField()


class LlmModelsOutputSerializer(serializers.Serializer):
    default = serializers.CharField()
    smol = serializers.CharField(help_text="The default model when no smol model is set.")


class LlmTodayOutputSerializer(serializers.Serializer):
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    calls = serializers.IntegerField()
    # Shadows Serializer.errors only in the class body: DRF's metaclass pops declared fields.
    errors = serializers.IntegerField(  # type: ignore[assignment]
        help_text="Calls whose outcome is not ok."
    )


class LlmUsageApi(APIView):
    class LlmUsageOutput(serializers.Serializer):
        provider = serializers.CharField(help_text="offline | openai | anthropic")
        models = LlmModelsOutputSerializer()
        today = LlmTodayOutputSerializer(help_text="Since 00:00 UTC.")
        daily_token_budget = serializers.IntegerField(
            allow_null=True, help_text="Tokens in + out per UTC day; null = unlimited."
        )
        budget_used = serializers.IntegerField(
            help_text="Tokens counted against the budget today (offline calls are free)."
        )
        state = serializers.CharField(help_text="ok | budget_exhausted | misconfigured")
        config_error = serializers.CharField(
            help_text='Why the project\'s settings["llm"] are invalid; empty when they are not.'
        )
        recent_calls = LlmCallOutputSerializer(many=True, help_text="The last 20, newest first.")

    @extend_schema(operation_id="llm_usage", responses=LlmUsageOutput)
    def get(self, request: Request, slug: str) -> Response:
        access = project_access(slug=slug, actor=actor_of(request))
        usage = selectors.llm_usage(project=access.project)
        return Response(self.LlmUsageOutput(usage).data)
