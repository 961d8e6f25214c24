"""The contract of a round's answer, and its application as the actor "dream".

Answer: {"operations": [...], "notes": [str, ...]} with operations
  {"op": "update", "id", "content"?, "title"?, "importance"?, "keywords"?, "subcategory"?,
   "goal"?}
  {"op": "stale", "id", "reason", "superseded_by"?}
  {"op": "archive", "id", "reason", "superseded_by"?}
  {"op": "create", "kind", "content", "title"?, "keywords", "importance", "subcategory"?,
   "goal"?, "ref"?}
validated by validate_operations (ids must belong to the round's scope, kinds to the round,
superseded_by names an id in scope or the "ref" of a create of the same answer).

Applied in the order creates (memory_remember, so a near-copy merges), updates (memory_update,
verb "dream_update"), then stale/archive (memory_set_status); an operation whose memory has
meanwhile reached that status is skipped and reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.memories.kinds import DEFAULT_SCOPE, Kind, Scope, Subcategory, resolve_kind
from memoryhub.memories.models import KEYWORDS_MAX, Memory
from memoryhub.memories.services import (
    MemoryInput,
    memory_remember,
    memory_set_status,
    memory_update,
)
from memoryhub.pipeline.conf import review_required
from memoryhub.pipeline.dream.window import ROUND_KINDS, Window

DREAM = "dream"
OPERATIONS_MAX = 200
LOG_MAX = 100  # operations listed per round in the job's detail
IMPORTANCE_MAX = 10  # the prompt asks for 1–4 (meow's soft scale); stored values may be higher


def dream_actor() -> Actor:
    return Actor.for_system(DREAM)


@dataclass(frozen=True)
class Operation:
    op: str
    id: str = ""  # update / stale / archive: the public id of a memory in the round's scope
    ref: str = ""  # create: a name superseded_by may use within the same answer
    changes: dict[str, Any] = field(default_factory=dict)  # update: fields; create: the memory
    reason: str = ""
    superseded_by: str = ""  # a public id in scope, or a create's ref


@dataclass(frozen=True)
class Plan:
    operations: list[Operation]
    notes: list[str]


_OP_KEYS = {
    "update": ({"id"}, {"content", "title", "importance", "keywords", "subcategory", "goal"}),
    "stale": ({"id", "reason"}, {"superseded_by"}),
    "archive": ({"id", "reason"}, {"superseded_by"}),
    "create": (
        {"kind", "content", "keywords", "importance"},
        {"title", "subcategory", "goal", "ref"},
    ),
}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _string(item: Mapping[str, Any], key: str, where: str, *, limit: int = 0) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} must be a string, got {_type_name(value)}")
    value = value.strip()
    if limit and len(value) > limit:
        raise ValueError(f"{where}.{key} has {len(value)} characters; at most {limit}")
    return value


def _required(item: Mapping[str, Any], key: str, where: str, *, limit: int = 0) -> str:
    value = _string(item, key, where, limit=limit)
    if not value:
        raise ValueError(f"{where}.{key} must not be empty")
    return value


def _importance(item: Mapping[str, Any], where: str) -> int:
    value = item["importance"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.importance must be an integer, got {_type_name(value)}")
    if not 1 <= value <= IMPORTANCE_MAX:
        raise ValueError(f"{where}.importance must be 1 to 4 (at most {IMPORTANCE_MAX})")
    return value


def _keywords(item: Mapping[str, Any], where: str) -> list[str]:
    value = item["keywords"]
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}.keywords must be a non-empty list of strings")
    if len(value) > KEYWORDS_MAX:
        raise ValueError(f"{where}.keywords has {len(value)} entries; at most {KEYWORDS_MAX}")
    if not all(isinstance(k, str) and k.strip() and len(k) <= 100 for k in value):
        raise ValueError(f"{where}.keywords must be non-empty strings of at most 100 characters")
    return [k.strip() for k in value]


def _resolve(value: Any, scope: Mapping[str, Memory], where: str) -> str:
    """A public id of the round's scope from the model's spelling (full, or a unique prefix of
    at least 8 characters)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be the id of a memory listed in this round")
    wanted = value.strip().lower()
    if wanted in scope:
        return wanted
    matches = [key for key in scope if len(wanted) >= 8 and key.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"{where} {value!r} is not the id of a memory listed in this round")


