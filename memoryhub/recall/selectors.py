"""Reads of recall's own data, scoped by who asks: instruction files, recall files and what a
session has already been shown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Substr
from django.http import Http404

from accounts.models import User
from memoryhub.core import rows
from memoryhub.memories import markup
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible_q
from memoryhub.recall.models import InstructionFile, RecallFile, RecallSeen, RecallSurfaced
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from projects.selectors import ProjectAccess

MAX_RECALL_CANDIDATES = 200  # MewCode's MAX_MEMORY_FILES


# --- instruction files -----------------------------------------------------------------------
def instruction_file_list(*, access: ProjectAccess) -> QuerySet[InstructionFile]:
    """The project's instruction files (not users' own files), by path."""
    return (
        InstructionFile.objects.filter(project=access.project, owner__isnull=True)
        .select_related("updated_by")
        .order_by("path")
    )


def instruction_file_get(*, access: ProjectAccess, path: str) -> InstructionFile:
    file = instruction_file_list(access=access).filter(path=path).first()
    if file is None:
        raise Http404("Instruction file not found.")
    return file


def user_instruction_file_get(*, access: ProjectAccess) -> InstructionFile:
    """The caller's own instruction file in this project."""
    file = (
        InstructionFile.objects.filter(project=access.project, owner=access.actor.user)
        .select_related("updated_by")
        .first()
        if access.actor.user is not None
        else None
    )
    if file is None:
        raise Http404("You have no instruction file in this project.")
    return file


# --- recall files ----------------------------------------------------------------------------
def _visible_recall_files(project: Project, user: User | None) -> QuerySet[RecallFile]:
    return RecallFile.objects.filter(project=project).filter(
        Q(scope=Scope.PROJECT) | Q(scope=Scope.USER, owner=user)
    )


def recall_file_list(*, access: ProjectAccess, scope: str | None = None) -> QuerySet[RecallFile]:
    """The project's recall files and the caller's own, newest first."""
    files = _visible_recall_files(access.project, access.actor.user)
    if scope:
        files = files.filter(scope=scope)
    return files.select_related("updated_by").order_by("-updated_at", "scope", "path")


def recall_file_get(*, access: ProjectAccess, scope: str, path: str) -> RecallFile:
    file = recall_file_list(access=access, scope=scope).filter(path=path).first()
    if file is None:
        raise Http404("Recall file not found.")
    return file


def recall_candidates(*, access: ProjectAccess, session: AgentSession | None) -> list[RecallFile]:
    """What the selector chooses from: the caller's user files and the project's files that
    this session has not been shown yet, newest first, at most 200; directory indexes
    (MEMORY.md) are never candidates."""
    if connection.vendor == "postgresql":
        return _recall_candidates_sql(access, session)
    files = (
        _visible_recall_files(access.project, access.actor.user)
        .exclude(path=RecallFile.INDEX_NAME)
        .exclude(path__endswith="/" + RecallFile.INDEX_NAME)
    )
    if session is not None:
        files = files.exclude(pk__in=surfaced_file_ids(session=session))
    # Up to 200 files of up to 200 KB: the selector needs only their headers.
    return list(files.defer("content").order_by("-updated_at", "pk")[:MAX_RECALL_CANDIDATES])


_NO_CONTENT = ("content",)


def since_compaction_sql(session_column: str) -> str:
    """SQL: the session's last compact boundary (−infinity without one), as
    _since_last_compaction."""
    return (
        f"COALESCE((SELECT r.created_at FROM {SessionRecord._meta.db_table} r"  # noqa: S608
        f" WHERE r.session_id = {session_column} AND r.type = 'compact_boundary'"
        " ORDER BY r.\"index\" DESC LIMIT 1), '-infinity'::timestamptz)"
    )


