from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


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
        for number, raw in enumerate(stream, 1):
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ParseError(f"Line {number} is not valid JSON: {exc}") from None
        return items
