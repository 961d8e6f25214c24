"""Writes to the memory bank. Every function records a MemoryEvent in the same transaction."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.core.exceptions import ApplicationError, Conflict
from memoryhub.core.rows import int_array
from memoryhub.embeddings import services as embeddings
from memoryhub.memories import index, selectors, similarity, text
from memoryhub.memories.kinds import DEFAULT_SCOPE, Scope
from memoryhub.memories.models import Memory, MemoryEvent, MemoryTerm, content_hash
from projects.models import Project

BULK_MAX_ITEMS = 1000
EDITABLE_FIELDS = (
    "kind",
    "subcategory",
    "goal",
    "title",
    "content",
    "keywords",
    "importance",
    "metadata",
)


@dataclass
class MemoryInput:
    """A memory as submitted by the API, the pipeline or an import."""

    content: str
    kind: str
    scope: str | None = None  # None: the kind's default scope
    title: str = ""
    keywords: list[str] = field(default_factory=list)
    importance: int = 1
    status: str = Memory.Status.ACTIVE
    subcategory: str = ""
    goal: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    source_session: str = ""
    source_record_start: int | None = None
    source_record_end: int | None = None
    created_at: datetime | None = None  # imports keep the original timestamps
    updated_at: datetime | None = None


def normalize_keywords(keywords: Sequence[str]) -> list[str]:
    """Strip, drop empties and case-insensitive duplicates, keep the first spelling and order."""
    seen: set[str] = set()
    result = []
    for keyword in keywords:
        cleaned = " ".join(keyword.split())
        if cleaned and cleaned.casefold() not in seen:
            seen.add(cleaned.casefold())
            result.append(cleaned)
    return result


def index_text(memory: Memory) -> str:
    """What the index and BM25 see of a memory (meow-memory: title + content + keywords)."""
    return "\n".join([memory.title, memory.content, " ".join(memory.keywords)])


# A posting as a plain row: (memory_id, project_id, term, tf). A bulk import writes ~15 per
# memory; model instances and Django's INSERT compiler cost more than the COPY.
Posting = tuple[int, int, str, int]
_POSTING_COLUMNS = ("memory_id", "project_id", "term", "tf")


def _postings(
    memories: Sequence[Memory], term_counts: Sequence[Counter[str]] | None = None
) -> list[Posting]:
    """Postings of `memories` (saved, with pks; `term_counts` when already computed); sets
    each memory's term_count as a side effect for callers that have not saved it yet."""
    rows: list[Posting] = []
    for position, memory in enumerate(memories):
        if term_counts is not None:
            counts = term_counts[position]
        else:
            counts = text.term_counts(index_text(memory))
        memory.term_count = sum(counts.values())
        memory_id, project_id = memory.pk, memory.project_id
        rows.extend((memory_id, project_id, term, min(tf, 32767)) for term, tf in counts.items())
    return rows


def _copy(cursor: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """COPY `rows` into `table` (PostgreSQL): one statement for the triggers and checks,
    and no SQL text to build or parse for thousands of rows."""
    # Django's wrapper turns psycopg's errors into its own (IntegrityError…), as for execute().
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with transaction.get_connection().wrap_database_errors, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _column_value(field: models.Field[Any, Any]) -> Callable[[models.Model], Any]:
    """How to read what Django's INSERT would send for `field` of an object, as COPY takes
    it (decided once per column, not per row)."""
    attname = field.attname
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return lambda obj: field.pre_save(obj, True)
    if isinstance(field, models.JSONField):
        encoder = field.encoder

        def json_value(obj: models.Model) -> Any:
            value = getattr(obj, attname)
            return None if value is None else json.dumps(value, cls=encoder)

        return json_value

    def value(obj: models.Model) -> Any:
        value = getattr(obj, attname)
        # TextChoices members: psycopg would dump the member's name.
        return value.value if isinstance(value, Enum) else value

    return value


def _insert_rows(objs: Sequence[models.Model], *, with_pks: bool = False) -> None:
    """Insert `objs` (one model) in the caller's transaction, as bulk_create would: on
    PostgreSQL by one COPY, their primary keys (`with_pks`) drawn from the table's sequence
    first, in ascending order like bulk_create's. A batch of 1,000 memories spent more time
    in Django's INSERT compiler than in the database."""
    if not objs:
        return
    connection = transaction.get_connection()
    model = type(objs[0])
    meta = model._meta
    if connection.vendor != "postgresql":
        model._base_manager.bulk_create(objs, batch_size=500)
        return
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    with connection.cursor() as cursor:
        if with_pks:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [meta.db_table, meta.pk.column, len(objs)],
            )
            for obj, (pk,) in zip(objs, sorted(cursor.fetchall()), strict=True):
                obj.pk = pk
            fields.insert(0, meta.pk)
        values = [_column_value(f) for f in fields]
        _copy(
            cursor.cursor,  # psycopg's own cursor
            meta.db_table,
            [str(f.column) for f in fields],
            ([value(obj) for value in values] for obj in objs),
        )
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias


