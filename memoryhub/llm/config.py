"""Which provider, endpoint, model and limits a call uses: the environment's LLM_* settings,
overridden per project by project.settings["llm"].

A project may override provider, base_url, model, smol_model, timeout_seconds and
daily_token_budget. The API key is never read from project settings: they are stored in plain
JSON, returned by the project API to every member and editable by maintainers, while the key
is the operator's secret (and bill). For the same reason the global key is sent only to the
global destination (LLM_PROVIDER at LLM_BASE_URL); a project that points elsewhere talks to a
server that needs no key, and may only point at base URLs the operator listed in
LLM_ALLOWED_BASE_URLS.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from memoryhub.core.exceptions import ApplicationError
from memoryhub.llm.errors import LlmMisconfigured
from projects.models import Project

OFFLINE = "offline"
PROVIDERS = (OFFLINE, "openai", "anthropic")
ROLES = ("default", "smol")
MAX_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class ResolvedConfig:
    provider: str
    model: str
    role: str  # the role asked for; `model` already applies the smol → default fallback
    base_url: str  # "" = the SDK's default endpoint
    api_key: str = field(repr=False)  # "" = none
    timeout: float  # seconds per attempt
    max_retries: int
    daily_token_budget: int | None  # None = unlimited


def _check_provider(value: Any) -> str | None:
    return None if value in PROVIDERS else f"must be one of {', '.join(PROVIDERS)}"


def _check_base_url(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if value == "":
        return None  # the SDK's default endpoint
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return "must be an http(s):// URL"
    if _metadata_host(parts.hostname or ""):
        return "must not be a link-local or cloud metadata address"
    allowed = {settings.LLM_BASE_URL, *settings.LLM_ALLOWED_BASE_URLS} - {""}
    if value.rstrip("/") not in allowed:
        return "is not one of the server's LLM_BASE_URL / LLM_ALLOWED_BASE_URLS"
    return None


# Cloud metadata services answer on these names (and on link-local addresses) and hand out
# credentials: never a destination for prompts, whatever LLM_ALLOWED_BASE_URLS says.
_METADATA_HOSTS = {"metadata", "metadata.google.internal", "metadata.azure.internal"}


def _metadata_host(host: str) -> bool:
    host = host.strip("[]").lower().rstrip(".")
    if host in _METADATA_HOSTS:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_link_local or (mapped is not None and mapped.is_link_local)


def _check_model(value: Any) -> str | None:
    ok = isinstance(value, str) and 0 < len(value.strip()) <= 200
    return None if ok else "must be a model name (1-200 characters)"


def _check_budget(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be an integer >= 0 (0 = no project-specific limit)"


def _check_timeout(value: Any) -> str | None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 < value <= MAX_TIMEOUT_SECONDS
    )
    return None if ok else f"must be a number of seconds > 0 and <= {MAX_TIMEOUT_SECONDS}"


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "provider": _check_provider,
    "base_url": _check_base_url,
    "model": _check_model,
    "smol_model": _check_model,
    "timeout_seconds": _check_timeout,
    "daily_token_budget": _check_budget,
}


def project_overrides(project: Project | None) -> dict[str, Any]:
    """The project's validated settings["llm"]; raises LlmMisconfigured naming every bad key."""
    if project is None:
        return {}
    raw = (project.settings or {}).get("llm")
    if raw is None:
        return {}
    where = f'Project "{project.slug}" settings["llm"]'
    if not isinstance(raw, dict):
        raise LlmMisconfigured(f"{where} must be a JSON object.")
    problems = []
    for key, value in raw.items():
        check = _CHECKS.get(key)
        if key in {"api_key", "api_key_file"}:
            problems.append(f"{key} cannot be set per project; the key is global (LLM_API_KEY)")
        elif check is None:
            problems.append(f"unknown key {key!r} (allowed: {', '.join(_CHECKS)})")
        elif (problem := check(value)) is not None:
            problems.append(f"{key} {problem}, got {value!r}")
    if problems:
        raise LlmMisconfigured(f"{where} is invalid: " + "; ".join(problems) + ".")
    overrides = dict(raw)
    if "base_url" in overrides:
        overrides["base_url"] = overrides["base_url"].rstrip("/")
    return overrides


