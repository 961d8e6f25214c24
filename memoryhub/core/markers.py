"""Markers shared by what MemoryHub injects into agents and what it ingests back from them.

One implementation of "does this carry an injected block?" serves ingestion (the
`contains_injection` flag of a stored record) and the extractor (which must never learn what
MemoryHub itself injected), so the two cannot disagree.
"""

from __future__ import annotations

import re
from typing import Any

# Every injection payload is wrapped in this tag. When an agent's transcript comes back with
# the block still in it, ingestion flags the record so extraction never re-learns our output.
INJECTION_TAG = "memoryhub-context"
INJECTION_OPEN = f"<{INJECTION_TAG}>"
INJECTION_CLOSE = f"</{INJECTION_TAG}>"

# An unclosed block runs to the end of the text: we cannot tell where our part ended.
_INJECTED = re.compile(
    re.escape(INJECTION_OPEN) + r".*?(?:" + re.escape(INJECTION_CLOSE) + r"|\Z)", re.DOTALL
)


def contains_injection(value: Any) -> bool:
    """Whether any string in a decoded JSON value (keys included) holds the opening marker."""
    if isinstance(value, str):
        return INJECTION_OPEN in value
    if isinstance(value, list | tuple):
        return any(contains_injection(item) for item in value)
    if isinstance(value, dict):
        return any(contains_injection(k) or contains_injection(v) for k, v in value.items())
    return False


def strip_injections(text: str) -> str:
    """`text` without the blocks MemoryHub injected (an unclosed block runs to the end)."""
    return _INJECTED.sub(" ", text)
