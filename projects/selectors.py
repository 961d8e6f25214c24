"""Reads scoped by who is asking. Every project-level API view starts with project_access()."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import QuerySet
from django.http import Http404

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core import rows
from projects.models import Project, ProjectMembership, Role


@dataclass(frozen=True)
class ProjectAccess:
    project: Project
    role: Role
    actor: Actor

    def at_least(self, role: Role) -> bool:
        return self.role.rank >= role.rank


def project_list(*, actor: Actor) -> QuerySet[Project]:
    qs = Project.objects.filter(memberships__user=actor.user)
    if actor.restricted_project_id is not None:
        qs = qs.filter(pk=actor.restricted_project_id)
    return qs.order_by("slug")


def project_access(*, slug: str, actor: Actor, min_role: Role = Role.VIEWER) -> ProjectAccess:
    """The actor's access to project `slug`.

    Raises Http404 when the actor cannot see the project at all (outsiders must not learn that
    it exists), PermissionDenied when it can see it but its role is too low.
    """
    role_value, project = _membership(slug, actor)
    if (
        role_value is None
        or project is None
        or (actor.restricted_project_id is not None and project.pk != actor.restricted_project_id)
    ):
        raise Http404("Project not found.")
    role = Role(role_value)
    if role.rank < min_role.rank:
        raise PermissionDenied(f"This action needs the {min_role} role or higher; you are {role}.")
    return ProjectAccess(project=project, role=role, actor=actor)


def _membership(slug: str, actor: Actor) -> tuple[str | None, Project | None]:
    """The actor's role in project `slug` and the project, (None, None) for a non-member.

    An API token's authentication read it in its own statement (accounts.selectors.
    token_find_usable); that answer is used once, by the request that read it, so nothing
    outlives a permission change. Otherwise: one hand-written statement (this runs on every
    request)."""
    token = actor.token
    prefetched = token.prefetched_access if token is not None else None
    if token is not None and prefetched is not None:
        token.prefetched_access = None
        if prefetched.slug == slug:
            return prefetched.role, prefetched.project
    if actor.user is None:
        return None, None
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.role, {rows.columns(Project, 'p')}"  # noqa: S608
            " FROM projects_projectmembership m"
            " JOIN projects_project p ON p.id = m.project_id"
            " WHERE p.slug = %s AND m.user_id = %s",
            [slug, actor.user.pk],
        )
        row = cursor.fetchone()
    if row is None:
        return None, None
    return row[0], rows.build(Project, row[1:])


def project_by_slug(*, slug: str) -> Project | None:
    """The project named `slug`, for operators' commands (they act as the system: no access
    check, so never call it with a slug from a request)."""
    return Project.objects.filter(slug=slug).first()


def project_of_member(*, user: User, slug: str) -> Project | None:
    """The project `slug` when `user` is a member of it (commands acting for a person)."""
    membership = (
        ProjectMembership.objects.select_related("project")
        .filter(user=user, project__slug=slug)
        .first()
    )
    return membership.project if membership else None


def membership_list(*, project: Project) -> QuerySet[ProjectMembership]:
    return project.memberships.select_related("user").order_by("created_at", "id")


def membership_get(*, project: Project, username: str) -> ProjectMembership:
    membership = membership_list(project=project).filter(user__username=username).first()
    if membership is None:
        raise Http404("Member not found.")
    return membership
