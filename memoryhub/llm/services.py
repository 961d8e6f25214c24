"""Writes of the call log. Only memoryhub.llm.client calls these."""

from __future__ import annotations

from memoryhub.llm.models import ERROR_MAX_CHARS, LlmCall
from projects.models import Project


def llm_call_record(
    *,
    project: Project | None,
    purpose: str,
    role: str,
    provider: str,
    model: str,
    tokens_in: int,
    tokens_out: int,
    latency_ms: int,
    outcome: LlmCall.Outcome,
    error: str = "",
) -> LlmCall:
    """Append one row to the call log.

    No transaction of its own and no on_commit deferral: outside a transaction the row commits
    at once (the normal case, since nobody should hold a database transaction open across a
    network call of up to a minute); inside a caller's transaction it commits or rolls back
    with it. Values are truncated rather than validated: a log row must never fail to land.
    """
    return LlmCall.objects.create(
        project=project,
        purpose=purpose[:64],
        role=role[:16],
        provider=provider[:16],
        model=model[:200],
        tokens_in=max(tokens_in, 0),
        tokens_out=max(tokens_out, 0),
        latency_ms=max(latency_ms, 0),
        outcome=outcome,
        error=error[:ERROR_MAX_CHARS],
    )


def llm_call_mark_invalid(*, call_id: int, error: str) -> None:
    """The call answered, but its answer failed validation (see client.complete_json)."""
    LlmCall.objects.filter(pk=call_id).update(
        outcome=LlmCall.Outcome.INVALID_OUTPUT, error=error[:ERROR_MAX_CHARS]
    )
