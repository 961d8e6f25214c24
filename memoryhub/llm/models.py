from __future__ import annotations

from django.db import models

from projects.models import Project

ERROR_MAX_CHARS = 2_000


class LlmCall(models.Model):
    """One request to an LLM provider (or the offline stand-in), whatever its outcome.

    Read by the usage endpoint and by the per-project daily token budget.
    """

    class Outcome(models.TextChoices):
        OK = "ok"
        ERROR = "error"
        TIMEOUT = "timeout"
        INVALID_OUTPUT = "invalid_output"
        BUDGET_EXHAUSTED = "budget_exhausted"

    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    purpose = models.CharField(max_length=64)  # "compaction", "stage1_memories", "recall_select", …
    role = models.CharField(max_length=16)  # the requested role: "default" | "smol"
    # Empty when the project's LLM settings were invalid, so no provider was chosen.
    provider = models.CharField(max_length=16, blank=True)
    model = models.CharField(max_length=200, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=32, choices=Outcome.choices)
    error = models.TextField(blank=True, max_length=ERROR_MAX_CHARS)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Serves the budget check (sum of a project's tokens since 00:00 UTC, before every
        # call) and the usage endpoint's "today" totals and last 20 calls.
        indexes = [models.Index(fields=["project", "created_at"])]

    def __str__(self) -> str:
        return f"{self.purpose} {self.provider}:{self.model} {self.outcome}"
