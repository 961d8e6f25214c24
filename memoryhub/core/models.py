from __future__ import annotations

from django.conf import settings
from django.db import models


class ActorStamped(models.Model):
    """Who made a change: a person, the token they acted with, and a label that outlives both
    (audit rows and memory events)."""

    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_token = models.ForeignKey(
        "accounts.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200)

    class Meta:
        abstract = True


class AuditEvent(ActorStamped):
    """Who changed what outside the memory bank itself: projects, memberships, tokens.

    Changes to memories are audited in MemoryEvent, which the per-memory history reads.
    """

    project = models.ForeignKey(
        "projects.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    verb = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Serves "recent administrative changes of a project" (bank admin, later UI).
        indexes = [models.Index(fields=["project", "created_at"])]

    def __str__(self) -> str:
        return f"{self.actor_label} {self.verb} {self.target_type}:{self.target_id}"


class WorkerHeartbeat(models.Model):
    """Last time each Celery worker ran the heartbeat task; /healthz reads it."""

    hostname = models.CharField(max_length=255, unique=True)
    last_seen = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.last_seen:%Y-%m-%d %H:%M:%S}"