def _memory_fields(
    item: Mapping[str, Any], where: str, kind: str, *, partial: bool
) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    limit = settings.MEMORY_MAX_CONTENT_CHARS
    if "content" in item or not partial:
        fields["content"] = _required(item, "content", where, limit=limit)
    if "title" in item:
        fields["title"] = _string(item, "title", where, limit=200)
    if "importance" in item:
        fields["importance"] = _importance(item, where)
    if "keywords" in item:
        fields["keywords"] = _keywords(item, where)
    if "subcategory" in item or (kind == Kind.PROJECT and not partial):
        subcategory = _string(item, "subcategory", where)
        if kind != Kind.PROJECT:
            raise ValueError(f"{where}.subcategory is only for project memories (this is {kind})")
        if subcategory not in Subcategory.values:
            raise ValueError(f"{where}.subcategory must be one of {', '.join(Subcategory.values)}")
        fields["subcategory"] = subcategory
    if "goal" in item:
        if kind != Kind.TOPIC:
            raise ValueError(f"{where}.goal is only for topic memories (this is {kind})")
        fields["goal"] = _string(item, "goal", where, limit=500)
    return fields


def validate_operations(
    obj: Any, *, round_name: str, scope: Mapping[str, Memory], user_scope: bool
) -> Plan:
    """A round's answer → a Plan; raises ValueError (which the LLM client repairs once).

    `scope` maps the lower-case public ids of the round's memories to them; `user_scope` says
    whether the window has a user, without whom user-scope memories cannot be created."""
    if not isinstance(obj, dict):
        raise ValueError(f'expected a JSON object {{"operations": [...]}}, got {_type_name(obj)}')
    extra = sorted(str(k) for k in obj if k not in ("operations", "notes"))
    if extra or "operations" not in obj:
        raise ValueError('the answer must be {"operations": [...], "notes": [...]} exactly')
    items = obj["operations"]
    if not isinstance(items, list) or len(items) > OPERATIONS_MAX:
        raise ValueError(f"operations must be a list of at most {OPERATIONS_MAX} objects")
    notes = obj.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ValueError("notes must be a list of strings")
    names = [
        item["ref"].strip()
        for item in items
        if isinstance(item, dict)
        and item.get("op") == "create"
        and isinstance(item.get("ref"), str)
    ]
    refs = {name for name in names if name}
    if len(refs) != len([name for name in names if name]):
        raise ValueError("two created entries have the same ref")
    operations: list[Operation] = []
    updated: set[str] = set()
    retired: set[str] = set()
    for i, item in enumerate(items):
        where = f"operations[{i}]"
        if not isinstance(item, dict) or item.get("op") not in _OP_KEYS:
            raise ValueError(f"{where} must be an object with op one of {', '.join(_OP_KEYS)}")
        op = item["op"]
        required, optional = _OP_KEYS[op]
        missing = sorted(required - set(item))
        unknown = sorted(str(k) for k in item if k not in required | optional | {"op"})
        if missing or unknown:
            raise ValueError(
                f"{where} ({op}): "
                + "; ".join(
                    part
                    for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"unexpected {', '.join(unknown)}" if unknown else "",
                    )
                    if part
                )
            )
        if op == "create":
            kind = resolve_kind(_required(item, "kind", where))
            if kind not in ROUND_KINDS[round_name]:
                raise ValueError(
                    f"{where}.kind must be one of {', '.join(ROUND_KINDS[round_name])} in the "
                    f"{round_name} round"
                )
            if DEFAULT_SCOPE[kind] == Scope.USER and not user_scope:
                raise ValueError(f"{where}: this window has no user to own a {kind} memory")
            changes = {"kind": kind, **_memory_fields(item, where, kind, partial=False)}
            ref = _string(item, "ref", where, limit=64)
            operations.append(Operation(op=op, ref=ref, changes=changes))
            continue
        target = _resolve(item["id"], scope, f"{where}.id")
        if op == "update":
            if target in updated:
                raise ValueError(f"{where}: memory {target} is updated twice")
            updated.add(target)
            changes = _memory_fields(item, where, scope[target].kind, partial=True)
            if not changes:
                raise ValueError(f"{where} (update) changes nothing")
            operations.append(Operation(op=op, id=target, changes=changes))
            continue
        if target in retired:
            raise ValueError(f"{where}: memory {target} is already marked stale or archived")
        retired.add(target)
        superseded_by = ""
        if item.get("superseded_by") not in (None, ""):
            raw = item["superseded_by"]
            if isinstance(raw, str) and raw.strip() in refs:
                superseded_by = "ref:" + raw.strip()
            else:
                superseded_by = _resolve(raw, scope, f"{where}.superseded_by")
                if superseded_by == target:
                    raise ValueError(f"{where}: a memory cannot supersede itself")
        operations.append(
            Operation(
                op=op,
                id=target,
                reason=_required(item, "reason", where, limit=900),
                superseded_by=superseded_by,
            )
        )
    return Plan(operations=operations, notes=[n.strip()[:500] for n in notes if n.strip()])