def _recall_candidates_sql(access: ProjectAccess, session: AgentSession | None) -> list[RecallFile]:
    """recall_candidates in one hand-written statement (it runs on every POST …/recall/)."""
    user = access.actor.user
    sql = (
        f"SELECT {rows.columns(RecallFile, 'f', _NO_CONTENT)}"  # noqa: S608
        f" FROM {RecallFile._meta.db_table} f"
        " WHERE f.project_id = %(project)s"
        " AND (f.scope = %(project_scope)s OR (f.scope = %(user_scope)s AND f.owner_id = %(user)s))"
        " AND f.path <> %(index)s AND f.path NOT LIKE %(nested_index)s"
    )
    params: dict[str, Any] = {
        "project": access.project.pk,
        "project_scope": Scope.PROJECT,
        "user_scope": Scope.USER,
        "user": user.pk if user is not None else None,
        "index": RecallFile.INDEX_NAME,
        "nested_index": "%/" + RecallFile.INDEX_NAME,
    }
    if session is not None:
        sql += (
            f" AND NOT EXISTS (SELECT 1 FROM {RecallSurfaced._meta.db_table} s"  # noqa: S608
            " WHERE s.session_id = %(session)s AND s.recall_file_id = f.id"
            f" AND s.created_at > {since_compaction_sql('%(session)s')})"
        )
        params["session"] = session.pk
    sql += " ORDER BY f.updated_at DESC, f.id LIMIT %(limit)s"
    params["limit"] = MAX_RECALL_CANDIDATES
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [rows.build(RecallFile, row, _NO_CONTENT) for row in cursor.fetchall()]


def recall_files_with_content(*, files: Sequence[RecallFile]) -> list[RecallFile]:
    """`files` again, in the same order, with their content loaded."""
    loaded = RecallFile.objects.in_bulk([f.pk for f in files])
    return [loaded[f.pk] for f in files if f.pk in loaded]


# --- what a session has seen -----------------------------------------------------------------
def _since_last_compaction(session: AgentSession) -> Coalesce:
    """When the session's last compact boundary was stored, as a subquery (the beginning of
    time without a compaction): seen-rows before it are released, as meow-memory clears its
    seen set when the session compacts."""
    boundary = (
        SessionRecord.objects.filter(session=session, type="compact_boundary")
        .order_by("-index")
        .values("created_at")[:1]
    )
    return Coalesce(Subquery(boundary), Value(datetime(1, 1, 1, tzinfo=UTC)))


def _seen_where(alias: str, reason: str | None) -> str:
    """THE "seen since the last compaction" rule over recall_recallseen rows `alias`: shown to
    session %(session)s (with reason %(reason)s when `reason` is given) since its last compact
    boundary."""
    sql = (
        f"{alias}.session_id = %(session)s"
        f" AND {alias}.created_at > {since_compaction_sql('%(session)s')}"
    )
    return sql + (f" AND {alias}.reason = %(reason)s" if reason is not None else "")


def seen_sql(*, memory_column: str, reason: str | None) -> str:
    """The rule as an SQL predicate: the memory in `memory_column` was seen. Parameters:
    {"session": pk, "reason": reason}."""
    return (
        f"EXISTS (SELECT 1 FROM {RecallSeen._meta.db_table} seen"  # noqa: S608
        f" WHERE {_seen_where('seen', reason)} AND seen.memory_id = {memory_column})"
    )


def seen_memory_ids(
    *,
    session: AgentSession,
    reason: str | None = None,
    among: Iterable[int] | None = None,
) -> set[int]:
    """Which memories (only those `among` when given) were shown to the session (injected or
    returned by a search; only `reason` when given) since its last compact boundary.
    Seen-rows are written by services.recall_seen_mark only."""
    if connection.vendor == "postgresql":  # every session search asks: one statement
        sql = (
            f"SELECT seen.memory_id FROM {RecallSeen._meta.db_table} seen"  # noqa: S608
            f" WHERE {_seen_where('seen', reason)}"
        )
        params: dict[str, Any] = {"session": session.pk, "reason": reason}
        if among is not None:
            sql += " AND seen.memory_id = ANY(%(among)s::bigint[])"
            params["among"] = rows.int_array(among)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {memory_id for (memory_id,) in cursor.fetchall()}
    seen = RecallSeen.objects.filter(session=session)
    if reason is not None:
        seen = seen.filter(reason=reason)
    if among is not None:
        seen = seen.filter(memory_id__in=list(among))
    seen = seen.filter(created_at__gt=_since_last_compaction(session))
    return set(seen.values_list("memory_id", flat=True))


