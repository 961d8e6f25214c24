from __future__ import annotations

from django.db import models
from django.utils import timezone


class RecallSeen(models.Model):
    """A memory an agent session has already been shown (meow-memory's per-session seen set).

    Rows older than the session's last compact boundary no longer count: after compaction the
    agent has forgotten what it saw.
    """

    class Reason(models.TextChoices):
        INJECTED = "injected"
        SEARCHED = "searched"

    session = models.ForeignKey(
        "agent_sessions.AgentSession", on_delete=models.CASCADE, related_name="+"
    )
    memory = models.ForeignKey("memories.Memory", on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=8, choices=Reason.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "memory", "reason"], name="recall_seen_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id} saw {self.memory_id} ({self.reason})"
