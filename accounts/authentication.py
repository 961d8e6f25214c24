"""DRF authentication for agent tokens (`Authorization: Bearer mh_…`) and the shared permission."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from accounts import selectors, services
from accounts.models import ApiToken, User


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        # The project in the URL: its membership is read in the token's statement.
        slug = ((getattr(request, "parser_context", None) or {}).get("kwargs") or {}).get("slug")
        token = selectors.token_find_usable(
            raw=raw.strip(), project_slug=slug if isinstance(slug, str) else None
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        services.token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return 'Bearer realm="memoryhub"'


class IsAuthenticatedWithinTokenLimits(permissions.BasePermission):
    """Authenticated, and a read-only token may only use safe methods."""

    message = "This token is read-only."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if user is None or not user.is_authenticated:
            raise exceptions.NotAuthenticated()
        token = request.auth
        if isinstance(token, ApiToken) and token.read_only:
            return request.method in permissions.SAFE_METHODS
        return True


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "mh_rw_… / mh_ro_…"}
