from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext as _

from memoryhub.core.models import ActorStamped
from memoryhub.memories.kinds import Kind, Scope, Subcategory, owner_matches_scope

METADATA_MAX_BYTES = 4096
KEYWORDS_MAX = 32
KEYWORD_MAX_CHARS = 100


def content_hash(content: str) -> str:
    """Hash of the content with whitespace and case folded: equal hashes mean duplicates."""
    normalized = " ".join(content.split()).casefold()
    return hashlib.sha256(normalized.encode()).hexdigest()


def validate_metadata(value: Any) -> None:
    if not isinstance(value, dict):
        raise ValidationError(_("Metadata must be a JSON object."))
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > METADATA_MAX_BYTES:
        raise ValidationError(
            _("Metadata is %(size)s bytes; the limit is %(limit)s.")
            % {"size": size, "limit": METADATA_MAX_BYTES}
        )


def validate_keywords(value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise ValidationError(_("Keywords must be a list of strings."))
    if len(value) > KEYWORDS_MAX:
        raise ValidationError(_("A memory has at most %(n)s keywords.") % {"n": KEYWORDS_MAX})
    if any(len(k) > KEYWORD_MAX_CHARS for k in value):
        raise ValidationError(
            _("A keyword has at most %(n)s characters.") % {"n": KEYWORD_MAX_CHARS}
        )


class Memory(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed"  # waiting for review; never injected
        ACTIVE = "active"
        STALE = "stale"  # outdated or done; still searchable, ranked as history
        ARCHIVED = "archived"  # withdrawn; kept for audit, hidden by default

    class Via(models.TextChoices):
        USER = "user"
        TOKEN = "token"
        PIPELINE = "pipeline"
        DREAM = "dream"
        IMPORT = "import"
        CLI = "cli"
        SYSTEM = "system"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # No index of its own: every index below starts with the project (one less per insert).
    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="memories", db_index=False
    )
    scope = models.CharField(max_length=8, choices=Scope.choices)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    subcategory = models.CharField(max_length=16, choices=Subcategory.choices, blank=True)
    goal = models.CharField(max_length=500, blank=True)
    title = models.CharField(max_length=200, blank=True)
    content = models.TextField()
    keywords = models.JSONField(default=list, blank=True, validators=[validate_keywords])
    importance = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.CharField(max_length=1000, blank=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    metadata = models.JSONField(default=dict, blank=True, validators=[validate_metadata])
    # Provenance: which agent session (its external id) and record range it came from, and who.
    source_session = models.CharField(max_length=200, blank=True)
    source_record_start = models.PositiveIntegerField(null=True, blank=True)
    source_record_end = models.PositiveIntegerField(null=True, blank=True)
    created_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_token = models.ForeignKey(
        "accounts.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_via = models.CharField(max_length=10, choices=Via.choices)
    # Defaults rather than auto_now: imports keep the timestamps of the system they came from.
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    hit_count = models.PositiveIntegerField(default=0)
    content_hash = models.CharField(max_length=64, editable=False)
    # Number of index terms (BM25's document length); maintained with the postings.
    term_count = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(
                condition=owner_matches_scope(), name="memory_owner_matches_scope"
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=1), name="memory_importance_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(subcategory="") | models.Q(kind=Kind.PROJECT),
                name="memory_subcategory_only_for_project",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(source_record_start__isnull=True)
                    | models.Q(source_record_end__isnull=True)
                    | models.Q(source_record_end__gte=models.F("source_record_start"))
                ),
                name="memory_record_range_ordered",
            ),
        ]
        indexes = [
            # The list endpoint: newest first within a project, filtered by status and kind.
            models.Index(fields=["project", "status", "kind", "-updated_at"]),
            models.Index(fields=["project", "-updated_at"]),
            # Injection payloads: a kind's active memories, most important first.
            models.Index(
                fields=["project", "status", "kind", "-importance", "-updated_at", "-id"],
                name="memory_injection_order",
            ),
            # Exact-duplicate lookup on write (pipeline merge, imports).
            models.Index(fields=["project", "content_hash"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.title or self.content[:40]}"

    def clean(self) -> None:
        """The Meta constraints' invariants, checked in Python: the services skip Django's
        constraint validation, which costs one query per constraint per memory."""
        errors: dict[str, str] = {}
        if self.goal and self.kind != Kind.TOPIC:
            errors["goal"] = _("Only topic memories have a goal.")
        if self.subcategory and self.kind != Kind.PROJECT:
            errors["subcategory"] = _("Only project memories have a subcategory.")
        if self.scope == Scope.USER and self.owner_id is None:
            errors["scope"] = _("A user-scope memory needs an owner.")
        if self.scope == Scope.PROJECT and self.owner_id is not None:
            errors["scope"] = _("A project-scope memory has no owner.")
        if isinstance(self.importance, int) and self.importance < 1:
            errors["importance"] = _("Importance must be at least 1.")
        if (
            self.source_record_start is not None
            and self.source_record_end is not None
            and self.source_record_end < self.source_record_start
        ):
            errors["source"] = _("record_end must be >= record_start.")
        if len(self.content) > settings.MEMORY_MAX_CONTENT_CHARS:
            errors["content"] = _("Content has at most %(n)s characters.") % {
                "n": settings.MEMORY_MAX_CONTENT_CHARS
            }
        if not self.content.strip():
            errors["content"] = _("Content must not be blank.")
        if errors:
            raise ValidationError(errors)

    def snapshot(self) -> dict[str, Any]:
        """The editable state, as stored in MemoryEvent.before/after."""
        return {
            "scope": self.scope,
            "kind": self.kind,
            "subcategory": self.subcategory,
            "goal": self.goal,
            "title": self.title,
            "content": self.content,
            "keywords": list(self.keywords),
            "importance": self.importance,
            "status": self.status,
            "status_reason": self.status_reason,
            "superseded_by": str(self.superseded_by.public_id) if self.superseded_by else None,
            "metadata": self.metadata,
        }


class MemoryEvent(ActorStamped):
    """Audit row for every change to a memory, written in the same transaction as the change."""

    # Indexed by (memory, created_at) below.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    verb = models.CharField(max_length=32)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # Serves a memory's history, oldest first.
        indexes = [models.Index(fields=["memory", "created_at"])]

    def __str__(self) -> str:
        return f"{self.actor_label} {self.verb} memory {self.memory_id}"


class MemoryTerm(models.Model):
    """Inverted index of the bank: one posting per (memory, term) with its frequency.

    Written by the memory services in the same transaction as the memory, so search never sees
    a memory without its postings. Terms come from memoryhub.memories.text.tokenize over the
    title, content and keywords.
    """

    # Indexed by memoryterm_by_memory below. No constraints in the database: its triggers
    # (migration 0007) check what they checked once per statement instead of once per posting
    # (a bulk import writes ~15 postings per memory), and delete a memory's postings with it.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    # Indexed by memoryterm_postings below.
    project = models.ForeignKey(
        "projects.Project",
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    term = models.CharField(max_length=64)
    tf = models.PositiveSmallIntegerField()

    class Meta:
        indexes = [
            # The postings of a query's terms within one project (near-duplicate candidates,
            # the in-memory engine's load). Every column read is a key (not INCLUDE, which
            # SQLite lacks) so scans are index-only.
            models.Index(fields=["project", "term", "memory", "tf"], name="memoryterm_postings"),
            # A memory's postings (rewrites, deletes, the engine's refresh of changed memories).
            models.Index(fields=["memory", "term", "tf"], name="memoryterm_by_memory"),
        ]

    def __str__(self) -> str:
        return f"{self.term}×{self.tf} in {self.memory_id}"


class BankArtifact(models.Model):
    """A document the bank derives from its memories (seed 003 stage 2): MEMORY.md,
    memory_summary.md and skills/<name>/SKILL.md with its scripts, templates and examples.

    Written only through memoryhub.memories.artifacts (path validation, versioning, audit);
    served to agents as memory://root/<path>.
    """

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="artifacts"
    )
    # Relative, validated by memoryhub.memories.artifacts.validate_artifact_path.
    path = models.CharField(max_length=512)
    content = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)  # +1 per change of content
    content_hash = models.CharField(max_length=64)  # sha256 of the exact content
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=200)  # the actor's label

    class Meta:
        constraints = [
            # Also the index of every read: one artifact by (project, path) for memory:// and the
            # injection payloads, and a project's artifacts in path order for listings.
            models.UniqueConstraint(fields=["project", "path"], name="bank_artifact_unique_path"),
        ]

    def __str__(self) -> str:
        return f"{self.path} v{self.version}"


class BankVersion(models.Model):
    """A project bank's change counter, bumped by database triggers (migration 0006) in the
    transaction of every statement that changes a memory or its postings, whatever the code
    path (services, cascades, restores). Readers that keep a copy of the bank in memory
    (memoryhub.recall.engine) compare it with the version they hold.

    No foreign key: the triggers write it while a project and its memories are being deleted.
    """

    project_id = models.BigIntegerField(primary_key=True)
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"bank {self.project_id} v{self.version}"


class BankChange(models.Model):
    """The version at which each memory of a bank last changed (or was deleted): one row per
    memory, so a reader at version v re-reads only the memories with version > v."""

    project_id = models.BigIntegerField()
    memory_id = models.BigIntegerField()
    version = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project_id", "memory_id"], name="bank_change_memory")
        ]
        indexes = [models.Index(fields=["project_id", "version"], name="bank_change_since")]

    def __str__(self) -> str:
        return f"memory {self.memory_id} of bank {self.project_id} at v{self.version}"