def _insert_postings(rows: Sequence[Posting]) -> None:
    """Write postings in the caller's transaction: one COPY on PostgreSQL, batched INSERTs
    elsewhere."""
    if not rows:
        return
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            _copy(cursor.cursor, MemoryTerm._meta.db_table, _POSTING_COLUMNS, rows)
        return
    MemoryTerm.objects.bulk_create(
        [MemoryTerm(**dict(zip(_POSTING_COLUMNS, row, strict=True))) for row in rows],
        batch_size=2000,
    )


def _reindex(memory: Memory) -> None:
    MemoryTerm.objects.filter(memory=memory).delete()
    _insert_postings(_postings([memory]))


def _event(memory: Memory, actor: Actor, verb: str, before: Any, after: Any) -> MemoryEvent:
    # Ids, not objects: the related-object setters cost more than the rest (1,000 per import).
    return MemoryEvent(
        memory_id=memory.pk,
        project_id=memory.project_id,
        actor_user_id=actor.user.pk if actor.user is not None else None,
        actor_token_id=actor.token.pk if actor.token is not None else None,
        actor_label=actor.label,
        verb=verb,
        before=before,
        after=after,
    )


def _redact(memory: Memory) -> None:
    """Secrets never enter the bank, whoever writes (agents, the pipeline, imports)."""
    # Empty fields (most titles, goals, keywords) are skipped: the 37 rules cost ~50 µs even on "".
    if memory.title:
        memory.title = redaction.redact(memory.title)[0]
    memory.content = redaction.redact(memory.content)[0]
    if memory.goal:
        memory.goal = redaction.redact(memory.goal)[0]
    memory.keywords = [redaction.redact(k)[0] for k in memory.keywords]
    if memory.metadata:
        memory.metadata = redaction.redact_json(memory.metadata)[0]


# Set by the services from objects they already hold, never from input: Django's per-field
# existence queries would only cost (three per memory in a bulk import of a thousand).
_TRUSTED_FIELDS = ["content_hash", "project", "owner", "created_by_user", "created_by_token"]
# A new memory's fields that _build sets to constants or defaults, not from input.
_NEW_FIELDS = [
    "public_id",
    "created_via",
    "status_reason",
    "superseded_by",
    "hit_count",
    "last_accessed_at",
    "term_count",
]


def _validate(memory: Memory, *, new: bool = False) -> None:
    """Field validation and Memory.clean (which checks the Meta constraints' invariants); the
    database enforces uniqueness and the constraints again on save."""
    exclude = _TRUSTED_FIELDS + _NEW_FIELDS if new else _TRUSTED_FIELDS
    memory.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)


