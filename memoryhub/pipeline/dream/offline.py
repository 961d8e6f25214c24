"""The offline provider's answer to a round: deterministic rules over the round's active
memories; nothing is summarised offline.

  * done todo → stale: a project/todo memory is marked stale when a later sentence of the window
    (user or assistant text after the todo's record range, or after its creation when it comes
    from elsewhere; or a non-todo memory in the window's scope created after it) says it is
    done — done/finished/fixed/merged/completed/resolved, 完成/已解决/已修复/搞定/已合并 — without
    negation, condition or question, and shares ≥ 2 bank-tokenizer terms with the todo (the
    "done" words themselves not counted);
  * contradiction → archive the older: of two memories of one kind, scope/owner (and
    subcategory for project memories) where memories.services.contradicts(older, newer) holds,
    the older (by updated_at) is archived with superseded_by = the newer; todos are tasks, not
    claims, and are left to the other rules;
  * near-duplicates → archive the older: the same groups, bigram-set Jaccard ≥ 0.6; the kept
    memory takes the higher importance (as memory_remember's merge does);
  * project round: subcategories with more than 8 active entries are reported in the notes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from memoryhub.memories import similarity, text
from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.memories.models import Memory
from memoryhub.memories.services import contradicts
from memoryhub.pipeline.dream.operations import IMPORTANCE_MAX
from memoryhub.pipeline.dream.window import MARKER_TERMS, Window, done_sentences

DUPLICATE_JACCARD = 0.6
CONDENSE_ABOVE = 8  # project round: a subcategory with more entries needs condensing


def _is_todo(memory: Memory) -> bool:
    return memory.kind == Kind.PROJECT and memory.subcategory == Subcategory.TODO


def _short(memory: Memory) -> str:
    return str(memory.public_id)[:8]


def done_evidence(todo: Memory, window: Window, evidence: Iterable[Memory]) -> str | None:
    """Why `todo` is done, quoting the window, or None (module docstring: "done todo")."""
    terms = frozenset(text.tokenize(f"{todo.title}\n{todo.content}")) - MARKER_TERMS
    if len(terms) < 2:
        return None
    own_range = (
        todo.source_session == window.session.external_id and todo.source_record_end is not None
    )
    for item in window.texts:
        later = (
            item.index > (todo.source_record_end or 0)
            if own_range
            else item.created_at > todo.created_at
        )
        if not later:
            continue
        for sentence in item.sentences:
            if len(sentence.terms & terms) >= 2:
                return f"record #{item.index} of the session says: {sentence.text[:200]}"
    for memory in evidence:
        if memory.pk == todo.pk or _is_todo(memory) or memory.created_at <= todo.created_at:
            continue
        for sentence in done_sentences(memory.content):
            if len(sentence.terms & terms) >= 2:
                return f"memory {_short(memory)} says: {sentence.text[:200]}"
    return None


def _groups(memories: Iterable[Memory]) -> dict[tuple[Any, ...], list[Memory]]:
    groups: dict[tuple[Any, ...], list[Memory]] = {}
    for memory in memories:
        key = (memory.kind, memory.scope, memory.owner_id, memory.subcategory)
        groups.setdefault(key, []).append(memory)
    return groups


def _newest_first(memory: Memory) -> tuple[datetime, datetime, int]:
    return (memory.updated_at, memory.created_at, memory.pk)


def offline_operations(name: str, memories: Sequence[Memory], window: Window) -> dict[str, Any]:
    """The offline provider's answer for one round (see the module docstring)."""
    operations: list[dict[str, Any]] = []
    notes: list[str] = []
    active = [m for m in memories if m.status == Memory.Status.ACTIVE]
    removed: set[int] = set()
    for todo in (m for m in active if _is_todo(m)):
        reason = done_evidence(todo, window, window.initial_scope)
        if reason:
            operations.append({"op": "stale", "id": str(todo.public_id), "reason": reason})
            removed.add(todo.pk)
    raised: dict[int, tuple[Memory, int]] = {}
    for group in _groups(m for m in active if m.pk not in removed).values():
        group.sort(key=_newest_first, reverse=True)
        for position, newer in enumerate(group):
            if newer.pk in removed:
                continue
            for older in group[position + 1 :]:
                if older.pk in removed:
                    continue
                if not _is_todo(newer) and contradicts(older.content, newer.content):
                    reason = f"Contradicted by the newer memory {_short(newer)}."
                elif similarity.jaccard(older.content, newer.content) >= DUPLICATE_JACCARD:
                    reason = f"Near-duplicate of the newer memory {_short(newer)}."
                    importance = min(older.importance, IMPORTANCE_MAX)
                    if importance > raised.get(newer.pk, (newer, newer.importance))[1]:
                        raised[newer.pk] = (newer, importance)
                else:
                    continue
                operations.append(
                    {
                        "op": "archive",
                        "id": str(older.public_id),
                        "reason": reason,
                        "superseded_by": str(newer.public_id),
                    }
                )
                removed.add(older.pk)
    for memory, importance in raised.values():
        operations.append({"op": "update", "id": str(memory.public_id), "importance": importance})
    if name == "project":
        counts: dict[str, int] = {}
        for memory in active:
            if memory.pk not in removed:
                counts[memory.subcategory or "-"] = counts.get(memory.subcategory or "-", 0) + 1
        for subcategory, count in sorted(counts.items()):
            if count > CONDENSE_ABOVE:
                notes.append(
                    f"project/{subcategory} has {count} active entries (more than "
                    f"{CONDENSE_ABOVE}): condense it (the offline provider writes no summaries)."
                )
    return {"operations": operations, "notes": notes}
