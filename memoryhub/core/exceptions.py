"""The domain's refusal vocabulary; the API error handler maps each to the JSON envelope."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A request that is well-formed but refused by a business rule (HTTP 400 by default)."""

    status_code = 400
    code = "invalid_request"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class Conflict(ApplicationError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(ApplicationError):
    status_code = 413
    code = "payload_too_large"
