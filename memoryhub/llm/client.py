"""The one interface to LLMs: `from memoryhub.llm import client as llm`.

    answer = llm.complete(llm.LlmRequest(purpose="compaction", messages=[...], offline=...))
    data = llm.complete_json(request, validate=parse_consolidation)

Every call, whatever its outcome, leaves one LlmCall row (see services.llm_call_record for
how that row relates to the caller's transaction: don't hold one across a call). Failures
raise a subclass of LlmError.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from memoryhub.llm import providers, selectors, services
from memoryhub.llm.config import OFFLINE, ROLES, ResolvedConfig, resolve_config
from memoryhub.llm.errors import (
    LlmBudgetExhausted,
    LlmError,
    LlmInvalidOutput,
    LlmMisconfigured,
    LlmTimeout,
    LlmUnavailable,
)
from memoryhub.llm.models import LlmCall
from projects.models import Project

__all__ = [
    "LlmBudgetExhausted",
    "LlmError",
    "LlmInvalidOutput",
    "LlmMisconfigured",
    "LlmRequest",
    "LlmResult",
    "LlmTimeout",
    "LlmUnavailable",
    "ResolvedConfig",
    "complete",
    "complete_json",
    "embed",
    "extract_json",
    "resolve_config",
]

logger = logging.getLogger(__name__)

MESSAGE_ROLES = {"system", "user", "assistant"}
# What a `validate` callable raises for an answer of the wrong shape.
INVALID = (ValueError, TypeError, KeyError)
REPAIR_PROMPT = (
    "Your previous answer could not be used: {problem}. "
    "Answer again with only the corrected JSON: no explanations, no code fences."
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)


@dataclass
class LlmRequest:
    purpose: str  # "compaction", "stage1_memories", "stage2", "recall_select", …
    messages: list[dict[str, str]]  # [{"role": "system"|"user"|"assistant", "content": str}]
    # The deterministic answer the offline provider returns, computed by the caller's domain
    # code; called only when the provider is offline.
    offline: Callable[[], str]
    role: str = "default"  # "default" | "smol" (smol falls back to default's model)
    max_tokens: int = 4096
    project: Project | None = None  # per-project overrides, call log and budget
    timeout: float | None = None  # seconds per attempt; overrides the configured timeout


@dataclass(frozen=True)
class LlmResult:
    text: str
    provider: str
    model: str
    tokens_in: int
    tokens_out: int
    call_id: int


def _check(request: LlmRequest) -> None:
    """Programming errors in the request: ValueError, and no call-log row."""
    if not request.purpose or len(request.purpose) > 64:
        raise ValueError("LlmRequest.purpose must be 1-64 characters.")
    if request.role not in ROLES:
        raise ValueError(f"LlmRequest.role must be one of {', '.join(ROLES)}.")
    if not request.messages:
        raise ValueError("LlmRequest.messages must not be empty.")
    for message in request.messages:
        if message.get("role") not in MESSAGE_ROLES or not isinstance(message.get("content"), str):
            raise ValueError(f"Each message needs a role in {sorted(MESSAGE_ROLES)}, str content.")
    if request.max_tokens < 1 or (request.timeout is not None and request.timeout <= 0):
        raise ValueError("LlmRequest.max_tokens and timeout must be positive.")


def _record(
    request: LlmRequest,
    config: ResolvedConfig | None,
    outcome: LlmCall.Outcome,
    *,
    started: float | None = None,
    tokens: tuple[int, int] = (0, 0),
    error: str = "",
) -> LlmCall:
    return services.llm_call_record(
        project=request.project,
        purpose=request.purpose,
        role=request.role,
        provider=config.provider if config else "",
        model=config.model if config else "",
        tokens_in=tokens[0],
        tokens_out=tokens[1],
        latency_ms=round((time.monotonic() - started) * 1000) if started is not None else 0,
        outcome=outcome,
        error=error,
    )


def _fail(
    request: LlmRequest, config: ResolvedConfig | None, exc: LlmError, started: float | None
) -> LlmError:
    call = _record(request, config, LlmCall.Outcome(exc.outcome), started=started, error=str(exc))
    exc.call_id = call.pk
    logger.warning("LLM call %s (%s) failed: %s", call.pk, request.purpose, exc)
    return exc


def complete(request: LlmRequest) -> LlmResult:
    """Send `request` to the configured provider and return its text.

    Raises LlmMisconfigured, LlmBudgetExhausted (nothing sent), LlmUnavailable / LlmTimeout
    (after the SDK's retries) or LlmError; each leaves a call-log row. An exception raised by
    `request.offline` is recorded as an error and propagates unchanged.
    """
    _check(request)
    try:
        config = resolve_config(request.project, request.role)
    except LlmMisconfigured as exc:
        _fail(request, None, exc, None)
        raise
    if request.timeout is not None:
        config = replace(config, timeout=request.timeout)
    if request.project is not None and config.provider != OFFLINE:
        # Check-then-call: concurrent calls may overshoot the budget by what they use.
        used = selectors.llm_tokens_used_today(project=request.project)
        if selectors.over_budget(config=config, used=used):
            raise _fail(
                request,
                config,
                LlmBudgetExhausted(
                    f'Project "{request.project.slug}": daily token budget of '
                    f"{config.daily_token_budget} exhausted ({used} used today); "
                    "resets at 00:00 UTC."
                ),
                None,
            )

    started = time.monotonic()
    try:
        reply = providers.complete(
            config,
            messages=request.messages,
            max_tokens=request.max_tokens,
            offline=request.offline,
        )
    except LlmError as exc:
        _fail(request, config, exc, started)
        raise
    except Exception as exc:
        _record(request, config, LlmCall.Outcome.ERROR, started=started, error=f"{exc!r}")
        raise
    call = _record(
        request,
        config,
        LlmCall.Outcome.OK,
        started=started,
        tokens=(reply.tokens_in, reply.tokens_out),
    )
    return LlmResult(
        text=reply.text,
        provider=config.provider,
        model=config.model,
        tokens_in=reply.tokens_in,
        tokens_out=reply.tokens_out,
        call_id=call.pk,
    )


def embed(
    *, purpose: str, model: str, texts: list[str], project: Project | None
) -> list[list[float]]:
    """Vectors for `texts` from the server's OpenAI-compatible embeddings endpoint (the
    embedding re-scorer's `openai` provider), one per text, in order.

    As complete(): one call-log row per call whatever its outcome, and a project's daily token
    budget is checked first (LlmBudgetExhausted, nothing sent), so embeddings show in the
    usage page and count against the same budget. The destination and key are always the
    server's — project overrides never redirect embeddings, so every vector of a model stays
    comparable — but the budget is the project's own.
    """
    request = LlmRequest(
        purpose=purpose,
        messages=[{"role": "user", "content": ""}],  # unused: the call log needs purpose/role
        offline=str,
        project=project,
    )
    config = replace(resolve_config(None), model=model)
    if project is not None:
        try:
            budget = resolve_config(project).daily_token_budget
        except LlmMisconfigured:
            budget = config.daily_token_budget
        used = selectors.llm_tokens_used_today(project=project)
        if selectors.over_budget(config=replace(config, daily_token_budget=budget), used=used):
            raise _fail(
                request,
                config,
                LlmBudgetExhausted(
                    f'Project "{project.slug}": daily token budget of {budget} exhausted '
                    f"({used} used today); resets at 00:00 UTC."
                ),
                None,
            )
    started = time.monotonic()
    try:
        vectors, tokens = providers.openai_embed(config, model=model, texts=texts)
    except LlmError as exc:
        raise _fail(request, config, exc, started) from None
    _record(request, config, LlmCall.Outcome.OK, started=started, tokens=(tokens, 0))
    return vectors


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, a ```json fenced block, or the span
    from the first "{" to the last "}". Raises json.JSONDecodeError when none parses."""
    candidates = [text.strip()]
    if fence := _FENCE.search(text):
        candidates.append(fence.group(1))
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    first_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


def _problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"it is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if isinstance(exc, KeyError):
        return f"the key {exc.args[0]!r} is missing" if exc.args else "a key is missing"
    return str(exc) or type(exc).__name__


def check_answer[T](text: str, validate: Callable[[Any], T]) -> tuple[T | None, str | None]:
    """(the validated answer, None), or (None, what is wrong in words the model can act on)."""
    try:
        return validate(extract_json(text)), None
    except INVALID as exc:
        return None, _problem(exc)


def repair_messages(
    messages: list[dict[str, str]], answer: str, problem: str
) -> list[dict[str, str]]:
    """The one repair request: the conversation, the invalid answer and what was wrong."""
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": REPAIR_PROMPT.format(problem=problem)},
    ]