@dataclass
class RoundResult:
    name: str
    scope: int
    applied: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    touched_project: bool = False

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for entry in self.applied:
            counts[entry["op"]] = counts.get(entry["op"], 0) + 1
        return {
            "name": self.name,
            "scope": self.scope,
            "operations": counts,
            "applied": self.applied[:LOG_MAX],
            "skipped": self.skipped[:LOG_MAX],
            "notes": self.notes,
        }


_TARGET_STATUS = {"stale": Memory.Status.STALE, "archive": Memory.Status.ARCHIVED}
_ALLOWED_FROM = {
    Memory.Status.STALE: (Memory.Status.ACTIVE, Memory.Status.PROPOSED),
    Memory.Status.ARCHIVED: (Memory.Status.ACTIVE, Memory.Status.PROPOSED, Memory.Status.STALE),
}


def redacted(value: str) -> str:
    return redaction.redact(value)[0]


@transaction.atomic
def apply_plan(
    plan: Plan, *, scope: Mapping[str, Memory], window: Window, result: RoundResult
) -> None:
    """Creates, then updates, then stale/archive, all by the actor "dream", in one transaction."""
    actor = dream_actor()
    status = (
        Memory.Status.PROPOSED if review_required(window.project.settings) else Memory.Status.ACTIVE
    )
    created: dict[str, Memory] = {}
    order = {"create": 0, "update": 1, "stale": 2, "archive": 2}
    for operation in sorted(plan.operations, key=lambda o: order[o.op]):
        if operation.op == "create":
            data = MemoryInput(
                status=status, source_session=window.session.external_id, **operation.changes
            )
            writer = (
                Actor.for_system(DREAM, user=window.user)
                if DEFAULT_SCOPE[data.kind] == Scope.USER
                else actor
            )
            outcome = memory_remember(project=window.project, actor=writer, data=data)
            if operation.ref:
                created[operation.ref] = outcome.memory
            result.touched_project |= data.kind == Kind.PROJECT
            result.applied.append(
                {
                    "op": "create",
                    "id": str(outcome.memory.public_id),
                    "kind": data.kind,
                    "merged": outcome.merged,
                }
            )
            continue
        memory = Memory.objects.get(pk=scope[operation.id].pk)
        result.touched_project |= memory.kind == Kind.PROJECT
        if operation.op == "update":
            memory_update(
                memory=memory, actor=actor, changes=operation.changes, verb="dream_update"
            )
            result.applied.append(
                {"op": "update", "id": operation.id, "fields": sorted(operation.changes)}
            )
            continue
        target = _TARGET_STATUS[operation.op]
        if memory.status not in _ALLOWED_FROM[target]:
            result.skipped.append(
                {"op": operation.op, "id": operation.id, "why": f"already {memory.status}"}
            )
            continue
        successor = None
        if operation.superseded_by.startswith("ref:"):
            successor = created.get(operation.superseded_by[4:])
        elif operation.superseded_by:
            successor = scope[operation.superseded_by]
        if successor is not None and successor.pk == memory.pk:
            # The entry created to replace it was merged into it (memory_remember): it lives on.
            result.skipped.append(
                {"op": operation.op, "id": operation.id, "why": "its replacement merged into it"}
            )
            continue
        reason = redacted(operation.reason)
        memory_set_status(
            memory=memory, actor=actor, status=target, reason=reason, superseded_by=successor
        )
        entry = {"op": operation.op, "id": operation.id, "reason": reason[:300]}
        if successor is not None:
            entry["superseded_by"] = str(successor.public_id)
        result.applied.append(entry)
