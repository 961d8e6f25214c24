"""Model instances from hand-written SQL, for the few statements every API request runs.

Compiling a queryset costs more CPU than PostgreSQL spends answering it (a few tenths of a
millisecond each: the token, the membership, the bank's winners). The hot read paths write
their SQL once and build the same model instances Django would (every concrete column, the
fields' own converters, e.g. JSON decoding), so the rest of the code cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Model


@cache
def _shape(
    model: type[Model], exclude: tuple[str, ...] = ()
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]:
    """(columns, attnames, positions among the concrete fields) of what is read."""
    fields = [(i, f) for i, f in enumerate(model._meta.concrete_fields) if f.attname not in exclude]
    return (
        tuple(str(f.column) for _, f in fields),
        tuple(f.attname for _, f in fields),
        tuple(i for i, _ in fields),
    )


def columns(model: type[Model], alias: str, exclude: tuple[str, ...] = ()) -> str:
    """The concrete columns of `model` (but `exclude`, attnames: left deferred), qualified by
    `alias`, in the order build() reads."""
    return ", ".join(f'{alias}."{column}"' for column in _shape(model, exclude)[0])


def width(model: type[Model], exclude: tuple[str, ...] = ()) -> int:
    return len(_shape(model, exclude)[0])


def _converters(model: type[Model]) -> dict[int, tuple[list[Callable[..., Any]], Any]]:
    out = {}
    for i, field in enumerate(model._meta.concrete_fields):
        expression = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(expression) + field.get_db_converters(connection)
        if found:
            out[i] = (found, expression)
    return out


_CONVERTERS: dict[tuple[str, type[Model]], dict[int, tuple[list[Callable[..., Any]], Any]]] = {}


def build[M: Model](model: type[M], values: Sequence[Any], exclude: tuple[str, ...] = ()) -> M:
    """An instance of `model` from a row of columns(model, …, exclude), as Django loads it
    (the excluded fields deferred)."""
    key = (connection.vendor, model)
    converters = _CONVERTERS.get(key)
    if converters is None:
        converters = _CONVERTERS[key] = _converters(model)
    _, attnames, positions = _shape(model, exclude)
    row = list(values)
    for n, i in enumerate(positions):
        found = converters.get(i)
        if found is not None:
            functions, expression = found
            for function in functions:
                row[n] = function(row[n], expression, connection)
    return model.from_db(DEFAULT_DB_ALIAS, list(attnames), row)


def int_array(values: Iterable[int]) -> str:
    """A PostgreSQL array literal of integers, to pass as one text parameter cast with
    `::bigint[]`: the client-side adapter quotes a list element by element, which for the few
    hundred ids of an injection cost a millisecond."""
    return "{" + ",".join(str(int(v)) for v in values) + "}"
