"""REST API of injection payloads: /api/v1/projects/{slug}/injection/"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse, HttpResponseNotModified
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.actors import actor_of
from memoryhub.recall import injection, services
from memoryhub.recall.layout import Payload
from memoryhub.sessions.selectors import own_session
from projects.selectors import project_access


class FixedJsonNegotiation(BaseContentNegotiation):
    """`format` is this endpoint's own parameter (json | text), not DRF's renderer override,
    and errors always come back in the JSON envelope."""

    def select_parser(self, request: Any, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return next(iter(parsers), None)

    def select_renderer(
        self, request: Any, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


def _text(payload: Payload) -> bytes:
    return payload.text.encode()


def _json(payload: Payload) -> bytes:
    return json.dumps(payload.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()


def etag_of(body: bytes) -> str:
    """A strong ETag: the hash of the exact bytes sent."""
    return '"' + hashlib.sha256(body).hexdigest() + '"'


def etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    # If-None-Match uses the weak comparison (RFC 9110 §13.1.2): W/"x" matches "x".
    tags = parse_etags(header)
    return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)


class SectionSerializer(serializers.Serializer):
    name = serializers.CharField()
    text = serializers.CharField()
    token_estimate = serializers.IntegerField()


class InjectionOutputSerializer(serializers.Serializer):
    text = serializers.CharField()
    sections = SectionSerializer(many=True)
    memory_ids = serializers.ListField(child=serializers.UUIDField())
    token_estimate = serializers.IntegerField()


class InjectionApi(APIView):
    content_negotiation_class = FixedJsonNegotiation

    class InjectionInput(serializers.Serializer):
        session_id = serializers.CharField(
            max_length=200,
            required=False,
            help_text="Mark the injected memories as seen by this session (not on a 304).",
        )
        profile = serializers.ChoiceField(
            choices=[p.value for p in injection.Profile], default=injection.Profile.DEFAULT.value
        )
        format = serializers.ChoiceField(choices=["json", "text"], default="json")
        budget_tokens = serializers.IntegerField(
            min_value=100,
            max_value=1_000_000,
            required=False,
            help_text="Token budget (chars / 3.5); default 8000. For omp it can only lower the "
            "5,000-token cap.",
        )
        date = serializers.DateField(
            required=False,
            help_text="Today's date for the payload (default: in the project's "
            "time zone); for tests and replays.",
        )

    @extend_schema(
        operation_id="injection_payload",
        parameters=[InjectionInput],
        responses={
            (200, "application/json"): InjectionOutputSerializer,
            (200, "text/plain"): OpenApiTypes.STR,
            (304, "application/json"): OpenApiResponse(
                description="Not modified (If-None-Match matched the ETag); no body."
            ),
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        """The first-turn / after-compaction payload of a profile (mewcode, omp, meow or the
        budgeted default). Byte-identical for identical bank state, with a strong ETag."""
        access = project_access(slug=slug, actor=actor_of(request))
        params = self.InjectionInput(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        session = own_session(access=access, ref=data.get("session_id"))
        if data["format"] == "text":
            render, content_type = _text, "text/plain; charset=utf-8"
        else:
            render, content_type = _json, "application/json"
        payload, body = injection.cached_payload(
            access=access,
            profile=injection.Profile(data["profile"]),
            today=data.get("date"),
            budget_tokens=data.get("budget_tokens"),
            render=render,
            variant=data["format"],
        )
        etag = etag_of(body)
        response: HttpResponse
        if etag_matches(request.headers.get("If-None-Match"), etag):
            response = HttpResponseNotModified()
        else:
            if session is not None:
                services.recall_payload_mark_injected(
                    session=session, memory_pks=payload.memory_pks
                )
            response = HttpResponse(body, content_type=content_type)
        response["ETag"] = etag
        # Per caller (user memories, instructions): private, and revalidated every time.
        response["Cache-Control"] = "private, no-cache"
        response["Vary"] = "Authorization, Cookie"
        return response
