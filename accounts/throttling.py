"""API rate limits: one bucket per agent token and one per person (all their tokens and their
browser session together), counted in the "throttle" cache — Redis when REDIS_URL is set, so
every gunicorn worker shares the count; per process on the embedded default.

Over a limit DRF answers 429 with Retry-After, in the error envelope. Limits come from
API_TOKEN_RATE_LIMIT and API_USER_RATE_LIMIT ("1200/min"; "off" disables one).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.models import ApiToken

logger = logging.getLogger(__name__)


class _ConfiguredThrottle(SimpleRateThrottle):
    setting_name = ""

    def __init__(self) -> None:
        # Read at request time (not import time) so tests and deployments can change it.
        self.cache = caches["throttle"]
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)

    def get_rate(self) -> str | None:
        rate: str | None = getattr(settings, self.setting_name)
        return rate

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # the counter's store (Redis) is down: fail open
            # Agents must keep working through a Redis outage; limits resume when it is back.
            logger.warning("Rate limit not applied, throttle cache unavailable: %s", exc)
            return True


class TokenRateThrottle(_ConfiguredThrottle):
    scope = "token"
    setting_name = "API_TOKEN_RATE_LIMIT"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class UserRateThrottle(_ConfiguredThrottle):
    scope = "user"
    setting_name = "API_USER_RATE_LIMIT"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        user = request.user
        if user is None or not user.is_authenticated:
            return None  # anonymous requests get 401 anyway
        return self.cache_format % {"scope": self.scope, "ident": user.pk}
