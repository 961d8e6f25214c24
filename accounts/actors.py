"""Who performs a change: a person (browser), a person's agent token, or a system process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework.exceptions import NotAuthenticated

from accounts.models import ApiToken, User


@dataclass(frozen=True)
class Actor:
    user: User | None = None
    token: ApiToken | None = None
    # For work nobody requested directly: "pipeline", "dream", "cli", "system".
    system: str = ""

    @classmethod
    def for_system(cls, name: str, *, user: User | None = None) -> Actor:
        return cls(user=user, system=name)

    @property
    def label(self) -> str:
        if self.system:
            return self.system if self.user is None else f"{self.system}:{self.user.username}"
        if self.token is not None and self.user is not None:
            return f"{self.user.username} via token {self.token.prefix}"
        if self.user is not None:
            return self.user.username
        return "anonymous"

    @property
    def via(self) -> str:
        """How the change arrived, stored as a memory's provenance."""
        if self.system:
            return self.system
        return "token" if self.token is not None else "user"

    @property
    def read_only(self) -> bool:
        return self.token is not None and self.token.read_only

    @property
    def restricted_project_id(self) -> int | None:
        return self.token.project_id if self.token is not None else None


def actor_of(request: Any) -> Actor:
    """The actor of an API request: the person, and the token when one authenticated it."""
    token = request.auth if isinstance(request.auth, ApiToken) else None
    user = request.user if isinstance(request.user, User) else None
    return Actor(user=user, token=token)


def user_of(request: Any) -> User:
    """The authenticated person (the default permission class guarantees there is one)."""
    if not isinstance(request.user, User):
        raise NotAuthenticated()
    return request.user
