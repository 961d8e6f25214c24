"""Reads of the memory bank, always through the caller's ProjectAccess."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from accounts.models import User
from memoryhub.memories.kinds import DEFAULT_SCOPE, Scope
from memoryhub.memories.models import Memory, MemoryEvent
from projects.models import Project, Role
from projects.selectors import ProjectAccess

DEFAULT_STATUSES = (Memory.Status.PROPOSED, Memory.Status.ACTIVE, Memory.Status.STALE)


@dataclass(frozen=True)
class MemoryFilters:
    kinds: tuple[str, ...] = ()
    scope: str | None = None
    statuses: tuple[str, ...] = DEFAULT_STATUSES
    subcategory: str | None = None
    q: str = ""
    importance: int | None = None
    importance_min: int | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None


def memory_visible_q(*, user: User | None, prefix: str = "") -> Q:
    """THE visibility rule of the bank, as a Q: project-scope memories, plus `user`'s own
    user-scope memories (none when `user` is None: what every member may see).

    `prefix` ("memory__") applies it through a relation, e.g. to index postings. Every read
    path filters memories by scope or owner through this function only
    (tests/memories/test_one_rule.py fails on a second spelling).
    """
    project_scope = Q(**{f"{prefix}scope": Scope.PROJECT})
    if user is None:
        return project_scope
    return project_scope | Q(**{f"{prefix}scope": Scope.USER, f"{prefix}owner": user})


def memory_visible_mask[A](*, user: User | None, project_scope: A, owner: A) -> A:
    """The same rule over columns (numpy arrays of an in-memory copy of the bank: whether each
    memory is project-scope, and its owner's id)."""
    if user is None:
        return project_scope
    return project_scope | (owner == user.pk)  # type: ignore[operator]


def memory_scope_q(*, scope: str, prefix: str = "") -> Q:
    """Narrow a visible set to one scope (a filter of the list and search endpoints)."""
    return Q(**{f"{prefix}scope": scope})


def memory_same_level_q(*, memory: Memory, prefix: str = "") -> Q:
    """Memories at `memory`'s level: same kind, scope and owner (merge and contradiction
    candidates never cross from one person's memories to another's or to the project's)."""
    return Q(
        **{
            f"{prefix}kind": memory.kind,
            f"{prefix}scope": memory.scope,
            f"{prefix}owner": memory.owner,
        }
    )


def memory_visible(*, access: ProjectAccess) -> QuerySet[Memory]:
    """Project-scope memories, plus the caller's own user-scope memories."""
    return Memory.objects.filter(project=access.project).filter(
        memory_visible_q(user=access.actor.user)
    )


def memory_review_queue(*, access: ProjectAccess) -> QuerySet[Memory]:
    """Proposed memories the caller may review: a maintainer's are the project's plus their
    own private ones; any other member's, only their own private ones (which nobody else can
    see, so nobody else could review them). Another person's private proposals never appear."""
    queue = memory_visible(access=access).filter(status=Memory.Status.PROPOSED)
    if not access.at_least(Role.MAINTAINER):
        queue = queue.filter(memory_scope_q(scope=Scope.USER))
    return queue


def memory_review_check(*, access: ProjectAccess, memory: Memory) -> None:
    """PermissionDenied unless the caller may approve or reject `memory`, which they can see
    (memory_get): maintainers review the project's proposals, every member their own private
    ones. Whether it is still proposed is the service's to say."""
    if access.at_least(Role.MAINTAINER):
        return
    if not (access.at_least(Role.MEMBER) and memory.scope == Scope.USER):
        raise PermissionDenied(
            f"Reviewing needs the {Role.MAINTAINER} role or higher (or a private memory of your "
            f"own); you are {access.role}."
        )


def memory_project_level(*, project: Project) -> QuerySet[Memory]:
    """What every member of `project` may see: its project-scope memories. Shared outputs
    (consolidation artifacts, bank-wide statistics for the pipeline) are built from these."""
    return Memory.objects.filter(project=project).filter(memory_visible_q(user=None))


def memory_list(*, access: ProjectAccess, filters: MemoryFilters) -> QuerySet[Memory]:
    qs = memory_visible(access=access).filter(status__in=filters.statuses)
    if filters.kinds:
        qs = qs.filter(kind__in=filters.kinds)
    if filters.scope:
        qs = qs.filter(memory_scope_q(scope=filters.scope))
    if filters.subcategory:
        qs = qs.filter(subcategory=filters.subcategory)
    if filters.q:
        qs = qs.filter(Q(title__icontains=filters.q) | Q(content__icontains=filters.q))
    if filters.importance is not None:
        qs = qs.filter(importance=filters.importance)
    if filters.importance_min is not None:
        qs = qs.filter(importance__gte=filters.importance_min)
    for field_name, lookup in (
        ("created_after", "created_at__gte"),
        ("created_before", "created_at__lt"),
        ("updated_after", "updated_at__gte"),
        ("updated_before", "updated_at__lt"),
    ):
        value = getattr(filters, field_name)
        if value is not None:
            qs = qs.filter(**{lookup: value})
    return qs.select_related(
        "project", "owner", "superseded_by", "created_by_user", "created_by_token"
    ).order_by("-updated_at", "-id")


def memory_get(*, access: ProjectAccess, public_id: str) -> Memory:
    memory = (
        memory_visible(access=access)
        .select_related("project", "owner", "superseded_by", "created_by_user", "created_by_token")
        .filter(public_id=public_id)
        .first()
    )
    if memory is None:
        raise Http404("Memory not found.")
    return memory


def memory_events(*, memory: Memory) -> QuerySet[MemoryEvent]:
    return memory.events.select_related("actor_user").order_by("created_at", "id")


# Actor labels of the bank's own processes (accounts.actors.Actor.for_system): a change by
# anyone else is a person's decision.
SYSTEM_ACTORS = ("pipeline", "dream")


def memory_decided_by_people(*, project: Project) -> QuerySet[MemoryEvent, int]:
    """Ids of the project's memories that a person (or their agent) changed after they were
    written: archived, marked stale, restored, edited, approved…"""
    events = MemoryEvent.objects.filter(project=project).exclude(verb="created")
    for label in SYSTEM_ACTORS:
        events = events.exclude(actor_label=label).exclude(actor_label__startswith=f"{label}:")
    return events.values_list("memory_id", flat=True).distinct()


def memory_extracted_before(
    *,
    project: Project,
    kind: str,
    source_session: str,
    record_start: int | None,
    record_end: int | None,
    content_hash: str,
    owner: User | None,
) -> Memory | None:
    """The memory a re-extraction replaces, of the same kind: the pipeline's own extraction
    from this session and record range (the session is its author's, so this is theirs, even
    after they shared it with the project), or, when it was archived or marked stale (which
    memory_remember does not merge into), the same content of the same scope and owner
    (`owner` is the session's author). Never another person's memory, nor one somebody wrote
    citing that range. None when the extraction is new."""
    same_source = Q(
        source_session=source_session,
        source_record_start=record_start,
        source_record_end=record_end,
        created_via__in=(Memory.Via.PIPELINE, Memory.Via.DREAM),
    )
    scope = DEFAULT_SCOPE.get(kind, Scope.PROJECT)
    withdrawn = Q(
        content_hash=content_hash,
        status__in=(Memory.Status.ARCHIVED, Memory.Status.STALE),
        scope=scope,
        owner=owner if scope == Scope.USER else None,
    )
    query = withdrawn | same_source if source_session else withdrawn
    return (
        Memory.objects.filter(project=project, kind=kind)
        .filter(query)
        .order_by("created_at", "pk")
        .first()
    )
