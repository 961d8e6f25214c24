"""Memory text inside the wrappers MemoryHub puts around it.

Payloads, recall blocks and artifacts place text that any member wrote inside wrapper tags
(``<memoryhub-context>``, MewCode's ``<system-reminder>``, …). A memory holding
``</memoryhub-context></system-reminder>`` would end the wrapper early and put what follows
into teammates' prompts as if the system had said it. neutralize() swaps the angle brackets of
every wrapper-like tag for look-alikes (‹ ›): the text still reads the same to a person or a
model, nothing can close a wrapper, and the length is unchanged, so budgets computed on the
raw text stay exact.
"""

from __future__ import annotations

import math
import re

from memoryhub.core.markers import INJECTION_TAG

# Tags that agents and MemoryHub use as prompt wrappers or role markers.
WRAPPER_TAGS = (
    INJECTION_TAG,
    "system-reminder",
    "system",
    "instructions",
    "user-prompt-submit-hook",
    "function_results",
)
# A tag name ends at whitespace, "/", ">" or the end ("List<System.String>" is no tag).
_NAME = r"\s*/?\s*(?:" + "|".join(re.escape(t) for t in WRAPPER_TAGS) + r")(?=[\s/>]|$)"
_TAG = re.compile(r"<(" + _NAME + r"[^<>]{0,200})>", re.IGNORECASE)
_OPEN_ONLY = re.compile(r"<(?=" + _NAME + ")", re.IGNORECASE)


def neutralize(text: str) -> str:
    """`text` with every wrapper tag (opening, closing, or cut off before its ">") made inert;
    same length, same text otherwise."""
    if "<" not in text:
        return text
    return _OPEN_ONLY.sub("‹", _TAG.sub(r"‹\1›", text))


TRUNCATION_MARKER = "\n\n...[truncated]...\n\n"  # oh-my-pi truncateByApproxTokens
HEAD_SHARE = 0.6


def truncate_middle(text: str, max_chars: int) -> str:
    """oh-my-pi's truncateByApproxTokens, in characters: over `max_chars`, the first 60 % and
    the last 40 % of `max_chars` around the truncation marker. The one implementation: the
    payloads, the stage-1 prompts and the consolidation prompt all cut with it."""
    if len(text) <= max_chars:
        return text
    head = math.floor(max_chars * HEAD_SHARE)
    tail = max_chars - head
    return text[:head] + TRUNCATION_MARKER + text[len(text) - tail :]
