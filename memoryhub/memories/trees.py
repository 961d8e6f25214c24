"""Replacing a set of path-addressed files at once: the shape shared by stage 2's artifacts,
MEWCODE.md instruction trees and recall-file syncs. The callers validate everything first (all
or nothing) and say how one file is written and how the missing ones go."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class TreeWriteResult:
    """What a tree replace did, path by path (each list sorted)."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted)


def tree_replace[Stored, Value](
    *,
    stored: Mapping[str, Stored],
    wanted: Mapping[str, Value],
    put: Callable[[str, Value, Stored | None], bool],
    delete: Callable[[Sequence[Stored]], None] | None,
) -> TreeWriteResult:
    """Write every path of `wanted` in path order with put(path, value, stored or None), which
    returns whether it changed anything; with `delete`, stored paths not wanted are passed to
    it. Idempotent when `put` is: the same tree again is all unchanged."""
    result = TreeWriteResult()
    for path in sorted(wanted):
        previous = stored.get(path)
        changed = put(path, wanted[path], previous)
        if previous is None:
            result.created.append(path)
        elif changed:
            result.updated.append(path)
        else:
            result.unchanged.append(path)
    if delete is not None:
        result.deleted = sorted(set(stored) - set(wanted))
        if result.deleted:
            delete([stored[path] for path in result.deleted])
    return result
