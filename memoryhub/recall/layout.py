"""Layout and budget of the injection payloads: nested blocks whose rendered length is known
before anything is rendered, a budget that keeps a strict head of the priority order, and the
payload they assemble (text, named sections, which memories went in)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories.markup import TRUNCATION_MARKER, truncate_middle
from memoryhub.recall.selectors import Entry
from memoryhub.sessions.conversation import CHARS_PER_TOKEN

MIN_DOCUMENT_CHARS = 200  # a document cut shorter than this is left out instead
MIN_LINE_CHARS = 3  # "- x"


def estimate_tokens(text: str) -> int:
    """The injection subsystem's estimate: MewCode's chars / 3.5 (seed §1.2)."""
    return int(len(text) / CHARS_PER_TOKEN)


def max_chars(budget_tokens: int) -> int:
    """The longest text whose estimate_tokens is within `budget_tokens`."""
    return math.ceil(CHARS_PER_TOKEN * (budget_tokens + 1)) - 1


def one_line(text: str) -> str:
    return " ".join(text.split())


def fit_document(text: str, max_chars: int) -> str:
    """`text`, cut in the middle (marker included) to at most `max_chars`, or "" when it would
    keep fewer than MIN_DOCUMENT_CHARS."""
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(TRUNCATION_MARKER)
    if keep < MIN_DOCUMENT_CHARS:
        return ""
    return truncate_middle(text, keep)


# --- layout: nested blocks whose rendered length is known before anything is rendered ---------


class Block:
    """A rendered region: `head` on its own line, then its non-empty children joined by `sep`.

    A block without children renders as nothing (its head disappears with it). Lengths are
    maintained as lines are added, so the budget check is O(depth) per entry.
    """

    def __init__(self, head: str = "", sep: str = "\n", name: str = "") -> None:
        self.head = head
        self.sep = sep
        self.name = name
        self.parent: Block | None = None
        self.children: list[Block | str] = []
        self.length = 0
        self.filled = 0

    def block(self, head: str = "", sep: str = "\n", name: str = "") -> Block:
        child = Block(head, sep, name)
        child.parent = self
        self.children.append(child)
        return child

    def _head_len(self) -> int:
        return len(self.head) + 1 if self.head else 0

    def _plan(self, chars: int) -> list[tuple[Block, int, int]]:
        """(block, new length, new filled) for this block and its ancestors if a line of
        `chars` characters were added here."""
        new_length = (
            self._head_len() + chars if not self.filled else self.length + len(self.sep) + chars
        )
        plan = [(self, new_length, self.filled + 1)]
        child, node = self, self.parent
        while node is not None:
            if not child.filled:  # the child appears: it joins its parent's children
                length = (
                    node._head_len() + new_length
                    if not node.filled
                    else node.length + len(node.sep) + new_length
                )
                plan.append((node, length, node.filled + 1))
            else:
                plan.append((node, node.length + new_length - child.length, node.filled))
            child, new_length, node = node, plan[-1][1], node.parent
        return plan

    def root(self) -> Block:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def growth(self, chars: int) -> int:
        """How much longer the whole layout gets if a line of `chars` characters is added."""
        root = self.root()
        return self._plan(chars)[-1][1] - root.length

    def add(self, line: str) -> None:
        for node, length, filled in self._plan(len(line)):
            node.length, node.filled = length, filled
        self.children.append(line)

    def render(self) -> str:
        parts = [c if isinstance(c, str) else c.render() for c in self.children]
        body = self.sep.join(p for p in parts if p)
        if not body:
            return ""
        return f"{self.head}\n{body}" if self.head else body

    def named(self) -> Iterable[Block]:
        """Named blocks in document order (the JSON sections)."""
        for child in self.children:
            if isinstance(child, Block):
                if child.name:
                    yield child
                yield from child.named()


@dataclass
class Budget:
    """Room for a layout inside `max_chars` (wrapper text included in `overhead`)."""

    root: Block
    max_chars: int
    overhead: int
    # Set by the first item that does not fit: nothing after it is added (strict priority).
    exhausted: bool = False

    def room(self, block: Block) -> int:
        """The longest line that still fits in `block`."""
        if self.exhausted:
            return 0
        return self.max_chars - self.overhead - self.root.length - block.growth(0)

    def try_add(self, block: Block, line: str) -> bool:
        if self.exhausted or len(line) > self.room(block):
            self.exhausted = True
            return False
        block.add(line)
        return True

    def add_document(self, block: Block, text: str) -> bool:
        """Add `text`, cut in the middle to the room left if need be (which ends the payload:
        there is no room after it)."""
        if not text or self.exhausted:
            return False
        fitted = fit_document(text, self.room(block))
        if fitted != text:
            self.exhausted = True
        if fitted:
            block.add(fitted)
        return bool(fitted)


# --- payload ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    token_estimate: int


@dataclass
class Payload:
    text: str = ""
    sections: list[Section] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)
    memory_pks: list[int] = field(default_factory=list)

    @property
    def token_estimate(self) -> int:
        return estimate_tokens(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "sections": [
                {"name": s.name, "text": s.text, "token_estimate": s.token_estimate}
                for s in self.sections
            ],
            "memory_ids": self.memory_ids,
            "token_estimate": self.token_estimate,
        }


def wrap(body: str) -> str:
    return f"{INJECTION_OPEN}\n{body}\n{INJECTION_CLOSE}"


WRAP_OVERHEAD = len(wrap(""))


def _blocks(root: Block) -> Iterable[Block]:
    yield root
    for child in root.children:
        if isinstance(child, Block):
            yield from _blocks(child)


class Collector:
    """Remembers which memory went into which block, for memory_ids in document order."""

    def __init__(self) -> None:
        self.placed: list[tuple[Block, Entry]] = []

    def fill(
        self, budget: Budget, block: Block, entries: Iterable[Entry], render: Callable[[Entry], str]
    ) -> None:
        for entry in entries:
            if not entry.complete or not budget.try_add(block, render(entry)):
                budget.exhausted = True
                return
            self.placed.append((block, entry))

    def payload(self, root: Block, text: str) -> Payload:
        sections = [
            Section(name=b.name, text=rendered, token_estimate=estimate_tokens(rendered))
            for b in root.named()
            if (rendered := b.render())
        ]
        position = {id(b): i for i, b in enumerate(_blocks(root))}
        # Stable sort: blocks in document order, entries of a block in the order they were added.
        placed = sorted(self.placed, key=lambda pair: position[id(pair[0])])
        payload = Payload(text=text, sections=sections)
        included: set[int] = set()
        for _, entry in placed:
            if entry.pk not in included:
                included.add(entry.pk)
                payload.memory_pks.append(entry.pk)
                payload.memory_ids.append(entry.public_id)
        return payload

    def fill_from(
        self,
        budget: Budget,
        block: Block,
        fetch: Callable[[], list[Entry]],
        render: Callable[[Entry], str],
    ) -> None:
        """fill(), querying only when the block still has room for a line."""
        if budget.room(block) < MIN_LINE_CHARS:
            budget.exhausted = True
            return
        self.fill(budget, block, fetch(), render)
