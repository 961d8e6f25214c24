"""Checks of project.settings sections, registered by the apps that own them (in their
AppConfig.ready), so a settings change is refused when it is saved — not on every later
request — without projects importing those apps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoryhub.core.exceptions import ApplicationError

Validator = Callable[[dict[str, Any]], object]  # raises ApplicationError
_validators: dict[str, Validator] = {}


def register(section: str, validator: Validator) -> None:
    _validators[section] = validator


def validate(settings: dict[str, Any]) -> None:
    """Raise ApplicationError (400) naming the first invalid section."""
    for section, validator in sorted(_validators.items()):
        if section not in settings:
            continue
        try:
            validator(settings)
        except ApplicationError as exc:
            raise ApplicationError(exc.message, details={"settings": [exc.message]}) from None
