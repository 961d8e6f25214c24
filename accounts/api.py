"""REST API of the caller's identity and agent tokens: /api/v1/me/, /api/v1/tokens/…"""

from __future__ import annotations

from uuid import UUID

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from accounts.actors import actor_of, user_of
from memoryhub.core.api import Pagination, paginated_response
from projects.selectors import project_access


class TokenOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    name = serializers.CharField()
    prefix = serializers.CharField()
    project = serializers.CharField(source="project.slug", allow_null=True, default=None)
    read_only = serializers.BooleanField()  # type: ignore[assignment]
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class TokenCreatedSerializer(TokenOutputSerializer):
    token = serializers.CharField(help_text="The secret. Shown only in this response.")


class MeApi(APIView):
    class MeOutput(serializers.Serializer):
        username = serializers.CharField(source="user.username")
        token = TokenOutputSerializer(allow_null=True)

    @extend_schema(operation_id="me", responses=MeOutput)
    def get(self, request: Request) -> Response:
        actor = actor_of(request)
        return Response(self.MeOutput(actor).data)


class TokenCollectionApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    class TokenCreateInput(serializers.Serializer):
        name = serializers.CharField(max_length=100)
        project = serializers.CharField(
            max_length=64,
            required=False,
            allow_null=True,
            help_text="Slug of the only project this token may use.",
        )
        read_only = serializers.BooleanField(default=False)  # type: ignore[assignment]
        expires_at = serializers.DateTimeField(required=False, allow_null=True)

    @extend_schema(operation_id="tokens_list", responses=TokenOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        tokens = selectors.token_list_for_actor(actor=actor_of(request))
        return paginated_response(request, self, tokens, TokenOutputSerializer)

    @extend_schema(
        operation_id="tokens_create",
        request=TokenCreateInput,
        responses={201: TokenCreatedSerializer},
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        payload = self.TokenCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        project = (
            project_access(slug=data["project"], actor=actor).project
            if data.get("project")
            else None
        )
        token, raw = services.token_create(
            user=user_of(request),
            name=data["name"],
            actor=actor,
            project=project,
            read_only=data["read_only"],
            expires_at=data.get("expires_at"),
        )
        body = TokenOutputSerializer(token).data | {"token": raw}
        return Response(body, status=status.HTTP_201_CREATED)


class TokenRevokeApi(APIView):
    @extend_schema(operation_id="tokens_revoke", request=None, responses=TokenOutputSerializer)
    def post(self, request: Request, token_id: UUID) -> Response:
        actor = actor_of(request)
        # One answer for a token that does not exist and one this actor may not see, so a
        # project-restricted token cannot learn of the person's other tokens.
        token = selectors.token_get_for_actor(actor=actor, public_id=str(token_id))
        if token is None:
            raise Http404("Token not found.")
        token = services.token_revoke(token=token, actor=actor)
        return Response(TokenOutputSerializer(token).data)
