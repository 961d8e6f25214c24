"""Keyset cursors for the dashboard's lists, and the text of a service's refusal."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError

from memoryhub.core.exceptions import ApplicationError


def encode_cursor(value: Any, pk: int) -> str:
    raw = json.dumps([value.isoformat() if isinstance(value, datetime) else value, pk])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, field: str) -> tuple[Any, int] | None:
    """(value, pk) of an opaque cursor; None when it is malformed (the list starts over)."""
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if field.endswith("_at"):
            value = datetime.fromisoformat(value)
        elif not isinstance(value, int):
            return None
        if not isinstance(pk, int):
            return None
        return value, pk
    except (ValueError, TypeError, binascii.Error, json.JSONDecodeError):
        return None


def error_text(exc: ValidationError | ApplicationError) -> str:
    if isinstance(exc, ApplicationError):
        return exc.message
    return " ".join(exc.messages)