def _build(project: Project, actor: Actor, data: MemoryInput) -> Memory:
    scope = data.scope or DEFAULT_SCOPE.get(data.kind, Scope.PROJECT)
    now = timezone.now()
    created_at = data.created_at or now
    memory = Memory(
        project=project,
        scope=scope,
        owner=actor.user if scope == Scope.USER else None,
        kind=data.kind,
        subcategory=data.subcategory,
        goal=data.goal,
        title=data.title,
        content=data.content,
        keywords=normalize_keywords(data.keywords),
        importance=data.importance,
        status=data.status,
        metadata=data.metadata,
        source_session=data.source_session,
        source_record_start=data.source_record_start,
        source_record_end=data.source_record_end,
        created_by_user=actor.user,
        created_by_token=actor.token,
        created_via=actor.via,
        created_at=created_at,
        updated_at=data.updated_at or created_at,
    )
    _redact(memory)
    memory.content_hash = content_hash(memory.content)
    if memory.scope == Scope.USER and memory.owner is None:
        raise ValidationError(
            {"scope": _("A user-scope memory needs a person behind the request.")}
        )
    _validate(memory, new=True)
    return memory


class BulkValidationError(ApplicationError):
    code = "validation_error"

    def __init__(self, errors: dict[str, Any]) -> None:
        super().__init__(
            f"{len(errors)} item(s) are invalid; nothing was created.",
            details={"items": errors},
        )


@transaction.atomic
def memory_create(*, project: Project, actor: Actor, data: MemoryInput) -> Memory:
    return _save_new(_build(project, actor, data), actor)


def _save_new(memory: Memory, actor: Actor) -> Memory:
    """Insert a memory made by _build, with its postings and its "created" event."""
    counts = text.term_counts(index_text(memory))
    memory.term_count = sum(counts.values())
    memory.save()
    _insert_postings(_postings([memory], [counts]))
    _event(memory, actor, "created", None, memory.snapshot()).save()
    embeddings.embeddings_enqueue(memory_ids=[memory.pk])  # on commit, when a provider is set
    return memory


@transaction.atomic
def memory_bulk_create(
    *, project: Project, actor: Actor, items: Sequence[MemoryInput]
) -> list[Memory]:
    """Create all memories or none; the result is in input order.

    Validation errors are collected for every item and raised together, keyed by item index.
    """
    if len(items) > BULK_MAX_ITEMS:
        raise ApplicationError(
            _("At most %(n)s memories per request.") % {"n": BULK_MAX_ITEMS},
            details={"items": [f"got {len(items)}"]},
        )
    memories: list[Memory] = []
    errors: dict[str, Any] = {}
    for position, item in enumerate(items):
        try:
            memories.append(_build(project, actor, item))
        except ValidationError as exc:
            errors[str(position)] = exc.message_dict
    if errors:
        raise BulkValidationError(errors)
    counts = [text.term_counts(index_text(memory)) for memory in memories]
    for memory, terms in zip(memories, counts, strict=True):
        memory.term_count = sum(terms.values())
    _insert_rows(memories, with_pks=True)
    _insert_postings(_postings(memories, counts))
    _insert_rows([_event(m, actor, "created", None, m.snapshot()) for m in memories])
    embeddings.embeddings_enqueue(memory_ids=[m.pk for m in memories])
    return memories


def edit_version(memory: Memory) -> str:
    """A fingerprint of what an edit can change: a form carries it from when it was opened, so
    a save over someone else's newer edit is caught (touches such as a recall hit are not)."""
    editable = {name: memory.snapshot()[name] for name in EDITABLE_FIELDS}
    return hashlib.sha256(json.dumps(editable, sort_keys=True, default=str).encode()).hexdigest()[
        :16
    ]