def injected_memory_ids(*, session: AgentSession, among: Iterable[int]) -> set[int]:
    """Which of the memories `among` were injected into the session since its last compaction."""
    return seen_memory_ids(session=session, reason=RecallSeen.Reason.INJECTED, among=among)


def session_touched_memory_ids(*, session: AgentSession) -> QuerySet[RecallSeen, int]:
    """Every memory ever shown to the session, compactions or not (the dream's window), as a
    subquery."""
    return RecallSeen.objects.filter(session=session).values_list("memory_id", flat=True)


def surfaced_file_ids(*, session: AgentSession) -> set[int]:
    """Recall files shown to the session since its last compaction."""
    surfaced = RecallSurfaced.objects.filter(session=session)
    surfaced = surfaced.filter(created_at__gt=_since_last_compaction(session))
    return set(surfaced.values_list("recall_file_id", flat=True))


# Rows read per kind: a budget of 8,000 tokens holds a few hundred one-line entries at most.
ENTRY_FETCH_LIMIT = 200


# --- injection entries (the payloads' selection) -------------------------------------------


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class Entry:
    pk: int
    public_id: str
    kind: str
    importance: int
    updated_at: datetime
    content: str
    complete: bool  # False: longer than what was read, so it cannot fit anyway

    @property
    def priority_key(self) -> tuple[int, int, int]:
        """importance desc, updated_at desc, id desc: the database's order, exactly."""
        return (-self.importance, *self.recency_key)

    @property
    def recency_key(self) -> tuple[int, int]:
        micros = (self.updated_at - _EPOCH) // timedelta(microseconds=1)
        return (-micros, -self.pk)


def injection_entries(
    access: ProjectAccess,
    kinds: Sequence[str],
    *,
    max_chars: int,
    min_importance: int | None = None,
    newest_first: bool = False,
    limit: int = ENTRY_FETCH_LIMIT,
) -> list[Entry]:
    """The caller's active memories of `kinds`, best first, at most `limit` per kind, each
    text once.

    One indexed query per kind (each walks (project, status, kind, …) in order and stops at
    `limit`), merged here; contents are read up to `max_chars` + 1 characters only.
    """
    order = ("-updated_at", "-id") if newest_first else ("-importance", "-updated_at", "-id")
    entries: list[Entry] = []
    for kind in kinds:
        qs = Memory.objects.filter(
            project=access.project, status=Memory.Status.ACTIVE, kind=kind
        ).filter(memory_visible_q(user=access.actor.user))
        if min_importance is not None:
            qs = qs.filter(importance__gte=min_importance)
        rows = (
            qs.order_by(*order)
            .annotate(snippet=Substr("content", 1, max_chars + 1))
            .values_list("pk", "public_id", "kind", "importance", "updated_at", "snippet")[:limit]
        )
        entries.extend(
            Entry(
                pk=pk,
                public_id=str(public_id),
                kind=kind_,
                importance=importance,
                updated_at=updated_at,
                content=snippet,
                complete=len(snippet) <= max_chars,
            )
            for pk, public_id, kind_, importance, updated_at, snippet in (
                # Length-preserving, so `complete` and every budget stay exact.
                (*row[:5], markup.neutralize(row[5]))
                for row in rows
            )
        )
    entries.sort(key=(lambda e: e.recency_key) if newest_first else (lambda e: e.priority_key))
    # The same text written twice (two agents, a repeated POST) takes the budget once: the
    # first in order stands for the others.
    seen: set[str] = set()
    unique = []
    for entry in entries:
        if entry.content not in seen:
            seen.add(entry.content)
            unique.append(entry)
    return unique
