"""Checks of project.settings, registered by the apps that own each top-level key (in their
AppConfig.ready), so a settings change is refused when it is saved — not on every later
request — without projects importing those apps. A key nobody registered is refused too: a
typo would otherwise be stored and silently do nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoryhub.core.exceptions import ApplicationError

Validator = Callable[[dict[str, Any]], object]  # raises ApplicationError
_validators: dict[str, Validator] = {}


def register(key: str, validator: Validator) -> None:
    """`validator(settings)` checks settings[key] (a section like "pipeline" or a top-level
    value like "review_required") and raises ApplicationError naming what is wrong."""
    _validators[key] = validator


def validate(settings: dict[str, Any]) -> None:
    """Raise ApplicationError (400) naming the first unknown key or invalid value."""
    if not isinstance(settings, dict):
        raise ApplicationError(
            "settings must be a JSON object.", details={"settings": ["must be an object"]}
        )
    unknown = sorted(set(settings) - set(_validators))
    if unknown:
        message = (
            f"Unknown project setting {unknown[0]!r} (known: {', '.join(sorted(_validators))})."
        )
        raise ApplicationError(message, details={"settings": [message]})
    for key, validator in sorted(_validators.items()):
        if key not in settings:
            continue
        try:
            validator(settings)
        except ApplicationError as exc:
            raise ApplicationError(exc.message, details={"settings": [exc.message]}) from None
