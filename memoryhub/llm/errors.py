"""What an LLM call can fail with. Every error subclasses LlmError, so callers that fall back
to a simpler behaviour catch that one type; those that retry later catch LlmUnavailable."""

from __future__ import annotations


class LlmError(Exception):
    """The call failed; `call_id` is its row in the call log (None if it never got one)."""

    outcome = "error"

    def __init__(self, message: str, *, call_id: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.call_id = call_id


class LlmMisconfigured(LlmError):
    """The project's settings["llm"] overrides are invalid; nothing was sent."""


class LlmBudgetExhausted(LlmError):
    """The project spent its daily token budget; nothing was sent until 00:00 UTC."""

    outcome = "budget_exhausted"


class LlmUnavailable(LlmError):
    """The provider could not answer after the SDK's retries: connection error, timeout, 429,
    5xx, or a rejected API key. Worth retrying later."""


class LlmTimeout(LlmUnavailable):
    """The provider did not answer within the timeout, on every attempt."""

    outcome = "timeout"


class LlmInvalidOutput(LlmError):
    """The answer was not valid JSON of the expected shape, even after one repair request."""

    outcome = "invalid_output"
