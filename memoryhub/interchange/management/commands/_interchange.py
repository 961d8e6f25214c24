from __future__ import annotations

from django.core.management.base import CommandError

from accounts.actors import Actor
from accounts.models import User
from projects.models import Role
from projects.selectors import ProjectAccess, project_access


def access_for(slug: str, username: str, role: Role) -> ProjectAccess:
    """The named person's access: a command acts as someone, with that person's role and
    user-scope memories."""
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"No user {username!r}.")
    try:
        return project_access(slug=slug, actor=Actor(user=user), min_role=role)
    except Exception as exc:  # Http404 / PermissionDenied → a plain command error
        raise CommandError(f"{username} cannot use project {slug!r}: {exc}") from None