@transaction.atomic
def memory_update(
    *,
    memory: Memory,
    actor: Actor,
    changes: dict[str, Any],
    verb: str = "updated",
    at: datetime | None = None,
    expected_version: str | None = None,
) -> Memory:
    """Change editable fields (one history event naming what changed); `at` dates the change
    (an import keeps its source's time), else now. With `expected_version` (edit_version when
    the editor opened it) a memory changed since is a Conflict, and nothing is written."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ApplicationError(
            _("Cannot change %(fields)s here.") % {"fields": ", ".join(sorted(unknown))}
        )
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if expected_version is not None and edit_version(memory) != expected_version:
        last = memory.events.order_by("-created_at", "-id").first()
        raise Conflict(
            _(
                "%(who)s changed this memory at %(when)s, after you opened it. Your edits are "
                "below; check the memory's history, then save again to replace theirs."
            )
            % {
                "who": last.actor_label if last else _("Someone"),
                "when": timezone.localtime(last.created_at).strftime("%H:%M") if last else "?",
            },
            details={"version": [edit_version(memory)]},
        )
    before = memory.snapshot()
    for name, value in changes.items():
        setattr(memory, name, normalize_keywords(value) if name == "keywords" else value)
    _redact(memory)
    _validate(memory)
    changed = [name for name in changes if before[name] != memory.snapshot()[name]]
    if not changed:
        return memory
    memory.content_hash = content_hash(memory.content)
    memory.updated_at = at or timezone.now()
    if {"title", "content", "keywords"} & set(changed):
        _reindex(memory)  # sets term_count
    if "content" in changed:
        embeddings.embeddings_enqueue(memory_ids=[memory.pk])
    memory.save(update_fields=[*changed, "content_hash", "updated_at", "term_count"])
    after = memory.snapshot()
    _event(
        memory, actor, verb, {n: before[n] for n in changed}, {n: after[n] for n in changed}
    ).save()
    return memory


# Allowed transitions: target status -> statuses it may come from, and the event verb.
_TRANSITIONS: dict[str, tuple[set[str], str]] = {
    Memory.Status.ARCHIVED: (
        {Memory.Status.PROPOSED, Memory.Status.ACTIVE, Memory.Status.STALE},
        "archived",
    ),
    Memory.Status.STALE: ({Memory.Status.ACTIVE, Memory.Status.PROPOSED}, "marked_stale"),
    Memory.Status.ACTIVE: ({Memory.Status.STALE, Memory.Status.ARCHIVED}, "restored"),
}


@transaction.atomic
def memory_set_status(
    *,
    memory: Memory,
    actor: Actor,
    status: str,
    reason: str = "",
    superseded_by: Memory | None = None,
) -> Memory:
    """Archive, mark stale (reason required) or restore a memory; nothing is ever deleted."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    sources, verb = _TRANSITIONS[status]
    if memory.status not in sources:
        raise ApplicationError(
            _("A %(old)s memory cannot become %(new)s.") % {"old": memory.status, "new": status},
            details={"status": [f"allowed from: {', '.join(sorted(sources))}"]},
        )
    if status == Memory.Status.STALE and not reason.strip():
        raise ValidationError({"reason": _("Say why the memory is stale.")})
    if superseded_by is not None and (
        superseded_by.pk == memory.pk or superseded_by.project_id != memory.project_id
    ):
        raise ValidationError({"superseded_by": _("Must be another memory of the same project.")})
    before = memory.snapshot()
    memory.status = status
    memory.status_reason = "" if status == Memory.Status.ACTIVE else reason.strip()
    memory.superseded_by = None if status == Memory.Status.ACTIVE else superseded_by
    memory.updated_at = timezone.now()
    _validate(memory)
    memory.save(update_fields=["status", "status_reason", "superseded_by", "updated_at"])
    keys = ("status", "status_reason", "superseded_by")
    after = memory.snapshot()
    _event(memory, actor, verb, {k: before[k] for k in keys}, {k: after[k] for k in keys}).save()
    return memory


@transaction.atomic
def memory_reindex(*, project: Project | None = None) -> int:
    """Rebuild the postings of every memory (of one project): after a tokenizer change, or to
    index memories written before the index existed. Idempotent. Returns the memory count."""
    memories = Memory.objects.all() if project is None else Memory.objects.filter(project=project)
    MemoryTerm.objects.filter(memory__in=memories).delete()
    count = 0
    batch: list[Memory] = []
    for memory in memories.order_by("pk").iterator(chunk_size=1000):
        batch.append(memory)
        if len(batch) == 1000:
            count += _reindex_batch(batch)
            batch = []
    return count + (_reindex_batch(batch) if batch else 0)


