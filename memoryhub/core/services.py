from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memoryhub.core.models import AuditEvent, WorkerHeartbeat

if TYPE_CHECKING:
    from accounts.actors import Actor
    from projects.models import Project


def audit_record(
    *,
    actor: Actor,
    verb: str,
    target_type: str,
    target_id: str | int | UUID,
    project: Project | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEvent:
    """Write an audit row; callers run inside their own transaction so both land or neither."""
    return AuditEvent.objects.create(
        project=project,
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
