from __future__ import annotations

from django.db import models
from django.utils import timezone


class Job(models.Model):
    """A unit of background work with a lease (oh-my-pi's jobs table, seed-algorithms §3.2).

    Claimed by a conditional UPDATE (see memoryhub.pipeline.jobs): at most one worker owns a
    job at a time, a crashed worker's lease expires, and retries are counted here rather than
    in the broker so that failures stay visible.
    """

    class Kind(models.TextChoices):
        STAGE1 = "stage1"  # key: the session's public id
        STAGE2 = "stage2"  # key: "project:<id>"
        REBUILD = "rebuild"  # key: "project:<id>"
        DREAM = "dream"  # key: "session:<public id>"
        IMPORT = "import"  # key: the import's public id (a uuid hex, the URL's job id)

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        ERROR = "error"  # will be retried at retry_at
        FAILED = "failed"  # retries exhausted: needs a person (or a new watermark)

    kind = models.CharField(max_length=16, choices=Kind.choices)
    key = models.CharField(max_length=100)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(
        "agent_sessions.AgentSession",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    owner_token = models.CharField(max_length=32, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    retry_at = models.DateTimeField(null=True, blank=True)
    # Counted down by each claim (a run that never ends, e.g. a killed worker, still spends one).
    retries_remaining = models.PositiveSmallIntegerField(default=3)
    # Runs that ended without succeed or fail (their lease ran out), since the last success or
    # refill of the retries: what the failed job's last_error reports.
    interruptions = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    # Work is due while input_watermark > success_watermark. Stage 1: the session's record
    # count; consolidation: a counter bumped by every stage-1 result ("dirty").
    input_watermark = models.BigIntegerField(default=0)
    success_watermark = models.BigIntegerField(default=0)
    claimed_watermark = models.BigIntegerField(default=0)
    progress = models.PositiveSmallIntegerField(default=0)  # percent, for rebuilds
    detail = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="job_kind_key")]
        indexes = [
            # The scan for claimable work and the diagnose view, per project.
            models.Index(fields=["project", "kind", "status"]),
            models.Index(fields=["status", "lease_until"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.key} {self.status}"


class StagedChunk(models.Model):
    """A piece of an upload waiting for its import job (POST …/sessions/import/ above
    SESSION_IMPORT_SYNC_MAX_BYTES). In PostgreSQL, not a temp file: the web and the worker may
    run in different containers (docker-compose) or on different hosts, and the database is the
    one store both reach; the rows go with the job's transaction, so a failed upload leaves
    none. Deleted when the job succeeds or fails for good."""

    class Part(models.TextChoices):
        TRANSCRIPT = "transcript"
        META = "meta"  # a MewCode .meta

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="+")
    part = models.CharField(max_length=10, choices=Part.choices)
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "part", "seq"], name="staged_chunk_order")
        ]

    def __str__(self) -> str:
        return f"{self.job_id}:{self.part}:{self.seq}"


class Stage1Output(models.Model):
    """oh-my-pi's stage-1 result for one session: the inputs of consolidation."""

    session = models.OneToOneField(
        "agent_sessions.AgentSession", on_delete=models.CASCADE, related_name="+"
    )
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    rollout_summary = models.TextField(blank=True)
    rollout_slug = models.CharField(max_length=64, blank=True)
    raw_memory = models.TextField(blank=True)
    source_watermark = models.BigIntegerField(default=0)
    # The newest extraction's range starts at record last_start and its raw memory at
    # raw_memory[last_offset:]: a repeat of that range replaces it rather than adding it twice.
    last_start = models.BigIntegerField(default=0)
    last_offset = models.PositiveIntegerField(default=0)
    generated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # Consolidation reads a project's newest outputs.
        indexes = [models.Index(fields=["project", "-generated_at"])]

    def __str__(self) -> str:
        return f"stage1 of {self.session_id}"
