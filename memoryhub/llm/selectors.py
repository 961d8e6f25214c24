"""Reads of the call log: the budget check and the usage endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from memoryhub.llm.config import OFFLINE, ResolvedConfig, resolve_config
from memoryhub.llm.errors import LlmMisconfigured
from memoryhub.llm.models import LlmCall
from projects.models import Project

RECENT_CALLS = 20


def utc_day_start() -> datetime:
    return timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def llm_tokens_used_today(*, project: Project) -> int:
    """Tokens in + out the project spent since 00:00 UTC, as the daily budget counts them.

    Offline calls are left out: their counts are estimates of work that cost nothing.
    """
    total = (
        LlmCall.objects.filter(project=project, created_at__gte=utc_day_start())
        .exclude(provider=OFFLINE)
        .aggregate(total=Coalesce(Sum(F("tokens_in") + F("tokens_out")), 0))["total"]
    )
    return int(total)


def over_budget(*, config: ResolvedConfig, used: int) -> bool:
    """Whether a call under `config` must be refused after `used` tokens today.

    Offline calls are never refused: they cost nothing.
    """
    budget = config.daily_token_budget
    return config.provider != OFFLINE and budget is not None and used >= budget


def llm_call_list(*, project: Project) -> QuerySet[LlmCall]:
    return LlmCall.objects.filter(project=project).order_by("-created_at", "-id")


@dataclass(frozen=True)
class LlmUsage:
    provider: str
    models: dict[str, str]
    today: dict[str, int]
    daily_token_budget: int | None
    budget_used: int
    state: str  # "ok" | "budget_exhausted" | "misconfigured"
    config_error: str
    recent_calls: list[LlmCall]


def llm_usage(*, project: Project) -> LlmUsage:
    """The project's LLM configuration, today's totals and recent calls.

    When its settings["llm"] are invalid, state is "misconfigured", config_error says why and
    provider/models show the server-wide configuration its calls would otherwise use.
    """
    config_error = ""
    try:
        default, smol = (resolve_config(project, role) for role in ("default", "smol"))
    except LlmMisconfigured as exc:
        config_error = exc.message
        default, smol = (resolve_config(None, role) for role in ("default", "smol"))
    today: dict[str, Any] = LlmCall.objects.filter(
        project=project, created_at__gte=utc_day_start()
    ).aggregate(
        tokens_in=Coalesce(Sum("tokens_in"), 0),
        tokens_out=Coalesce(Sum("tokens_out"), 0),
        calls=Count("id"),
        errors=Count("id", filter=~Q(outcome=LlmCall.Outcome.OK)),
    )
    used = llm_tokens_used_today(project=project)
    state = "ok"
    if config_error:
        state = "misconfigured"
    elif over_budget(config=default, used=used):
        state = "budget_exhausted"
    return LlmUsage(
        provider=default.provider,
        models={"default": default.model, "smol": smol.model},
        today=today,
        daily_token_budget=default.daily_token_budget,
        budget_used=used,
        state=state,
        config_error=config_error,
        recent_calls=list(llm_call_list(project=project)[:RECENT_CALLS]),
    )
