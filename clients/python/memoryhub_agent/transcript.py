"""Reading an agent's transcript file (.jsonl) from a given line."""

from __future__ import annotations

CHUNK_LINES = 200
CHUNK_BYTES = 4 * 1024 * 1024  # the server takes 16 MiB per request by default


def read_lines(path: str, *, start: int, final: bool) -> list[bytes]:
    """Lines `start`… (1-based) of the file, each with its newline.

    A last line without its newline is still being written by the agent: it is left for the
    next push, unless `final` (the agent is done with the file).
    """
    lines: list[bytes] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number < start:
                continue
            if not line.endswith(b"\n"):
                if not final:
                    break
                line += b"\n"
            lines.append(line)
    return lines


def take(lines: list[bytes], max_lines: int, max_bytes: int) -> list[bytes]:
    """The head of `lines` that fits one request (at least one line)."""
    size = 0
    for count, line in enumerate(lines[:max_lines]):
        size += len(line)
        if size > max_bytes and count:
            return lines[:count]
    return lines[:max_lines]
