from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from accounts import tokens
from accounts.actors import Actor
from accounts.models import ApiToken, User
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.services import audit_record

if TYPE_CHECKING:
    from projects.models import Project

# last_used_at is advisory; writing it on every request would turn reads into writes.
LAST_USED_RESOLUTION = timedelta(seconds=60)


@transaction.atomic
def user_get_or_create(*, username: str, actor: Actor) -> tuple[User, bool, str | None]:
    """Return (user, created, initial_password). The password is only returned on creation."""
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user, False, None
    password = secrets.token_urlsafe(12)
    user = User(username=username)
    user.set_password(password)
    user.full_clean()
    user.save()
    audit_record(
        actor=actor,
        verb="user.created",
        target_type="user",
        target_id=user.public_id,
        after={"username": username},
    )
    return user, True, password


@transaction.atomic
def token_create(
    *,
    user: User,
    name: str,
    actor: Actor,
    project: Project | None = None,
    read_only: bool = False,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Create a token for `user` and return it with the plain value, which is never stored.

    A token minted with a token never outlives it nor gains rights it lacks: its expiry is the
    parent's at the latest (the parent's when none is asked for), it is read-only when the
    parent is, restricted to the parent's project when the parent is, and revoked with it.
    """
    parent = actor.token
    if expires_at is not None and expires_at <= timezone.now():
        raise ApplicationError(
            "expires_at must be in the future.", details={"expires_at": ["must be in the future"]}
        )
    if parent is not None:
        _check_within_parent(parent, project=project, expires_at=expires_at)
        expires_at = expires_at or parent.expires_at
        read_only = read_only or parent.read_only
    raw = tokens.generate(read_only=read_only)
    token = ApiToken(
        user=user,
        name=name,
        prefix=tokens.prefix_of(raw),
        digest=tokens.digest(raw),
        project=project,
        read_only=read_only,
        expires_at=expires_at,
        parent=parent,
    )
    token.full_clean()
    token.save()
    audit_record(
        actor=actor,
        project=project,
        verb="token.created",
        target_type="token",
        target_id=token.public_id,
        after={
            "name": name,
            "prefix": token.prefix,
            "read_only": read_only,
            "project": project.slug if project else None,
            "expires_at": expires_at.isoformat() if expires_at else None,
            "parent": parent.prefix if parent else None,
        },
    )
    return token, raw


def _check_within_parent(
    parent: ApiToken, *, project: Project | None, expires_at: datetime | None
) -> None:
    if parent.project_id is not None and (project is None or project.pk != parent.project_id):
        raise ApplicationError(
            "A project-restricted token can only create tokens for its own project.",
            details={"project": ["required to match the current token's project"]},
        )
    if parent.expires_at is not None and expires_at is not None and expires_at > parent.expires_at:
        raise ApplicationError(
            "A token cannot outlive the token that creates it.",
            details={"expires_at": [f"must be at or before {parent.expires_at.isoformat()}"]},
        )


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: Actor) -> ApiToken:
    """Revoke `token` and every token minted with it, at any depth.

    Idempotent: revoking a revoked token keeps the first revocation time.
    """
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor,
            verb="token.revoked",
            target_type="token",
            target_id=token.public_id,
            project=token.project,
            after={"prefix": token.prefix},
        )
    for child in token.children.filter(revoked_at__isnull=True):
        token_revoke(token=child, actor=actor)
    return token


def token_touch(*, token: ApiToken) -> None:
    """Record use at most once a minute; a conditional UPDATE, so concurrent requests are safe."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now
