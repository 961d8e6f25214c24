"""oh-my-pi's pipeline knobs (seed-algorithms §3.1) with their defaults, overridable per
project in project.settings["pipeline"]; `review_required` lives at the top of the settings."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from memoryhub.core.exceptions import ApplicationError


@dataclass(frozen=True)
class PipelineConfig:
    max_rollouts_per_scan: int = 64
    max_rollout_age_days: int = 30
    min_rollout_idle_hours: int = 12
    thread_scan_limit: int = 300
    max_raw_memories_for_global: int = 200
    stage1_concurrency: int = 8
    stage1_lease_seconds: int = 120
    stage1_retry_delay_seconds: int = 120
    phase2_lease_seconds: int = 180
    phase2_retry_delay_seconds: int = 180
    phase2_heartbeat_seconds: int = 30
    rollout_payload_percent: float = 0.7
    phase1_input_token_limit: int = 4_000
    fallback_token_limit: int = 16_000
    summary_injection_token_limit: int = 5_000
    retries: int = 3
    context_window: int = 128_000  # of the extraction model; bounds the stage-1 payload


def pipeline_config(project_settings: dict[str, Any]) -> PipelineConfig:
    overrides = project_settings.get("pipeline", {}) or {}
    if not isinstance(overrides, dict):
        raise ApplicationError("project settings 'pipeline' must be an object.")
    known = {f.name: f for f in fields(PipelineConfig)}
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in known:
            raise ApplicationError(f"Unknown pipeline setting {name!r}.")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ApplicationError(f"pipeline.{name} must be a non-negative number.")
        values[name] = float(value) if name == "rollout_payload_percent" else int(value)
    return PipelineConfig(**values)


def review_required(project_settings: dict[str, Any]) -> bool:
    value = project_settings.get("review_required", False)
    if not isinstance(value, bool):
        raise ApplicationError("review_required must be true or false.")
    return value