def _reindex_batch(batch: list[Memory]) -> int:
    _insert_postings(_postings(batch))
    Memory.objects.bulk_update(batch, ["term_count"], batch_size=1000)
    return len(batch)


# --- bank-wide writes of the pipeline (clear, rebuild, dream) -------------------------------

DERIVED_VIA = (Memory.Via.PIPELINE, Memory.Via.DREAM)


@dataclass
class ClearResult:
    cleared: int  # memories deleted (not the rows that went with them)
    kept: int  # derived memories kept because a person decided something about them


@transaction.atomic
def memory_clear_derived(
    *,
    project: Project,
    keep_human_decisions: bool = False,
    keep_ids: Collection[int] = (),
    created_before: datetime | None = None,
) -> ClearResult:
    """Delete what the pipeline and the dream wrote into `project`'s bank (their history and
    postings go with them); memories people or agents wrote stay.

    The end of a rebuild passes keep_human_decisions (derived memories a person archived,
    marked stale, restored, edited or approved stay), keep_ids (what the re-extraction found
    again or wrote) and created_before (the rebuild's start)."""
    derived = Memory.objects.filter(project=project, created_via__in=DERIVED_VIA)
    if created_before is not None:
        derived = derived.filter(created_at__lt=created_before)
    if keep_ids:
        derived = derived.exclude(pk__in=list(keep_ids))
    kept = 0
    if keep_human_decisions:
        decided = selectors.memory_decided_by_people(project=project)
        kept = derived.filter(pk__in=decided).count()
        derived = derived.exclude(pk__in=decided)
    deleted = derived.delete()[1]
    return ClearResult(cleared=deleted.get(Memory._meta.label, 0), kept=kept)


@transaction.atomic
def memory_stamp(*, project: Project, source_session: str, at: datetime, actor: Actor) -> int:
    """meow's finalizeDream stamp: updated_at = max(updated_at, at) for the memories written
    from `source_session`, each with a "dream_stamped" event. Returns how many were stamped."""
    stamped = list(
        Memory.objects.select_for_update().filter(
            project=project, source_session=source_session, updated_at__lt=at
        )
    )
    if not stamped:
        return 0
    Memory.objects.filter(pk__in=[m.pk for m in stamped]).update(updated_at=at)
    MemoryEvent.objects.bulk_create(
        [
            _event(
                m,
                actor,
                "dream_stamped",
                {"updated_at": m.updated_at.isoformat()},
                {"updated_at": at.isoformat()},
            )
            for m in stamped
        ]
    )
    return len(stamped)


def memory_record_access(*, memory_ids: Sequence[int], at: datetime) -> None:
    """Bookkeeping of reads (search): hit counts and last access. No event: nothing a person
    would call a change, nor a change of the bank (its version stays)."""
    if not memory_ids:
        return
    if connection.vendor == "postgresql":
        # One statement that also spares the bank's change trigger its row comparison
        # (migration 0008): a search runs this every time.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT memoryhub_record_access(%s::bigint[], %s)",
                [int_array(sorted(set(memory_ids))), at],
            )
        return
    Memory.objects.filter(pk__in=list(memory_ids)).update(
        hit_count=F("hit_count") + 1, last_accessed_at=at
    )


# --- memory_remember: the write path of agents and the pipeline -----------------------------

