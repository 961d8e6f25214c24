"""Bank id → MemoryHub project.

A bank is a project the token can reach. In order:
1. a `project:<name>` tag naming a project the token can reach (oh-my-pi's shared bank `omp`
   with its per-project tags); <name> as sent, or made a slug (lowercase, other characters
   → "-");
2. the bank id itself as a project slug;
3. the project a project-restricted token is limited to (whatever bank or tag it names).
Otherwise the bank is unknown, exactly as if nothing existed: recall answers no results,
everything else 404 "Bank not found". A tag naming a project the token cannot reach is
ignored (it stays a plain tag), so it reveals nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.http import Http404

from accounts.actors import Actor
from projects.models import Project, Role
from projects.selectors import ProjectAccess, project_access

PROJECT_TAG = "project:"
_NOT_SLUG = re.compile(r"[^a-z0-9-]+")


class BankNotFound(Http404):
    def __init__(self) -> None:
        super().__init__("Bank not found")


def _tag_slugs(tags: Iterable[str]) -> list[str]:
    slugs: list[str] = []
    for tag in tags:
        if tag.startswith(PROJECT_TAG):
            name = tag[len(PROJECT_TAG) :].strip().lower()
            slugs += [name, _NOT_SLUG.sub("-", name).strip("-")]
    return list(dict.fromkeys(s for s in slugs if s))


def candidates(*, actor: Actor, bank_id: str, tags: Iterable[str] = ()) -> list[str]:
    slugs = [*_tag_slugs(tags), bank_id]
    if actor.restricted_project_id is not None:
        restricted = Project.objects.filter(pk=actor.restricted_project_id).first()
        if restricted is not None:
            slugs.append(restricted.slug)
    return list(dict.fromkeys(slugs))


def resolve(
    *, actor: Actor, bank_id: str, tags: Iterable[str] = (), min_role: Role = Role.VIEWER
) -> ProjectAccess | None:
    """The project the request means, or None for an unknown bank. PermissionDenied when the
    token reaches the project but its role is too low (as on the REST API)."""
    for slug in candidates(actor=actor, bank_id=bank_id, tags=tags):
        try:
            return project_access(slug=slug, actor=actor, min_role=min_role)
        except Http404:
            continue
    return None


def require(
    *, actor: Actor, bank_id: str, tags: Iterable[str] = (), min_role: Role = Role.VIEWER
) -> ProjectAccess:
    access = resolve(actor=actor, bank_id=bank_id, tags=tags, min_role=min_role)
    if access is None:
        raise BankNotFound()
    return access
