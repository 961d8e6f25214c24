"""Token format and hashing: `mh_rw_…` / `mh_ro_…` + 43 random URL-safe characters."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings

PREFIX_LENGTH = 14  # "mh_rw_" + 8 random characters: the indexed lookup key


def generate(*, read_only: bool) -> str:
    scheme = "mh_ro_" if read_only else "mh_rw_"
    return scheme + secrets.token_urlsafe(32)


def digest(raw: str) -> str:
    # HMAC with the server secret: a leaked database alone cannot be used to check guesses.
    return hmac.new(settings.SECRET_KEY.encode(), raw.encode(), hashlib.sha256).hexdigest()


def prefix_of(raw: str) -> str:
    return raw[:PREFIX_LENGTH]


def looks_like_token(raw: str) -> bool:
    return raw.startswith(("mh_rw_", "mh_ro_")) and len(raw) > PREFIX_LENGTH