def _checked[T](result: LlmResult, validate: Callable[[Any], T]) -> tuple[T | None, str | None]:
    """check_answer(), with a failure logged on the call."""
    answer, problem = check_answer(result.text, validate)
    if problem is not None:
        services.llm_call_mark_invalid(call_id=result.call_id, error=problem)
    return answer, problem


def complete_json[T](request: LlmRequest, *, validate: Callable[[Any], T]) -> T:
    """complete(), then extract_json() and `validate` (which raises ValueError, TypeError or
    KeyError with a message for a wrong shape) on the answer.

    An invalid answer gets one repair request (the answer plus what was wrong); if that is
    invalid too, raises LlmInvalidOutput. Each call whose answer failed is logged as
    invalid_output with the problem. An invalid offline answer is not repaired: it would be
    the same again.
    """
    result = complete(request)
    answer, problem = _checked(result, validate)
    if problem is None:
        return cast(T, answer)
    if result.provider == OFFLINE:
        raise LlmInvalidOutput(
            f"{request.purpose}: the offline answer is invalid: {problem}", call_id=result.call_id
        )
    logger.info("LLM call %s (%s): invalid answer, repairing", result.call_id, request.purpose)
    repair = replace(request, messages=repair_messages(request.messages, result.text, problem))
    retry = complete(repair)
    answer, problem = _checked(retry, validate)
    if problem is None:
        return cast(T, answer)
    raise LlmInvalidOutput(
        f"{request.purpose}: {retry.provider}/{retry.model} gave invalid JSON twice "
        f"(the second time: {problem}).",
        call_id=retry.call_id,
    )
