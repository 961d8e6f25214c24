from __future__ import annotations

import hmac
from dataclasses import dataclass

from django.db import connection
from django.db.models import QuerySet

from accounts import tokens
from accounts.actors import Actor
from accounts.models import ApiToken, User
from memoryhub.core import rows
from projects.models import Project


@dataclass(frozen=True)
class PrefetchedAccess:
    """The token owner's membership of one project, read with the token (single use: see
    projects.selectors.project_access)."""

    slug: str
    role: str | None  # None: not a member (or no such project)
    project: Project | None


def _token_sql() -> str:
    return (
        f"SELECT {rows.columns(ApiToken, 't')}, {rows.columns(User, 'u')},"  # noqa: S608
        f" m.role, {rows.columns(Project, 'p')}"
        " FROM accounts_apitoken t JOIN accounts_user u ON u.id = t.user_id"
        " LEFT JOIN projects_project p ON p.slug = %s"
        " LEFT JOIN projects_projectmembership m ON m.project_id = p.id AND m.user_id = t.user_id"
        " WHERE t.prefix = %s"
    )


def token_find_usable(*, raw: str, project_slug: str | None = None) -> ApiToken | None:
    """The active token matching `raw`, compared in constant time, or None.

    With `project_slug` (the request's project), the same statement reads the owner's
    membership of that project and leaves it on the token for the request's one
    project_access: one statement per request instead of three compiled querysets."""
    if not tokens.looks_like_token(raw):
        return None
    wanted = tokens.digest(raw)
    with connection.cursor() as cursor:
        cursor.execute(_token_sql(), [project_slug, tokens.prefix_of(raw)])
        found = cursor.fetchall()
    n_token, n_user = rows.width(ApiToken), rows.width(User)
    for row in found:
        token = rows.build(ApiToken, row[:n_token])
        if not (hmac.compare_digest(token.digest, wanted) and token.is_usable()):
            continue
        token.user = rows.build(User, row[n_token : n_token + n_user])
        if project_slug is not None:
            role = row[n_token + n_user]
            project = rows.build(Project, row[n_token + n_user + 1 :]) if role else None
            token.prefetched_access = PrefetchedAccess(project_slug, role, project)
        return token
    return None


def token_list(*, user: User) -> QuerySet[ApiToken]:
    """Every token of `user`: what the person, signed in, manages (the dashboard's view)."""
    return token_list_for_actor(actor=Actor(user=user))


def token_get(*, user: User, public_id: str) -> ApiToken | None:
    return token_get_for_actor(actor=Actor(user=user), public_id=public_id)


def token_list_for_actor(*, actor: Actor) -> QuerySet[ApiToken]:
    """The tokens `actor` may see and revoke: the one rule for listing and looking tokens up.

    The person (browser session) and their unrestricted tokens: all of the person's tokens.
    A token limited to a project is one agent's credential there, not the person's: it sees
    only itself and the tokens minted with it, at any depth (never its parent, a sibling or
    another project's token), so a leaked agent token cannot map or revoke the person's other
    credentials. Callers answer 404 for the rest, as for a token that does not exist."""
    if actor.user is None:
        return ApiToken.objects.none()
    tokens = ApiToken.objects.filter(user=actor.user)
    current = actor.token
    if current is not None and (project_id := current.project_id) is not None:
        tokens = tokens.filter(project_id=project_id, pk__in=_lineage(current, project_id))
    return tokens.select_related("project").order_by("-created_at")


def token_get_for_actor(*, actor: Actor, public_id: str) -> ApiToken | None:
    return token_list_for_actor(actor=actor).filter(public_id=public_id).first()


def _lineage(token: ApiToken, project_id: int) -> set[int]:
    """The pks of `token` (limited to `project_id`) and every token minted with it, at any depth.

    Minted tokens keep their parent's owner and project (services.token_create), so walking
    that owner's tokens on that project finds them all: a handful of rows, one statement."""
    edges = ApiToken.objects.filter(
        user_id=token.user_id, project_id=project_id, parent__isnull=False
    ).values_list("pk", "parent_id")
    children: dict[int, list[int]] = {}
    for pk, parent_id in edges:
        children.setdefault(parent_id, []).append(pk)
    found, frontier = {token.pk}, [token.pk]
    while frontier:
        below = [pk for parent in frontier for pk in children.get(parent, ()) if pk not in found]
        found.update(below)
        frontier = below
    return found


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
