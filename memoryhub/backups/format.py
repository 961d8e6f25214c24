"""The backup format: gzip-compressed JSON Lines, one row a line, in dependency order.

    {"format": "memoryhub-backup", "version": 1, "project": {...}, "created_at": …}
    {"model": "memories.Memory", "pk": 12, "fields": {...}}
    …
    {"end": true, "rows": {"memories.Memory": 1234, …}}

Every concrete field of every model in MODELS is written, so nothing a project holds is lost.
Foreign keys are written as references that mean the same thing on another server: the
project is implicit, a person is their username, a row of the backup is its pk in the backup,
and an agent token (a credential, never moved) is null. The closing line counts the rows, so a
truncated file is refused before anything is written.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import uuid
from typing import Any

from django.apps import apps
from django.db import models

FORMAT = "memoryhub-backup"
VERSION = 1

# (model label, lookup from the model to its project), parents before children. Derived but
# costly state (the inverted index, stage-1 outputs, seen sets) is kept so a restored bank
# answers exactly as the original; pipeline jobs (leases of a running system) are not.
MODELS: tuple[tuple[str, str], ...] = (
    ("projects.ProjectMembership", "project"),
    ("agent_sessions.AgentSession", "project"),
    ("agent_sessions.SessionRecord", "session__project"),
    ("agent_sessions.ToolResultDecision", "session__project"),
    ("memories.Memory", "project"),
    ("memories.MemoryEvent", "project"),
    ("memories.MemoryTerm", "project"),
    ("memories.BankArtifact", "project"),
    ("recall.InstructionFile", "project"),
    ("recall.RecallFile", "project"),
    ("recall.RecallSeen", "session__project"),
    ("recall.RecallSurfaced", "session__project"),
    ("pipeline.Stage1Output", "project"),
    ("llm.LlmCall", "project"),
    ("core.AuditEvent", "project"),
)
# Fields that backups of this format taken by older versions carry and the models no longer
# have: skipped on restore, so an old backup still restores.
RETIRED_FIELDS = {
    ("memories.MemoryTerm", "length"),  # the postings' copy of term_count (memories 0010)
}
PROJECT_FIELDS = ("name", "description", "timezone", "settings", "created_at", "updated_at")
# Fields whose value identifies a row on the whole server (kept unless taken; see services).
GLOBAL_IDS = {"public_id"}


def model_of(label: str) -> type[models.Model]:
    return apps.get_model(label)


def exported_labels() -> set[str]:
    return {label for label, _ in MODELS}


def encode(value: Any) -> Any:
    """A field value as JSON (datetimes ISO 8601, UUIDs and decimals as strings)."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return base64.b64encode(bytes(value)).decode()
    return value


def decode(field: models.Field[Any, Any], value: Any) -> Any:
    if value is None:
        return None
    if isinstance(field, models.BinaryField):
        return base64.b64decode(value)
    if isinstance(field, models.JSONField):
        return value
    return field.to_python(value)