def check_project_settings(project_settings: dict[str, Any]) -> None:
    """The settings["llm"] check run when a project's settings are saved: every key valid
    (naming it, as llm.<key>), and the combination resolvable for both roles, so a job never
    fails later on what was accepted now. Raises ApplicationError."""
    raw = project_settings.get("llm")
    if raw is None:
        return
    if not isinstance(raw, dict):
        raise ApplicationError("llm must be a JSON object.")
    for key, value in raw.items():
        check = _CHECKS.get(key)
        if key in {"api_key", "api_key_file"}:
            raise ApplicationError(
                f"llm.{key} cannot be set per project; the key is global (LLM_API_KEY)."
            )
        if check is None:
            raise ApplicationError(f"Unknown llm setting {key!r} (allowed: {', '.join(_CHECKS)}).")
        if (problem := check(value)) is not None:
            raise ApplicationError(f"llm.{key} {problem}, got {value!r}.")
    probe = Project(slug="", settings={"llm": raw})  # never saved: resolve_config reads settings
    for role in ROLES:
        try:
            resolve_config(probe, role)
        except LlmMisconfigured as exc:
            raise ApplicationError(f"llm: {exc}") from None


def _budget(server: int, project: int | None) -> int | None:
    # A project may lower the operator's cap, never raise or lift it.
    if project is None or project == 0:
        limit = server
    elif server == 0:
        limit = project
    else:
        limit = min(server, project)
    return limit or None


def resolve_config(project: Project | None, role: str = "default") -> ResolvedConfig:
    """The configuration of one call of `role` for `project` (None: no project).

    Raises ValueError for an unknown role (a programming error) and LlmMisconfigured for
    invalid project overrides.
    """
    if role not in ROLES:
        raise ValueError(f"Unknown LLM role {role!r}; use one of {', '.join(ROLES)}.")
    overrides = project_overrides(project)
    provider: str = overrides.get("provider", settings.LLM_PROVIDER)
    server_destination = (settings.LLM_PROVIDER, settings.LLM_BASE_URL)
    # A provider switch without a base_url means that provider's default endpoint: the
    # server's base URL belongs to the server's provider.
    default_url = settings.LLM_BASE_URL if provider == settings.LLM_PROVIDER else ""
    base_url: str = overrides.get("base_url", default_url)
    own_destination = (provider, base_url) == server_destination
    budget = _budget(settings.LLM_DAILY_TOKEN_BUDGET, overrides.get("daily_token_budget"))
    timeout = float(overrides.get("timeout_seconds", settings.LLM_TIMEOUT_SECONDS))
    if provider == OFFLINE:
        return ResolvedConfig(
            provider=OFFLINE,
            model=OFFLINE,
            role=role,
            base_url="",
            api_key="",
            timeout=timeout,
            max_retries=0,
            daily_token_budget=budget,
        )

    slug = project.slug if project is not None else ""
    if not own_destination and not base_url:
        raise LlmMisconfigured(
            f'Project "{slug}" settings["llm"] selects the hosted {provider} API, but the '
            "server's API key is only sent to LLM_PROVIDER at LLM_BASE_URL; set a base_url "
            "from LLM_ALLOWED_BASE_URLS instead."
        )
    # Model names only carry over when the project still talks to the server's endpoint.
    inherited = (settings.LLM_MODEL, settings.LLM_SMOL_MODEL) if own_destination else ("", "")
    default_model: str = overrides.get("model") or inherited[0]
    if not default_model:
        raise LlmMisconfigured(
            f'Project "{slug}" settings["llm"] points at another endpoint than the server\'s, '
            "so it must also set model."
        )
    model = default_model
    if role == "smol":
        model = overrides.get("smol_model") or inherited[1] or default_model
    return ResolvedConfig(
        provider=provider,
        model=model,
        role=role,
        base_url=base_url,
        api_key=settings.LLM_API_KEY if own_destination else "",
        timeout=timeout,
        max_retries=settings.LLM_MAX_RETRIES,
        daily_token_budget=budget,
    )
