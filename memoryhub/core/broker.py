"""The embedded default's broker: kombu's filesystem transport, made to stop promptly and to
publish a message whole.

Celery's worker drives transports without an event loop (this one) through `synloop`, which
calls `drain_events(timeout=2.0)` and checks for a shutdown only between calls — and, because
the check sits in a `try/finally`, runs one more full call after it. kombu's virtual
transports keep polling (sleeping `polling_interval`, 1 s) until that timeout has passed, so
a SIGTERM waited 4–6 s for the loop alone. Short drains let the loop see the shutdown within
a poll; the queue folder is listed every 0.2 s instead of every second, which also picks new
tasks up sooner.

kombu creates a message's file and then writes it. A worker listing the folder in between
moved the still empty file away, failed to decode it and stopped consuming (seen once in a
`make run` smoke test, with the worker polling 5 times a second): the message is now written
under a name consumers skip and renamed into place in one step.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu import Connection
from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

POLL_SECONDS = 0.2
UNFINISHED = ".part"  # consumers take only names ending in ".<queue>.msg"


class FilesystemChannel(filesystem.Channel):
    # kombu's stubs disagree with themselves here too (filesystem vs the virtual base)
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        # kombu's name (milliseconds, uuid, queue: consumers take files in name order), written
        # whole under another name first
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        path = os.path.join(self.data_folder_out, name)
        try:
            with open(path + UNFINISHED, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(path + UNFINISHED, path)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {path!r} to directory") from exc


class FilesystemTransport(filesystem.Transport):
    Channel = FilesystemChannel
    polling_interval = POLL_SECONDS

    # The stubs of kombu's two base classes disagree on this signature; this is the virtual one.
    def drain_events(self, connection: Connection, timeout: float | None = None) -> None:  # type: ignore[override]
        if timeout is not None:
            timeout = min(timeout, POLL_SECONDS)
        super().drain_events(connection, timeout=timeout)


def register() -> None:
    """`filesystem://` URLs resolve to this transport (in the worker and in every sender)."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:FilesystemTransport"
