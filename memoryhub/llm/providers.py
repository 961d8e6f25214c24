"""The three providers behind memoryhub.llm.client: offline, openai and anthropic.

Each turns (config, messages) into a ProviderReply or raises an LlmError. Timeouts, retries
and backoff on 429/5xx are the official SDKs' own (`timeout`, `max_retries`); nothing here
speaks HTTP itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from memoryhub.llm.config import OFFLINE, ResolvedConfig
from memoryhub.llm.errors import LlmError, LlmTimeout, LlmUnavailable

if TYPE_CHECKING:
    # The SDKs are imported where they are used: they cost every process ~80 MB and a long
    # full garbage collection, and a bank on the offline provider never needs them.
    import anthropic
    import openai

Messages = list[dict[str, str]]

# Passed explicitly so the SDKs never fall back to OPENAI_BASE_URL / ANTHROPIC_BASE_URL.
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
# Local servers (Ollama, llama.cpp, vLLM without --api-key) need no key, but the SDKs refuse
# to start without one and would otherwise read OPENAI_API_KEY / ANTHROPIC_API_KEY.
NO_KEY = "no-key"
# The SDKs retry these (and 5xx) with backoff. After that, they and a rejected key (401/403)
# are LlmUnavailable, worth retrying later; other 4xx (bad request, unknown model, context too
# long) would fail the same way again, so they are plain LlmError.
_RETRIED_STATUSES = {408, 409, 429}


@dataclass(frozen=True)
class ProviderReply:
    text: str
    tokens_in: int
    tokens_out: int


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _prompt_tokens(messages: Messages) -> int:
    return estimate_tokens("".join(m["content"] for m in messages))


def complete(
    config: ResolvedConfig, *, messages: Messages, max_tokens: int, offline: Callable[[], str]
) -> ProviderReply:
    if config.provider == OFFLINE:
        return _offline(messages, offline)
    if config.provider == "openai":
        return _openai(config, messages, max_tokens)
    if config.provider == "anthropic":
        return _anthropic(config, messages, max_tokens)
    raise LlmError(f"Unknown LLM provider {config.provider!r}.")


def _offline(messages: Messages, offline: Callable[[], str]) -> ProviderReply:
    text = offline()
    if not isinstance(text, str):
        raise TypeError(f"The offline answer must be a str, got {type(text).__name__}.")
    return ProviderReply(text, _prompt_tokens(messages), estimate_tokens(text))


# SDK clients hold connection pools and are thread-safe: one per destination and retry count.
# The timeout is passed per request, so projects and callers with other timeouts share them.
@lru_cache(maxsize=32)
def _openai_client(base_url: str, api_key: str, max_retries: int) -> openai.OpenAI:
    import openai

    return openai.OpenAI(
        base_url=base_url or OPENAI_DEFAULT_BASE_URL,
        api_key=api_key or NO_KEY,
        max_retries=max_retries,
    )


@lru_cache(maxsize=32)
def _anthropic_client(base_url: str, api_key: str, max_retries: int) -> anthropic.Anthropic:
    import anthropic

    return anthropic.Anthropic(
        base_url=base_url or ANTHROPIC_DEFAULT_BASE_URL,
        api_key=api_key or NO_KEY,
        max_retries=max_retries,
    )


@contextmanager
def _sdk_errors(config: ResolvedConfig, sdk: Any, base: type[Exception]) -> Iterator[None]:
    """An SDK's exceptions as LlmErrors (timeout, unreachable, HTTP status, other). The openai
    and anthropic SDKs share the names of their exception classes; `base` is the SDK's root."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise _timeout(config) from exc
    except sdk.APIConnectionError as exc:
        raise _unreachable(config, exc) from exc
    except sdk.APIStatusError as exc:
        raise _status_error(config, exc.status_code, exc.message) from exc
    except base as exc:
        raise LlmError(f"{config.provider} call failed: {exc}") from exc


