from __future__ import annotations

from typing import Any, Protocol
from uuid import UUID

from django.db import models, transaction
from django.utils import timezone

from memoryhub.core.models import AuditEvent, WorkerHeartbeat


class Actor(Protocol):
    """What an audit row needs of accounts.actors.Actor (core imports nothing above it)."""

    @property
    def user(self) -> Any: ...
    @property
    def token(self) -> Any: ...
    @property
    def label(self) -> str: ...


def audit_record(
    *,
    actor: Actor,
    verb: str,
    target_type: str,
    target_id: str | int | UUID,
    project: models.Model | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEvent:
    """Write an audit row; callers run inside their own transaction so both land or neither."""
    return AuditEvent.objects.create(
        project_id=None if project is None else project.pk,
        actor_user=actor.user,
        actor_token=actor.token,
        actor_label=actor.label,
        verb=verb,
        target_type=target_type,
        target_id=str(target_id),
        before=before,
        after=after,
    )


@transaction.atomic
def worker_heartbeat_record(*, hostname: str) -> WorkerHeartbeat:
    """Idempotent (ensure-style): the row only ever moves last_seen forward."""
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        hostname=hostname[:255], defaults={"last_seen": timezone.now()}
    )
    return beat
