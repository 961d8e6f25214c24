from __future__ import annotations

import json
import uuid
import zoneinfo

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

PROJECT_SETTINGS_MAX_BYTES = 16 * 1024

slug_validator = RegexValidator(
    r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$",
    "Use 1–64 lowercase letters, digits and hyphens, starting and ending with a letter or digit.",
)


def validate_timezone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(f"{value!r} is not an IANA time zone name.")


def validate_settings(value: object) -> None:
    if not isinstance(value, dict):
        raise ValidationError("settings must be a JSON object.")
    if len(json.dumps(value)) > PROJECT_SETTINGS_MAX_BYTES:
        raise ValidationError(f"settings must be at most {PROJECT_SETTINGS_MAX_BYTES} bytes.")


class Role(models.TextChoices):
    OWNER = "owner"
    MAINTAINER = "maintainer"
    MEMBER = "member"
    VIEWER = "viewer"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Role.VIEWER: 1, Role.MEMBER: 2, Role.MAINTAINER: 3, Role.OWNER: 4}


class Project(models.Model):
    """A team's memory bank: memories, transcripts and artifacts all hang off a project."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slug = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, max_length=5000)
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])
    # Per-project overrides of pipeline / recall knobs; validated by the apps that read them.
    settings = models.JSONField(default=dict, blank=True, validators=[validate_settings])
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.slug

    def to_dict(self) -> dict[str, object]:
        return {
            "slug": self.slug,
            "name": self.name,
            "description": self.description,
            "timezone": self.timezone,
            "settings": self.settings,
        }


class ProjectMembership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user"),
        ]
        # (user) is covered by the FK index: serves "projects I belong to".

    def __str__(self) -> str:
        return f"{self.user_id}@{self.project_id}:{self.role}"

    @property
    def rank(self) -> int:
        return Role(self.role).rank