def _openai(config: ResolvedConfig, messages: Messages, max_tokens: int) -> ProviderReply:
    import openai
    from openai.types.chat import ChatCompletion

    client = _openai_client(config.base_url, config.api_key, config.max_retries)
    # OpenAI's own API rejects max_tokens for its reasoning models; compatible servers
    # (DeepSeek, Ollama, vLLM, llama.cpp) all understand max_tokens.
    hosted = not config.base_url
    with _sdk_errors(config, openai, openai.OpenAIError):
        completion = client.chat.completions.create(
            model=config.model,
            messages=cast(Any, messages),
            max_completion_tokens=max_tokens if hosted else openai.omit,
            max_tokens=openai.omit if hosted else max_tokens,
            timeout=config.timeout,
        )
    if not isinstance(completion, ChatCompletion) or not completion.choices:
        raise LlmError(f"{_where(config)} returned no chat completion (is the base URL right?).")
    text = completion.choices[0].message.content or ""
    usage = completion.usage
    if usage is None:  # some compatible servers omit it
        return ProviderReply(text, _prompt_tokens(messages), estimate_tokens(text))
    return ProviderReply(text, usage.prompt_tokens, usage.completion_tokens)


def openai_embed(
    config: ResolvedConfig, *, model: str, texts: list[str]
) -> tuple[list[list[float]], int]:
    """One call of an OpenAI-compatible /embeddings endpoint (the embedding re-scorer's
    `openai` provider): one vector per text, in input order, and the prompt tokens the
    endpoint counted (0 when it does not say); errors as for completions."""
    import openai

    client = _openai_client(config.base_url, config.api_key, config.max_retries)
    with _sdk_errors(config, openai, openai.OpenAIError):
        reply = client.embeddings.create(model=model, input=texts, timeout=config.timeout)
    data = sorted(reply.data or [], key=lambda item: item.index)
    if len(data) != len(texts):
        raise LlmError(f"{_where(config)} returned {len(data)} embeddings for {len(texts)} texts.")
    usage = getattr(reply, "usage", None)
    tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    return [list(item.embedding) for item in data], tokens


def _anthropic(config: ResolvedConfig, messages: Messages, max_tokens: int) -> ProviderReply:
    import anthropic
    from anthropic.types import TextBlock

    client = _anthropic_client(config.base_url, config.api_key, config.max_retries)
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [m for m in messages if m["role"] != "system"]
    with _sdk_errors(config, anthropic, anthropic.AnthropicError):
        message = client.messages.create(
            model=config.model,
            max_tokens=max_tokens,
            system=system or anthropic.omit,
            messages=cast(Any, turns),
            timeout=config.timeout,
        )
    if not isinstance(message, anthropic.types.Message):
        raise LlmError(f"{_where(config)} returned no message (is the base URL right?).")
    text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
    return ProviderReply(text, message.usage.input_tokens, message.usage.output_tokens)


def _where(config: ResolvedConfig) -> str:
    return f"{config.provider} at {config.base_url or 'its default endpoint'}"


def _attempts(config: ResolvedConfig) -> str:
    n = config.max_retries + 1
    return f"{n} attempt{'s' if n > 1 else ''}"


def _timeout(config: ResolvedConfig) -> LlmTimeout:
    return LlmTimeout(
        f"{_where(config)} did not answer within {config.timeout:g} s ({_attempts(config)})."
    )


def _unreachable(config: ResolvedConfig, exc: Exception) -> LlmUnavailable:
    cause = f": {exc.__cause__}" if exc.__cause__ else ""
    return LlmUnavailable(f"Cannot reach {_where(config)} ({_attempts(config)}){cause}.")


def _status_error(config: ResolvedConfig, status: int, message: str) -> LlmError:
    retried = status in _RETRIED_STATUSES or status >= 500
    message = re.sub(r"^Error code: \d+ - ", "", message)  # the SDKs' prefix; status is below
    tries = f" ({_attempts(config)})" if retried else ""
    text = f"{_where(config)} answered HTTP {status}{tries}: {message}"
    if retried or status in {401, 403}:
        return LlmUnavailable(text)
    return LlmError(text)
