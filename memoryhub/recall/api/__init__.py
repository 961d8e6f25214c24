"""Recall's REST API, one module per capability (search, recall, instructions, injection…)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404

from memoryhub.recall.models import normalize_path


def stored_path(path: str, *, missing: str) -> str:
    """The stored form of a file path from the URL; a path that cannot be stored is not found
    (`missing`: the 404's message)."""
    try:
        return normalize_path(path)
    except ValidationError:
        raise Http404(missing) from None
