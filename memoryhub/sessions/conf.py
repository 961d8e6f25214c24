"""Session constants (MewCode's context manager, seed-algorithms §1.2), overridable per project
in project.settings["sessions"]. Where the seed text and MewCode's source disagree, the default
is the source's value (seed-algorithms §6)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from django.conf import settings

from memoryhub.core.exceptions import ApplicationError


@dataclass(frozen=True)
class SessionConfig:
    # Tool-result trimming (layer 1).
    single_result_char_limit: int = 50_000
    aggregate_char_limit: int = 200_000
    preview_chars: int = 2_000
    keep_recent_turns: int = 10
    # Source: 2,000 chars (the seed text says 2,048).
    old_result_snip_chars: int = 2_000
    old_result_preview_chars: int = 200
    # Compaction (layer 2).
    summary_output_reserve: int = 20_000
    auto_compact_safety_margin: int = 13_000
    manual_compact_safety_margin: int = 3_000
    keep_recent_tokens: int = 10_000
    min_keep_messages: int = 5
    keep_max_tokens: int = 40_000
    min_summarize_prefix_tokens: int = 2_000
    compact_max_failures: int = 3
    # Ingestion.
    redact_secrets: bool = True


def session_config(project_settings: dict[str, Any]) -> SessionConfig:
    overrides = project_settings.get("sessions", {}) or {}
    if not isinstance(overrides, dict):
        raise ApplicationError("project settings 'sessions' must be an object.")
    known = {f.name: f.type for f in fields(SessionConfig)}
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in known:
            raise ApplicationError(f"Unknown session setting {name!r}.")
        if name == "redact_secrets":
            if not isinstance(value, bool):
                raise ApplicationError("sessions.redact_secrets must be true or false.")
        elif not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ApplicationError(f"sessions.{name} must be a non-negative integer.")
        values[name] = value
    return SessionConfig(**values)


@dataclass(frozen=True)
class IngestLimits:
    """Per-request limits; each over-limit request is answered 413 with the limit."""

    record_max_bytes: int
    records_per_append: int
    import_max_bytes: int


def ingest_limits() -> IngestLimits:
    return IngestLimits(
        record_max_bytes=settings.SESSION_RECORD_MAX_BYTES,
        records_per_append=settings.SESSION_APPEND_MAX_RECORDS,
        import_max_bytes=settings.SESSION_IMPORT_MAX_BYTES,
    )
