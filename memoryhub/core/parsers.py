"""Request body parsers: JSON and NDJSON that answer 400, never 500, to hostile input.

A body of 100,000 `[` or metadata nested 2,000 levels deep makes Python's json raise
RecursionError (not ValueError, so DRF's parser lets it through as a 500), and values nested
just below that limit exhaust the stack later, in serializers, redaction or the database
driver. Every JSON value the API accepts is therefore at most MAX_JSON_DEPTH levels deep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.utils.json import strict_constant

from memoryhub.core.streams import iter_lines

# Agent transcripts nest about ten levels (records → content blocks → tool results → …).
MAX_JSON_DEPTH = 100


def check_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise ValueError when `value` nests more than `limit` arrays/objects (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise ValueError(f"nested more than {limit} levels deep")
        stack.extend((child, depth + 1) for child in children)


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """json.loads that raises ValueError (never RecursionError) and enforces the depth limit."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    check_depth(value)
    return value


class JsonParser(JSONParser):
    """DRF's JSON parser, with the depth limit."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
            check_depth(data)
        except RecursionError:
            depth = f"nested more than {MAX_JSON_DEPTH} levels deep"
            raise ParseError(f"JSON parse error - {depth}") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        return data


class NdjsonParser(BaseParser):
    """application/x-ndjson: one JSON value per line → a list (blank lines ignored)."""

    media_type = "application/x-ndjson"

    def parse(  # type: ignore[override]  # DRF accepts any parsed value, lists included
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> list[Any]:
        items = []
        # Not `for raw in stream`: that reads with readline, which sees nothing under ASGI.
        for number, raw in enumerate(iter_lines(stream), 1):
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                items.append(loads(line, parse_constant=strict_constant))  # no NaN/Infinity
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                raise ParseError(f"Line {number} is not valid JSON: {exc}") from None
        return items