_NEGATION = re.compile(
    r"\b(?:not|never|no longer|don't|do not|doesn't|does not|isn't|aren't|won't|avoid|stop)\b"
    r"|不要|不再|禁止|别|没有|不是|不用",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
# Cosine above which two memories of one kind talk about the same thing (meow find-similar
# feeds the contradiction check; meow leaves the decision to the model, we need a rule).
CONTRADICTION_SIMILARITY = 0.5
REMEMBER_CANDIDATES = 200
REMEMBER_TERMS = 32
REMEMBER_STATUSES = (Memory.Status.ACTIVE, Memory.Status.PROPOSED)


@dataclass
class RememberResult:
    memory: Memory
    merged: bool
    superseded: list[Memory] = field(default_factory=list)


def contradicts(old: str, new: str) -> bool:
    """Offline contradiction rule: the same subject (high cosine) with opposite polarity, or
    the same sentence with different numbers ("Node 18" → "Node 20")."""
    if similarity.cosine(old, new) < CONTRADICTION_SIMILARITY:
        return False
    if bool(_NEGATION.search(old)) != bool(_NEGATION.search(new)):
        return True
    old_numbers, new_numbers = _NUMBER.findall(old), _NUMBER.findall(new)
    return bool(old_numbers) and bool(new_numbers) and old_numbers != new_numbers


def _remember_candidates(project: Project, memory: Memory) -> list[Memory]:
    """Memories of the same kind and owner that share the most of `memory`'s rarest index
    terms, most recently created first: the index stands in for meow's scan of every row of the
    level. A near-duplicate shares nearly all of its terms, so the rarest ones find it."""
    counts = text.term_counts(index_text(memory))
    df = index.document_frequencies(project.pk, list(counts))
    rarest = sorted(df, key=lambda t: (df[t], t))[:REMEMBER_TERMS]
    same_level = selectors.memory_same_level_q(memory=memory, prefix="memory__") & Q(
        memory__status__in=REMEMBER_STATUSES
    )
    matched = index.sharing_most_terms(project.pk, rarest, REMEMBER_CANDIDATES, where=same_level)
    return list(
        Memory.objects.filter(pk__in=[i for i, _ in matched]).order_by("-created_at", "-pk")
    )


@transaction.atomic
def memory_remember(*, project: Project, actor: Actor, data: MemoryInput) -> RememberResult:
    """Write a memory the way meow-memory's memory_remember does.

    Merge into the newest active memory of the same kind (and owner) whose content has bigram
    Jaccard ≥ 0.8 with the new one: its content becomes the new text, importance the max,
    keywords the new ones when given. Otherwise insert, and mark older memories of the kind
    that the new one contradicts as stale, superseded by it (never deleted). Idempotent: writing
    the same memory twice merges the second into the first.
    """
    # Redaction and validation first: they need no lock.
    draft = _build(project, actor, data)
    # Serialise writers of one bank so two extractions cannot both insert the same memory.
    # NO KEY: serialises bank writers without blocking inserts that only reference the project.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()
    candidates = _remember_candidates(project, draft)
    for existing in candidates:
        if similarity.jaccard(existing.content, draft.content) >= similarity.MERGE_THRESHOLD:
            changes: dict[str, Any] = {"content": draft.content}
            if draft.importance > existing.importance:
                changes["importance"] = draft.importance
            if draft.keywords:
                changes["keywords"] = draft.keywords
            before_update = existing.updated_at
            merged = memory_update(memory=existing, actor=actor, changes=changes, verb="merged")
            if merged.updated_at == before_update:
                # Nothing changed, yet the merge is news: recency and the audit trail say so.
                merged.updated_at = timezone.now()
                merged.save(update_fields=["updated_at"])
                _event(
                    merged, actor, "merged", None, {"source_session": data.source_session}
                ).save()
            return RememberResult(memory=merged, merged=True)
    memory = _save_new(draft, actor)
    superseded = []
    for old in candidates:
        if old.status == Memory.Status.ACTIVE and contradicts(old.content, memory.content):
            superseded.append(
                memory_set_status(
                    memory=old,
                    actor=actor,
                    status=Memory.Status.STALE,
                    reason=f"Contradicted by a newer memory ({memory.public_id}).",
                    superseded_by=memory,
                )
            )
    return RememberResult(memory=memory, merged=False, superseded=superseded)


@transaction.atomic
def memory_approve(*, memory: Memory, actor: Actor) -> Memory:
    """Review: a proposed memory becomes active (and so injectable)."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.status != Memory.Status.PROPOSED:
        raise ApplicationError(
            _("Only proposed memories can be approved; this one is %(status)s.")
            % {"status": memory.status}
        )
    memory.status = Memory.Status.ACTIVE
    memory.updated_at = timezone.now()
    memory.save(update_fields=["status", "updated_at"])
    _event(
        memory,
        actor,
        "approved",
        {"status": Memory.Status.PROPOSED},
        {"status": Memory.Status.ACTIVE},
    ).save()
    return memory


# --- Review and curation: reject, promote, merge, hard delete (the web dashboard's actions) ---


@transaction.atomic
def memory_reject(*, memory: Memory, actor: Actor, reason: str) -> Memory:
    """Review: a proposed memory is refused. It is archived with the reason (never deleted), so
    the pipeline's output and the reviewer's decision stay in the history."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.status != Memory.Status.PROPOSED:
        raise ApplicationError(
            _("Only proposed memories can be rejected; this one is %(status)s.")
            % {"status": memory.status}
        )
    if not reason.strip():
        raise ValidationError({"reason": _("Say why the memory is rejected.")})
    before = memory.snapshot()
    memory.status = Memory.Status.ARCHIVED
    memory.status_reason = reason.strip()[:1000]
    memory.updated_at = timezone.now()
    memory.save(update_fields=["status", "status_reason", "updated_at"])
    keys = ("status", "status_reason")
    after = memory.snapshot()
    _event(
        memory, actor, "rejected", {k: before[k] for k in keys}, {k: after[k] for k in keys}
    ).save()
    return memory


@transaction.atomic
def memory_promote(*, memory: Memory, actor: Actor) -> Memory:
    """A user-scope memory becomes a project memory, visible to the whole team.

    Only its owner may choose this: nobody else can even see it.
    """
    from django.core.exceptions import PermissionDenied  # local: this block is appended whole

    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.scope != Scope.USER:
        raise ApplicationError(_("Only user-scope memories can be promoted to the project."))
    if actor.user is None or memory.owner_id != actor.user.pk:
        raise PermissionDenied(_("Only the memory's owner can share it with the project."))
    before = {"scope": memory.scope, "owner": memory.owner.username if memory.owner else None}
    memory.scope = Scope.PROJECT
    memory.owner = None
    memory.updated_at = timezone.now()
    _validate(memory)
    memory.save(update_fields=["scope", "owner", "updated_at"])
    _event(memory, actor, "promoted", before, {"scope": Scope.PROJECT, "owner": None}).save()
    return memory


MERGEABLE_STATUSES = (Memory.Status.PROPOSED, Memory.Status.ACTIVE, Memory.Status.STALE)


@transaction.atomic
def memory_merge(
    *, keep: Memory, other: Memory, actor: Actor, content: str | None = None
) -> Memory:
    """Merge `other` into `keep`: one memory remains, both histories are kept.

    `keep` takes `content` (default: both texts, `keep`'s first), the union of the keywords,
    the higher importance and the summed hit count; `other` is archived, superseded by `keep`.
    Each gets an event naming the other, so either history leads to the other. Both must share
    project, scope and owner (merging a private memory into a shared one would publish it:
    promote it first).
    """
    if keep.pk == other.pk:
        raise ValidationError({"other": _("Pick two different memories.")})
    # Lock in id order so two opposite merges cannot deadlock.
    locked = {
        m.pk: m
        for m in Memory.objects.select_for_update()
        .filter(pk__in=[keep.pk, other.pk])
        .order_by("pk")
    }
    keep, other = locked[keep.pk], locked[other.pk]
    if keep.project_id != other.project_id:
        raise ValidationError({"other": _("Both memories must belong to the same project.")})
    if (keep.scope, keep.owner_id) != (other.scope, other.owner_id):
        raise ValidationError(
            {"other": _("Both memories must have the same scope (promote a user memory first).")}
        )
    for memory in (keep, other):
        if memory.status not in MERGEABLE_STATUSES:
            raise ApplicationError(
                _("A %(status)s memory cannot be merged; restore it first.")
                % {"status": memory.status}
            )
    merged_content = content if content is not None else f"{keep.content}\n\n{other.content}"
    before = keep.snapshot()
    keep.content = merged_content
    keep.keywords = normalize_keywords([*keep.keywords, *other.keywords])
    keep.importance = max(keep.importance, other.importance)
    keep.hit_count = keep.hit_count + other.hit_count
    _redact(keep)
    _validate(keep)
    keep.content_hash = content_hash(keep.content)
    keep.updated_at = timezone.now()
    _reindex(keep)  # sets term_count
    embeddings.embeddings_enqueue(memory_ids=[keep.pk])
    keep.save(
        update_fields=[
            "content",
            "keywords",
            "importance",
            "hit_count",
            "content_hash",
            "term_count",
            "updated_at",
        ]
    )
    after = keep.snapshot()
    changed = [n for n in ("content", "keywords", "importance") if before[n] != after[n]]
    _event(
        keep,
        actor,
        "merged_from",
        {n: before[n] for n in changed},
        {**{n: after[n] for n in changed}, "merged_from": str(other.public_id)},
    ).save()
    other_before = other.snapshot()
    other.status = Memory.Status.ARCHIVED
    other.status_reason = f"Merged into {keep.public_id}."
    other.superseded_by = keep
    other.updated_at = keep.updated_at
    other.save(update_fields=["status", "status_reason", "superseded_by", "updated_at"])
    keys = ("status", "status_reason", "superseded_by")
    other_after = other.snapshot()
    _event(
        other,
        actor,
        "merged_into",
        {k: other_before[k] for k in keys},
        {k: other_after[k] for k in keys},
    ).save()
    return keep


def memory_delete_confirmation(memory: Memory) -> str:
    """What a person types to hard-delete `memory`: the first 8 characters of its id."""
    return str(memory.public_id)[:8]


@transaction.atomic
def memory_delete_unsafe(*, memory: Memory, actor: Actor, confirm: str) -> None:
    """Delete a memory for good, with its history and postings (e.g. it holds something that
    must not be kept). The callers let only project owners do this. `confirm` must be
    memory_delete_confirmation(memory). The project's audit log keeps who deleted what."""
    if confirm.strip() != memory_delete_confirmation(memory):
        raise ValidationError(
            {"confirm": _("Type the first 8 characters of the memory's id to delete it.")}
        )
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    from memoryhub.core.services import audit_record  # core's audit log outlives the memory

    audit_record(
        actor=actor,
        verb="memory.deleted",
        target_type="memory",
        target_id=memory.public_id,
        project=memory.project,
        before={
            "kind": memory.kind,
            "scope": memory.scope,
            "title": memory.title,
            "status": memory.status,
            "content_hash": memory.content_hash,
        },
    )
    memory.delete()


# --- Project restore (memoryhub/backups) --------------------------------------------------------

_RESTORABLE = (Memory, MemoryEvent, MemoryTerm)


def bank_rows_restore(*, objs: Sequence[Any], fields: Sequence[Any]) -> list[int]:
    """Insert a restored project's bank rows as they were (timestamps, hashes, postings, the
    events themselves — a restore adds no event per row; backups/services audits it once).
    Raw inserts in the caller's transaction; returns the new primary keys in order."""
    model = type(objs[0])
    if model not in _RESTORABLE or any(type(obj) is not model for obj in objs):
        raise TypeError(f"bank_rows_restore takes rows of one of {_RESTORABLE}")
    rows = model._base_manager._insert(
        list(objs), fields=list(fields), returning_fields=[model._meta.pk], raw=True
    )
    return [row[0] for row in rows]


def bank_rows_relink(*, model: Any, links: Sequence[tuple[int, str, int]]) -> None:
    """Set a restored bank row's reference to a row of its own table (superseded_by), once
    both exist: (row pk, field attname, target pk), in the caller's transaction."""
    if model not in _RESTORABLE:
        raise TypeError(f"bank_rows_relink takes rows of one of {_RESTORABLE}")
    for pk, attname, target in links:
        model._base_manager.filter(pk=pk).update(**{attname: target})
