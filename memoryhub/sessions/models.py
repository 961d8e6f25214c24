from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from memoryhub.sessions.records import RECORD_TYPES, RecordInput


class AgentSession(models.Model):
    """One agent conversation: the short- and mid-term memory of seed 000 §1–2."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        ENDED = "ended"  # the agent said it is over: eligible for extraction at once

    class Source(models.TextChoices):
        API = "api"
        MEWCODE = "mewcode"
        CLAUDE_CODE = "claude_code"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    external_id = models.CharField(max_length=200)
    created_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_token = models.ForeignKey(
        "accounts.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    title = models.CharField(max_length=200, blank=True)
    summary = models.TextField(blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    record_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    token_estimate = models.PositiveBigIntegerField(default=0)
    redaction_count = models.PositiveIntegerField(default=0)
    injected_block_count = models.PositiveIntegerField(default=0)
    compact_failures = models.PositiveSmallIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_active_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="session_external_id_unique"
            ),
        ]
        # The session list: a project's sessions, most recently active first.
        indexes = [models.Index(fields=["project", "-last_active_at"])]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.title})"


class SessionRecord(models.Model):
    """One transcript record; append-only. `index` is its 0-based position in the session."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="records")
    index = models.PositiveIntegerField()
    type = models.CharField(max_length=16, choices=[(t, t) for t in RECORD_TYPES])
    content = models.JSONField()
    tool_use_id = models.CharField(max_length=200, blank=True)
    is_error = models.BooleanField(default=False)
    timestamp = models.DateTimeField(null=True, blank=True)
    seq = models.BigIntegerField(null=True, blank=True)
    redactions = models.PositiveIntegerField(default=0)
    # The record carries a block MemoryHub injected: extraction must not learn from it.
    contains_injection = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # Also the index for reading a session in order and from the last boundary on.
            models.UniqueConstraint(fields=["session", "index"], name="record_index_unique"),
            models.UniqueConstraint(
                fields=["session", "seq"],
                condition=models.Q(seq__isnull=False),
                name="record_seq_unique",
            ),
        ]
        # "Where is the last compact boundary?" on every resume.
        indexes = [
            models.Index(
                fields=["session", "-index"],
                condition=models.Q(type="compact_boundary"),
                name="record_boundary_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.index} {self.type}"

    def to_input(self) -> RecordInput:
        return RecordInput(
            type=self.type,
            content=self.content,
            timestamp=self.timestamp,
            tool_use_id=self.tool_use_id,
            is_error=self.is_error,
            seq=self.seq,
            metadata=self.metadata,
        )


class ToolResultDecision(models.Model):
    """A frozen trimming decision for one tool result (kept verbatim, or persisted whole here
    and replaced by a preview), so every resume of the session gives the same bytes."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="tool_result_decisions"
    )
    tool_use_id = models.CharField(max_length=200)
    replacement = models.TextField(blank=True)  # empty: sent verbatim
    artifact = models.TextField(blank=True)  # the full original output when persisted
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "tool_use_id"], name="tool_result_decision_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.tool_use_id}"
