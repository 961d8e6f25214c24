from __future__ import annotations

import hmac

from django.db.models import QuerySet

from accounts import tokens
from accounts.models import ApiToken, User


def token_find_usable(*, raw: str) -> ApiToken | None:
    """The active token matching `raw`, compared in constant time, or None."""
    if not tokens.looks_like_token(raw):
        return None
    wanted = tokens.digest(raw)
    candidates = ApiToken.objects.select_related("user").filter(prefix=tokens.prefix_of(raw))
    for token in candidates:
        if hmac.compare_digest(token.digest, wanted) and token.is_usable():
            return token
    return None


def token_list(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).select_related("project").order_by("-created_at")


def token_get(*, user: User, public_id: str) -> ApiToken | None:
    return token_list(user=user).filter(public_id=public_id).first()


def user_get(*, username: str, active_only: bool = False) -> User | None:
    users = User.objects.filter(username=username)
    return (users.filter(is_active=True) if active_only else users).first()


def token_list_for_project(*, project_id: int) -> QuerySet[ApiToken]:
    """Every person's tokens limited to this project (what its owners may see and revoke)."""
    return (
        ApiToken.objects.filter(project_id=project_id)
        .select_related("project", "user")
        .order_by("-created_at")
    )
