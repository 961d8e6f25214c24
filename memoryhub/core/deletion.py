"""Set-based cascading deletes, for deleting what hangs off one row (a whole project).

Django's deletion collector loads every row it deletes and cascades with lists of their ids:
for a project of 100,000 memories that is 100k objects in a web worker and a statement past
PostgreSQL's 65,535-parameter limit (measured: bench/project_delete.py). This follows the same
relations — every foreign key's on_delete, hidden ones included — but deletes each table's
rows with one statement joined to the root, children before parents; SET_NULL references are
cleared the same way. No signals are sent: nothing here listens to deletions.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import models

# Deeper than any chain of foreign keys in the schema: a cascade cycle would stop here.
MAX_DEPTH = 8


def cascade_delete(model: type[models.Model], **lookup: Any) -> dict[str, int]:
    """Delete the rows of `model` matching the one `lookup` and everything their on_delete
    rules remove with them; rows deleted per model label."""
    ((path, value),) = lookup.items()
    counts: Counter[str] = Counter()
    _delete(model, path, value, counts, depth=0)
    return dict(counts)


def _relations(model: type[models.Model]) -> list[Any]:
    """Foreign keys (and one-to-ones) pointing at `model`; those from tables nothing points at
    first, so a table reachable both directly and through a parent is deleted by its cheaper
    direct path (the later path then finds nothing)."""
    relations = [
        f
        for f in model._meta.get_fields(include_hidden=True)
        if (f.one_to_many or f.one_to_one) and f.auto_created and not f.concrete
    ]
    return sorted(relations, key=lambda r: bool(_pointing_at(r.related_model)))


def _pointing_at(model: type[models.Model]) -> bool:
    return any(
        (f.one_to_many or f.one_to_one) and f.auto_created and not f.concrete
        for f in model._meta.get_fields(include_hidden=True)
    )


def _delete(
    model: type[models.Model], path: str, value: Any, counts: Counter[str], depth: int
) -> None:
    if depth > MAX_DEPTH:
        raise RuntimeError(f"cascade from {model._meta.label} is deeper than {MAX_DEPTH}")
    for relation in _relations(model):
        child, field = relation.related_model, relation.field.name
        child_path = f"{field}__{path}"
        if relation.on_delete is models.CASCADE:
            _delete(child, child_path, value, counts, depth + 1)
        elif relation.on_delete is models.SET_NULL:
            child._base_manager.filter(**{child_path: value}).update(**{field: None})
        elif relation.on_delete is not models.DO_NOTHING:
            raise NotImplementedError(
                f"{child._meta.label}.{field}: on_delete {relation.on_delete.__name__}"
            )
    rows = model._base_manager.filter(**{path: value})
    # _raw_delete: one DELETE … WHERE (joined to the root) without collecting the rows, which
    # is what this module is for; what refers to them was handled above.
    counts[model._meta.label] += rows._raw_delete(rows.db)
