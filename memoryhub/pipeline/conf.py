"""oh-my-pi's pipeline knobs (seed-algorithms §3.1) and meow-memory's dream schedule (§5.9)
with their defaults, overridable per project in project.settings["pipeline"];
`review_required` lives at the top of the settings.

The knobs are named after our stages, not oh-my-pi's words (its phase 1 / phase 2, "rollout" for a
session, "global" for stage 2): RENAMED lists the seed's names, which a saved setting may no
longer use (400 naming the new key); migration pipeline 0004 renamed stored values."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from memoryhub.core.exceptions import ApplicationError


@dataclass(frozen=True)
class PipelineConfig:
    stage1_max_sessions_per_scan: int = 64
    stage1_max_session_age_days: int = 30
    stage1_min_session_idle_hours: int = 12
    session_scan_limit: int = 300  # newest sessions looked at per scan (stage 1 and dream)
    stage2_max_raw_memories: int = 200  # stage-1 outputs per stage 2 (memories per dream round)
    stage1_concurrency: int = 8
    stage1_lease_seconds: int = 120
    stage1_retry_delay_seconds: int = 120
    stage2_lease_seconds: int = 180
    stage2_retry_delay_seconds: int = 180
    stage2_heartbeat_seconds: int = 30
    stage1_payload_percent: float = 0.7
    stage1_input_token_limit: int = 4_000
    fallback_token_limit: int = 16_000
    retries: int = 3
    context_window: int = 128_000  # of the extraction model; bounds the stage-1 payload
    # Dream (meow-memory v0.13+): a session window is dreamed once idle this long, never inside
    # a suppression window (project-local "HH:MM-HH:MM", may wrap midnight) or the lead time
    # before one, at most once per cooldown, under a heartbeated lease, with bounded attempts.
    dream_idle_minutes: int = 180
    dream_suppress_windows: tuple[str, ...] = ("09:00-12:00", "14:00-18:00")
    dream_lead_minutes: int = 15
    dream_cooldown_hours: int = 6
    dream_lease_seconds: int = 1800
    dream_heartbeat_seconds: int = 60
    dream_max_attempts: int = 3


# Knobs that belong to the app that uses them (migration pipeline 0003 moved stored values).
MOVED = {"summary_injection_token_limit": "recall.summary_injection_token_limit"}
# oh-my-pi's names of our knobs (migration pipeline 0004 renamed stored values).
RENAMED = {
    "max_rollouts_per_scan": "stage1_max_sessions_per_scan",
    "max_rollout_age_days": "stage1_max_session_age_days",
    "min_rollout_idle_hours": "stage1_min_session_idle_hours",
    "thread_scan_limit": "session_scan_limit",
    "max_raw_memories_for_global": "stage2_max_raw_memories",
    "phase2_lease_seconds": "stage2_lease_seconds",
    "phase2_retry_delay_seconds": "stage2_retry_delay_seconds",
    "phase2_heartbeat_seconds": "stage2_heartbeat_seconds",
    "rollout_payload_percent": "stage1_payload_percent",
    "phase1_input_token_limit": "stage1_input_token_limit",
}


def pipeline_config(project_settings: dict[str, Any]) -> PipelineConfig:
    overrides = project_settings.get("pipeline", {}) or {}
    if not isinstance(overrides, dict):
        raise ApplicationError("project settings 'pipeline' must be an object.")
    known = {f.name: f for f in fields(PipelineConfig)}
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if name in MOVED:
            raise ApplicationError(f"pipeline.{name} is now {MOVED[name]}.")
        if name in RENAMED:
            raise ApplicationError(f"pipeline.{name} is now pipeline.{RENAMED[name]}.")
        if name not in known:
            raise ApplicationError(f"Unknown pipeline setting {name!r}.")
        if name == "dream_suppress_windows":
            values[name] = _windows(value)
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ApplicationError(f"pipeline.{name} must be a non-negative number.")
        if name == "stage1_payload_percent" and not 0 < value <= 1:
            # A fraction of the window, despite the name: 70 would ask for 70 windows.
            raise ApplicationError(
                f"pipeline.{name} is a fraction of the context window, more than 0 and at most 1."
            )
        values[name] = float(value) if name == "stage1_payload_percent" else int(value)
    config = PipelineConfig(**values)
    _check_jobs(config)
    _check_dream(config)
    return config


_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")
MINUTES_PER_DAY = 24 * 60


def parse_window(text: str) -> tuple[int, int]:
    """Parse "HH:MM-HH:MM" into (start, end) minutes after local midnight.

    The end may be 24:00, and may be earlier than the start (the window wraps midnight).
    Raises ApplicationError."""
    match = _WINDOW.match(text) if isinstance(text, str) else None
    if match is None:
        raise ApplicationError(f"pipeline.dream_suppress_windows: {text!r} is not HH:MM-HH:MM.")
    sh, sm, eh, em = (int(g) for g in match.groups())
    start, end = sh * 60 + sm, eh * 60 + em
    if sh > 23 or sm > 59 or em > 59 or end > MINUTES_PER_DAY or start == end % MINUTES_PER_DAY:
        raise ApplicationError(f"pipeline.dream_suppress_windows: {text!r} is not a valid window.")
    return start, end


def _windows(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 24:
        raise ApplicationError("pipeline.dream_suppress_windows must be a list of at most 24.")
    normalized = []
    for item in value:
        start, end = parse_window(item)
        normalized.append(f"{start // 60:02d}:{start % 60:02d}-{end // 60:02d}:{end % 60:02d}")
    return tuple(normalized)


# A shorter lease is taken over while its run is still alive between two heartbeats (stage 1's
# heartbeat is a third of its lease).
MIN_LEASE_SECONDS = 5
MAX_RETRIES = 100  # attempts are counted in a small integer column


def _check_jobs(config: PipelineConfig) -> None:
    # Every claim spends an attempt: with none, a job would stay pending forever.
    if not 1 <= config.retries <= MAX_RETRIES:
        raise ApplicationError(f"pipeline.retries must be from 1 to {MAX_RETRIES}.")
    for name in ("stage1_lease_seconds", "stage2_lease_seconds"):
        if getattr(config, name) < MIN_LEASE_SECONDS:
            raise ApplicationError(f"pipeline.{name} must be at least {MIN_LEASE_SECONDS}.")
    if not 1 <= config.stage2_heartbeat_seconds < config.stage2_lease_seconds:
        raise ApplicationError(
            "pipeline.stage2_heartbeat_seconds must be at least 1 and below "
            "pipeline.stage2_lease_seconds."
        )


def _check_dream(config: PipelineConfig) -> None:
    if config.dream_max_attempts < 1:
        raise ApplicationError("pipeline.dream_max_attempts must be at least 1.")
    if config.dream_lease_seconds < 60:
        raise ApplicationError("pipeline.dream_lease_seconds must be at least 60.")
    if not 1 <= config.dream_heartbeat_seconds < config.dream_lease_seconds:
        raise ApplicationError(
            "pipeline.dream_heartbeat_seconds must be at least 1 and below the lease."
        )
    if config.dream_lead_minutes >= MINUTES_PER_DAY:
        raise ApplicationError("pipeline.dream_lead_minutes must be below 1440 (a day).")


def review_required(project_settings: dict[str, Any]) -> bool:
    value = project_settings.get("review_required", False)
    if not isinstance(value, bool):
        raise ApplicationError("review_required must be true or false.")
    return value
