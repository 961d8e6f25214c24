"""Hindsight's tag matching, on MemoryHub's provenance: a document's tags are stored on its
session (metadata "tags"), and a memory carries the tags of the session it was learned from.

| tags_match | a memory passes when its tags …        | untagged memories |
|------------|----------------------------------------|-------------------|
| any        | share one requested tag               | included          |
| all        | include every requested tag           | included          |
| any_strict | share one requested tag               | excluded          |
| all_strict | include every requested tag           | excluded          |
| exact      | equal the requested set (empty: none) | only with no tags |
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from memoryhub.sessions.models import AgentSession
from projects.models import Project

MODES = ("any", "all", "any_strict", "all_strict", "exact")
META_KEY = "tags"


@dataclass(frozen=True)
class SessionFilter:
    """Which source sessions a memory may come from: only `only` (when not None), never
    `exclude`. A memory with no source session counts as untagged."""

    only: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()

    def allows(self, source_session: str) -> bool:
        if source_session in self.exclude:
            return False
        return self.only is None or source_session in self.only


def matches(have: Collection[str], want: Collection[str], mode: str) -> bool:
    """Whether an item with tags `have` passes a request for `want` in `mode`."""
    have_set, want_set = set(have), set(want)
    if mode == "exact":
        return have_set == want_set
    if not want_set:
        return True
    if not have_set:
        return mode in ("any", "all")
    if mode in ("any", "any_strict"):
        return bool(have_set & want_set)
    return want_set <= have_set


def session_tags(
    *, project: Project, external_ids: Collection[str] | None = None
) -> dict[str, tuple[str, ...]]:
    """external id → tags of the project's tagged sessions (only of `external_ids` if given).

    Reads the tags key alone, not whole metadata objects: a tag filter reads every tagged
    session of the project (one row per oh-my-pi session)."""
    rows = AgentSession.objects.filter(project=project, metadata__has_key=META_KEY)
    if external_ids is not None:
        rows = rows.filter(external_id__in=list(external_ids))
    result = {}
    for external_id, value in rows.values_list("external_id", f"metadata__{META_KEY}"):
        if isinstance(value, list) and value:
            result[external_id] = tuple(str(t) for t in value)
    return result


def session_filter(
    *,
    project: Project,
    tags: Iterable[str],
    mode: str,
    tagged: dict[str, tuple[str, ...]] | None = None,
) -> SessionFilter:
    """`tagged`: session_tags(project) when the caller has it already."""
    want = tuple(tags)
    if not want and mode != "exact":
        return SessionFilter()
    tagged = session_tags(project=project) if tagged is None else tagged
    passing = frozenset(e for e, have in tagged.items() if matches(have, want, mode))
    if mode in ("any", "all") or (mode == "exact" and not want):
        # Untagged memories pass: exclude the tagged sessions that do not.
        return SessionFilter(exclude=frozenset(tagged) - passing)
    return SessionFilter(only=passing)
