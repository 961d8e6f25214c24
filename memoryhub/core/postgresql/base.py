"""Django's PostgreSQL backend, with CONN_HEALTH_CHECKS paid only after idleness.

Django pings a reused connection (SELECT 1, a round trip) before the first query of every
request. That is what lets the server heal after PostgreSQL restarts, but a connection that
finished a request cleanly a moment ago is as good as checked, and the ping was about a third
of a small API request's time over HTTP. So a connection that served a request less than
RECENTLY_SERVED_S ago is trusted; an older one is checked as before. A request that races a
restart fails with 503 (database_unavailable, as it could anyway), and the failed
connection is closed at that request's end, so the next request reconnects.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.signals import request_finished
from django.db import connections
from django.db.backends.postgresql import base

RECENTLY_SERVED_S = 1.0


class DatabaseWrapper(base.DatabaseWrapper):
    served_at: float | None = None

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and self.served_at is not None
            and time.monotonic() - self.served_at < RECENTLY_SERVED_S
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def mark_served(self) -> None:
        """After a request's end-of-request cleanup: still open means it worked."""
        self.served_at = time.monotonic() if self.connection is not None else None


def _mark_served(**kwargs: Any) -> None:
    for connection in connections.all(initialized_only=True):
        if isinstance(connection, DatabaseWrapper):
            connection.mark_served()


# Connected after django.db's close_old_connections (imported first), so it sees the
# connection that survived the end-of-request checks.
request_finished.connect(_mark_served, dispatch_uid="memoryhub.core.postgresql.served")
