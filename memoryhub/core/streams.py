"""Reading request bodies line by line without `readline`.

Under the ASGI server (memoryhub/asgi.py: Django's WSGI app behind a2wsgi) the body's
`readline(limit)` answers b"" whenever nothing is buffered yet, and Django's LimitedStream
always passes a limit: `readline` and `for line in stream` saw an empty body. `read(n)` works
the same under every server (the transcript import reads its body that way), so lines are cut
from chunks here. Memory stays at one chunk plus the line being assembled; the body's length
is still bounded by the request's Content-Length (LimitedStream, ApiBodySizeLimitMiddleware).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

CHUNK_BYTES = 64 * 1024


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


def iter_lines(stream: Readable, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The lines of `stream` as `readline` gives them: each with its b"\\n", the last one
    without when the body does not end in one; blank lines included (they count as lines)."""
    pending = bytearray()  # the start of a line that continues in the next chunk
    while chunk := stream.read(chunk_bytes):
        *complete, rest = chunk.split(b"\n")
        if complete:
            pending += complete[0]
            yield bytes(pending) + b"\n"
            pending.clear()
            for line in complete[1:]:
                yield line + b"\n"
        pending += rest
    if pending:
        yield bytes(pending)
