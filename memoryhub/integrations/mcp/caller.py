"""Who calls the MCP server, and which project a call acts on.

A caller is a MemoryHub token's Actor plus the project the connection is pinned to: the one in
the URL (/mcp/p/<slug>/), the stdio server's --project, or the project a restricted token is
limited to. A call's `project` argument names another project (an unrestricted token's way to
work in several); every call still goes through project_access, so a token never reaches a
project REST would refuse it, and a project it cannot see answers exactly like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied

from accounts import selectors as token_selectors
from accounts import services as token_services
from accounts.actors import Actor
from memoryhub.core.exceptions import ApplicationError
from memoryhub.recall.language import Language
from projects.models import Role
from projects.selectors import ProjectAccess, project_access, project_list

READ_ONLY_MESSAGE = "This token is read-only."
PROJECTS_NAMED = 50


@dataclass(frozen=True)
class Caller:
    actor: Actor
    project: str | None = None  # the slug the connection is pinned to, if any
    # The language the request asked for (HTTP Accept-Language), if any: it words the
    # answers' fixed text; without it they follow the memories' (memoryhub.recall.language).
    language: Language | None = None


class NoProject(ApplicationError):
    """A call that needs a project, from a connection that names none."""


def authenticate(raw: str) -> Actor | None:
    """The Actor of a usable token (raw or after "Bearer "), as the REST API's authentication
    finds it; None for a missing, unknown, expired or revoked token or an inactive user."""
    scheme, _, rest = raw.strip().partition(" ")
    value = rest.strip() if scheme.lower() == "bearer" else raw.strip()
    token = token_selectors.token_find_usable(raw=value) if value else None
    if token is None or not token.user.is_active:
        return None
    token_services.token_touch(token=token)
    return Actor(user=token.user, token=token)


def pinned_project(actor: Actor, slug: str | None) -> str | None:
    """The project a connection acts on by default: `slug` from the URL or command line
    (Http404 unless the actor may see it), else the project a restricted token is limited to."""
    if slug:
        return project_access(slug=slug, actor=actor).project.slug
    if actor.token is not None and actor.token.project_id is not None:
        return project_list(actor=actor).values_list("slug", flat=True).first()
    return None


def access_for(
    caller: Caller, project: str | None, *, role: Role = Role.VIEWER, write: bool = False
) -> ProjectAccess:
    """The caller's access to the project a call names (or its connection's project).

    write: the call changes something, which a read-only token may not do (the REST API's
    permission class refuses the same tokens every non-GET request).
    """
    if write and caller.actor.read_only:
        raise PermissionDenied(READ_ONLY_MESSAGE)
    slug = (project or "").strip() or caller.project
    if not slug:
        slugs = list(
            project_list(actor=caller.actor).values_list("slug", flat=True)[:PROJECTS_NAMED]
        )
        choices = ", ".join(slugs) if slugs else "none yet"
        raise NoProject(
            "Name the project: pass `project` (your projects: "
            f"{choices}), or connect to /mcp/p/<project>/ or run mcp_stdio with --project."
        )
    return project_access(slug=slug, actor=caller.actor, min_role=role)
