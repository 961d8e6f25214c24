"""The embedded default's broker: kombu's filesystem transport, made to stop promptly.

Celery's worker drives transports without an event loop (this one) through `synloop`, which
calls `drain_events(timeout=2.0)` and checks for a shutdown only between calls — and, because
the check sits in a `try/finally`, runs one more full call after it. kombu's virtual
transports keep polling (sleeping `polling_interval`, 1 s) until that timeout has passed, so
a SIGTERM waited 4–6 s for the loop alone. Short drains let the loop see the shutdown within
a poll; the queue folder is listed every 0.2 s instead of every second, which also picks new
tasks up sooner.
"""

from __future__ import annotations

from kombu import Connection
from kombu.transport import TRANSPORT_ALIASES, filesystem

POLL_SECONDS = 0.2


class FilesystemTransport(filesystem.Transport):
    polling_interval = POLL_SECONDS

    # The stubs of kombu's two base classes disagree on this signature; this is the virtual one.
    def drain_events(self, connection: Connection, timeout: float | None = None) -> None:  # type: ignore[override]
        if timeout is not None:
            timeout = min(timeout, POLL_SECONDS)
        super().drain_events(connection, timeout=timeout)


def register() -> None:
    """`filesystem://` URLs resolve to this transport (in the worker and in every sender)."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:FilesystemTransport"
