from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class User(AbstractUser):
    """A person on the team. Agents act as a person through that person's ApiTokens."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)


class ApiToken(models.Model):
    """An agent credential. The plain token is shown once; only prefix + HMAC are stored."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tokens"
    )
    name = models.CharField(max_length=100)
    # Lookup key: the scheme prefix plus the first random characters; not secret on its own.
    prefix = models.CharField(max_length=16, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="When set, the token can only see this project.",
    )
    read_only = models.BooleanField(default=False)
    # The token that minted this one, if any: revoking it revokes this one too.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Not a column: the owner's membership of the request's project, read with the token by
    # selectors.token_find_usable and used once by projects.selectors.project_access.
    prefetched_access: Any = None

    class Meta:
        # Serves the owner's token list, newest first.
        indexes = [models.Index(fields=["user", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    @property
    def status(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"
