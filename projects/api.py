"""REST API of projects and memberships: /api/v1/projects/…"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors as account_selectors
from accounts.actors import actor_of, user_of
from memoryhub.core.api import Pagination, StrictInput, paginated_response
from projects import selectors, services
from projects.models import PROJECT_SETTINGS_MAX_BYTES, Role


class ProjectOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    timezone = serializers.CharField()
    settings = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ProjectCollectionApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    class ProjectCreateInput(serializers.Serializer):
        slug = serializers.CharField(max_length=64)
        name = serializers.CharField(max_length=200, required=False, allow_blank=True)
        description = serializers.CharField(max_length=5000, required=False, allow_blank=True)
        timezone = serializers.CharField(max_length=64, required=False)
        settings = serializers.DictField(required=False)

    @extend_schema(operation_id="projects_list", responses=ProjectOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        projects = selectors.project_list(actor=actor_of(request))
        return paginated_response(request, self, projects, ProjectOutputSerializer)

    @extend_schema(
        operation_id="projects_create",
        request=ProjectCreateInput,
        responses={201: ProjectOutputSerializer},
    )
    def post(self, request: Request) -> Response:
        actor = actor_of(request)
        if actor.restricted_project_id is not None:
            raise PermissionDenied("A project-restricted token cannot create projects.")
        payload = self.ProjectCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        project = services.project_create(
            owner=user_of(request), actor=actor, **payload.validated_data
        )
        return Response(ProjectOutputSerializer(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailApi(APIView):
    class ProjectUpdateInput(StrictInput):
        changed_elsewhere = {"slug": "A project's slug never changes (its URLs and tokens use it)."}
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(max_length=5000, required=False, allow_blank=True)
        timezone = serializers.CharField(max_length=64, required=False)
        settings = serializers.DictField(
            required=False,
            help_text=(
                "The sections to set, each replaced whole; a section given as null is removed"
                " and sections not named stay. The stored object is at most"
                f" {PROJECT_SETTINGS_MAX_BYTES} bytes."
            ),
        )

    @extend_schema(operation_id="projects_get", responses=ProjectOutputSerializer)
    def get(self, request: Request, slug: str) -> Response:
        access = selectors.project_access(slug=slug, actor=actor_of(request))
        return Response(ProjectOutputSerializer(access.project).data)

    @extend_schema(
        operation_id="projects_update",
        request=ProjectUpdateInput,
        responses=ProjectOutputSerializer,
    )
    def patch(self, request: Request, slug: str) -> Response:
        access = selectors.project_access(
            slug=slug, actor=actor_of(request), min_role=Role.MAINTAINER
        )
        payload = self.ProjectUpdateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        project = services.project_update(
            access=access, changes=dict(payload.validated_data), merge_settings=True
        )
        return Response(ProjectOutputSerializer(project).data)

    class ProjectDeleteInput(serializers.Serializer):
        confirm = serializers.CharField(help_text="The project's slug, to confirm.")

    @extend_schema(
        operation_id="projects_delete",
        parameters=[ProjectDeleteInput],
        responses=inline_serializer(
            "ProjectDeleted", {"deleted": serializers.DictField(child=serializers.IntegerField())}
        ),
    )
    def delete(self, request: Request, slug: str) -> Response:
        """Owner only: delete the project and everything in it, for good (`?confirm=<slug>`).
        Download a backup first if it may be wanted again."""
        access = selectors.project_access(slug=slug, actor=actor_of(request), min_role=Role.OWNER)
        payload = self.ProjectDeleteInput(data=request.query_params)
        payload.is_valid(raise_exception=True)
        deleted = services.project_delete(access=access, confirm=payload.validated_data["confirm"])
        return Response({"deleted": deleted})


class MemberOutputSerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class RoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class MemberCollectionApi(APIView):
    pagination_class = Pagination  # documents the {count, next, previous, results} page

    class MemberAddInput(RoleSerializer):
        username = serializers.CharField(max_length=150)

    @extend_schema(operation_id="members_list", responses=MemberOutputSerializer(many=True))
    def get(self, request: Request, slug: str) -> Response:
        access = selectors.project_access(slug=slug, actor=actor_of(request))
        members = selectors.membership_list(project=access.project)
        return paginated_response(request, self, members, MemberOutputSerializer)

    @extend_schema(
        operation_id="members_add", request=MemberAddInput, responses={201: MemberOutputSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        access = selectors.project_access(
            slug=slug, actor=actor_of(request), min_role=Role.MAINTAINER
        )
        payload = self.MemberAddInput(data=request.data)
        payload.is_valid(raise_exception=True)
        user = account_selectors.user_get(
            username=payload.validated_data["username"], active_only=True
        )
        if user is None:
            raise serializers.ValidationError({"username": ["No active user with this name."]})
        membership = services.membership_add(
            access=access, user=user, role=Role(payload.validated_data["role"])
        )
        return Response(MemberOutputSerializer(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailApi(APIView):
    @extend_schema(
        operation_id="members_change_role", request=RoleSerializer, responses=MemberOutputSerializer
    )
    def patch(self, request: Request, slug: str, username: str) -> Response:
        access = selectors.project_access(
            slug=slug, actor=actor_of(request), min_role=Role.MAINTAINER
        )
        membership = selectors.membership_get(project=access.project, username=username)
        payload = RoleSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        membership = services.membership_change_role(
            access=access, membership=membership, role=Role(payload.validated_data["role"])
        )
        return Response(MemberOutputSerializer(membership).data)

    @extend_schema(operation_id="members_remove", request=None, responses={204: None})
    def delete(self, request: Request, slug: str, username: str) -> Response:
        access = selectors.project_access(slug=slug, actor=actor_of(request))
        membership = selectors.membership_get(project=access.project, username=username)
        services.membership_remove(access=access, membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)
