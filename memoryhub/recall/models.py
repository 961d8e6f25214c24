from __future__ import annotations

import posixpath
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext as _

from memoryhub.memories.kinds import Scope, owner_matches_scope

PATH_MAX_CHARS = 500
FILE_MAX_BYTES = 200 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


def normalize_path(value: str) -> str:
    """The canonical form of a project-relative file path ("docs/./a.md" → "docs/a.md").

    Raises ValidationError for an empty, absolute (/x, C:x, ~/x), NUL-containing or too long
    path, one that uses backslashes, and one that climbs out of the project root ("../x",
    "a/../../x").
    """
    if not value or not value.strip():
        raise ValidationError(_("The path must not be empty."))
    if len(value) > PATH_MAX_CHARS:
        raise ValidationError(_("The path has at most %(n)s characters.") % {"n": PATH_MAX_CHARS})
    if "\x00" in value:
        raise ValidationError(_("The path must not contain NUL."))
    if "\\" in value:
        raise ValidationError(_("Use forward slashes in paths."))
    if value.startswith(("/", "~")) or _DRIVE.match(value):
        raise ValidationError(_("The path must be relative to the project root."))
    normalized = posixpath.normpath(value)
    if normalized == "." or normalized == ".." or normalized.startswith("../"):
        raise ValidationError(_("The path must stay inside the project root."))
    return normalized


def validate_path(value: str) -> None:
    if normalize_path(value) != value:
        raise ValidationError(_("The path is not in its normal form (no ./, // or ..)."))


def validate_file_size(value: str) -> None:
    size = len(value.encode())
    if size > FILE_MAX_BYTES:
        raise ValidationError(
            _("The file is %(size)s bytes; the limit is %(limit)s.")
            % {"size": size, "limit": FILE_MAX_BYTES}
        )


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


class ProjectFile(models.Model):
    """A file of a project's tree, or one person's own (owner): instruction and recall files."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    path = models.CharField(max_length=PATH_MAX_CHARS, validators=[validate_path])
    content = models.TextField(blank=True, validators=[validate_file_size])
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True


class InstructionFile(ProjectFile):
    """One MEWCODE.md-layer file (seed 000 §1.5).

    Project files (owner NULL) are the project tree: root MEWCODE.md, .mewcode/MEWCODE.md and
    whatever they @include. A file with an owner is that user's own instruction file (the
    ~/.mewcode/MEWCODE.md layer): one per user and project, visible only to its owner.
    """

    USER_FILE_PATH = "MEWCODE.md"

    class Meta:
        constraints = [
            # Also the index of the list endpoint and of @include lookups (project, path).
            models.UniqueConstraint(
                fields=["project", "path"],
                condition=models.Q(owner__isnull=True),
                name="instruction_project_path_unique",
            ),
            models.UniqueConstraint(
                fields=["project", "owner"],
                condition=models.Q(owner__isnull=False),
                name="instruction_one_user_file",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}:{self.path}" + (
            f" (user {self.owner_id})" if self.owner_id else ""
        )

    def snapshot(self) -> dict[str, object]:
        """What the audit log keeps of a version (not the content: up to 200 KB)."""
        return {
            "path": self.path,
            "scope": Scope.USER if self.owner_id else Scope.PROJECT,
            "bytes": len(self.content.encode()),
        }


class RecallFile(ProjectFile):
    """A directory memory: a Claude Code-style .md file with name/description/type frontmatter
    (seed 000 §1.4), user-level (owner only) or project-level.

    name, description and type are parsed from the first 30 lines when the file is written;
    updated_at is the file's mtime as the agent reported it (its age is shown to agents).
    """

    class Type(models.TextChoices):
        USER = "user"
        FEEDBACK = "feedback"
        PROJECT = "project"
        REFERENCE = "reference"

    NAME_MAX_CHARS = 200
    DESCRIPTION_MAX_CHARS = 1000
    INDEX_NAME = "MEMORY.md"  # the directory's index: stored, never a recall candidate

    scope = models.CharField(max_length=8, choices=Scope.choices)
    name = models.CharField(max_length=NAME_MAX_CHARS, blank=True)
    description = models.CharField(max_length=DESCRIPTION_MAX_CHARS, blank=True)
    type = models.CharField(max_length=10, choices=Type.choices, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=owner_matches_scope(), name="recall_file_owner_matches_scope"
            ),
            models.UniqueConstraint(
                fields=["project", "path"],
                condition=models.Q(scope=Scope.PROJECT),
                name="recall_file_project_path_unique",
            ),
            models.UniqueConstraint(
                fields=["project", "owner", "path"],
                condition=models.Q(scope=Scope.USER),
                name="recall_file_user_path_unique",
            ),
        ]
        indexes = [
            # Selector candidates: a project's newest files (the caller's user files + project
            # files), at most 200.
            models.Index(fields=["project", "-updated_at"], name="recall_file_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.scope}:{self.path}"

    @property
    def basename(self) -> str:
        return posixpath.basename(self.path)

    def clean(self) -> None:
        if not self.path.endswith(".md"):
            raise ValidationError({"path": _("Recall files are .md files.")})

    def snapshot(self) -> dict[str, object]:
        """What the audit log keeps of a version (not the content)."""
        return {
            "path": self.path,
            "scope": self.scope,
            "name": self.name,
            "type": self.type,
            "bytes": len(self.content.encode()),
            "updated_at": self.updated_at.isoformat(),
        }


class RecallSurfaced(models.Model):
    """A recall file a session has already been shown. Like RecallSeen, rows older than the
    session's last compact boundary no longer count."""

    session = models.ForeignKey(
        "agent_sessions.AgentSession", on_delete=models.CASCADE, related_name="+"
    )
    recall_file = models.ForeignKey(RecallFile, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "recall_file"], name="recall_surfaced_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.session_id} surfaced {self.recall_file_id}"
