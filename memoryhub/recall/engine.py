"""The search engine's bank index: a per-project copy of the inverted index in each worker.

Exact BM25 over a 100k-memory bank takes well under a millisecond in numpy, against tens of
milliseconds for the same ranking in SQL, so each worker process keeps, per project it serves:

- postings: term → (slots int32, tf float32), a slot per memory version;
- per slot: the memory's id, length (term count) and what filters and ranking read (status,
  kind, subcategory, scope, owner, importance, created/updated times, source session and order).

The database stays the source of truth. Triggers (memories migration 0006) bump the bank's
version (memories.BankVersion) in the transaction of every change and record the version at
which each memory last changed (BankChange). Each use costs one primary-key read of the
version; when it moved, only the memories changed since are read again (a changed memory's old
slot is marked dead and it gets a new one), and a large change rebuilds the whole copy. Several
gunicorn and Celery processes can write at once: versions are handed out under the version
row's lock, so they become visible in order and a reader at version v has seen every change up
to v.

Memory: about 8 bytes per posting, ~150 bytes per memory and ~300 per distinct term (a 100k
LoCoMo-like bank: ~1.5M postings, ~35 MB); banks beyond RECALL_INDEX_MAX_POSTINGS postings in
total (all projects of a process) are dropped least recently used first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Substr

from accounts.models import User
from memoryhub.memories.kinds import Kind, Scope, Subcategory
from memoryhub.memories.models import BankChange, BankVersion, Memory, MemoryTerm
from memoryhub.memories.selectors import memory_visible_mask
from memoryhub.memories.text import tokenize
from memoryhub.recall import signals

# A delta larger than this share of the bank (or a bank with this share of dead slots) is
# cheaper to rebuild than to patch.
REBUILD_SHARE = 0.25
REBUILD_MIN = 2_000
DEFAULT_MAX_POSTINGS = 6_000_000

STATUS_CODES = {value: code for code, value in enumerate(Memory.Status.values)}
KIND_CODES = {value: code for code, value in enumerate(Kind.values)}
SUBCATEGORY_CODES = {"": 0} | {value: code + 1 for code, value in enumerate(Subcategory.values)}
NO_OWNER = 0
NO_ORDER = -1

_ROW_FIELDS = (
    "id",
    "scope",
    "owner_id",
    "kind",
    "subcategory",
    "importance",
    "status",
    "created_at",
    "updated_at",
    "source_session",
    "source_record_start",
    "term_count",
    "title",
    "head",  # the content's start: a leading `Name:` label (signals.subject_text)
    "subject_field",  # metadata["subject"]
)
# A leading "Name:" label is looked for in this much of the content.
SUBJECT_LABEL_CHARS = 80


@dataclass
class Postings:
    slots: np.ndarray  # int32, ascending within a build, appended by deltas
    tf: np.ndarray  # float32


@dataclass
class Stats:
    """BM25's corpus statistics over what one reader may see (every status)."""

    n_docs: int
    avgdl: float
    # Slots the reader may not see (dead, or another person's user-scope memory); None: none.
    hidden: np.ndarray | None
    sessions: int | None = None  # distinct sessions (a session-less memory is one), lazily


_COLUMNS = (
    ("ids", np.int64),
    ("length", np.float64),
    ("importance", np.int16),
    ("created", np.float64),
    ("updated", np.float64),
    ("status", np.int8),
    ("kind", np.int8),
    ("subcategory", np.int8),
    ("project_scope", np.bool_),
    ("owner", np.int64),
    ("session", np.int32),
    ("order", np.int32),
    ("subject", np.int32),  # code of the subject's text (signals.subject_text), -1: none
    ("alive", np.bool_),
)


@dataclass
class BankIndex:
    project_id: int
    version: int = 0
    size: int = 0  # slots in use (alive or dead)
    dead: int = 0
    postings: dict[str, Postings] = field(default_factory=dict)
    slot_of: dict[int, int] = field(default_factory=dict)
    sessions: dict[str, int] = field(default_factory=dict)  # source_session → code
    subject_codes: dict[str, int] = field(default_factory=dict)  # subject text → code
    subject_texts: list[str] = field(default_factory=list)
    _subject_terms: dict[int, frozenset[str]] = field(default_factory=dict)  # tokenized lazily
    n_postings: int = 0
    _stats: dict[int | None, Stats] = field(default_factory=dict)
    # Per-slot masks of what a reader's query may return (search._admitted_mask), by reader and
    # filters; dropped with the statistics whenever the bank changes.
    masks: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict)
    _by_session: dict[int, np.ndarray] | None = None
    # Per-slot columns (numpy arrays of capacity ≥ size); their dtypes are in _COLUMNS.
    ids: np.ndarray = field(init=False)
    length: np.ndarray = field(init=False)
    importance: np.ndarray = field(init=False)
    created: np.ndarray = field(init=False)
    updated: np.ndarray = field(init=False)
    status: np.ndarray = field(init=False)
    kind: np.ndarray = field(init=False)
    subcategory: np.ndarray = field(init=False)
    project_scope: np.ndarray = field(init=False)
    owner: np.ndarray = field(init=False)
    session: np.ndarray = field(init=False)
    order: np.ndarray = field(init=False)
    subject: np.ndarray = field(init=False)
    alive: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        for name, dtype in _COLUMNS:
            setattr(self, name, np.zeros(0, dtype))

    # --- reads ---------------------------------------------------------------------------------

    @property
    def memories(self) -> int:
        return self.size - self.dead

    def nbytes(self) -> int:
        columns = sum(getattr(self, name).nbytes for name, _ in _COLUMNS)
        postings = sum(p.slots.nbytes + p.tf.nbytes for p in self.postings.values())
        return columns + postings

    def visible(self, user: User | None) -> np.ndarray:
        """Which slots `user` may see (alive, every status): memory_visible's rule."""
        n = self.size
        rule = memory_visible_mask(
            user=user, project_scope=self.project_scope[:n], owner=self.owner[:n]
        )
        return self.alive[:n] & rule

    def stats(self, user: User | None) -> Stats:
        """n_docs, avgdl and the hidden slots for a reader: project-scope memories plus the
        reader's own user-scope ones (idf must not reveal another person's private terms)."""
        user_id = user.pk if user is not None else None
        cached = self._stats.get(user_id)
        if cached is not None:
            return cached
        n = self.size
        visible = self.visible(user)
        n_docs = int(np.count_nonzero(visible))
        avgdl = float(self.length[:n][visible].mean()) if n_docs else 0.0
        hidden = None if n_docs == n else ~visible
        stats = Stats(n_docs=n_docs, avgdl=avgdl, hidden=hidden)
        if len(self._stats) > 64:  # one entry per reader between two changes of the bank
            self._stats.clear()
        self._stats[user_id] = stats
        return stats

    def document_frequency(self, term: str, stats: Stats) -> int:
        postings = self.postings.get(term)
        if postings is None:
            return 0
        if stats.hidden is None:
            return len(postings.slots)
        return len(postings.slots) - int(np.count_nonzero(stats.hidden[postings.slots]))

    def by_session(self) -> dict[int, np.ndarray]:
        """The alive slots of each source session (code), by (order, memory id)."""
        if self._by_session is None:
            n = self.size
            slots = np.flatnonzero(self.alive[:n] & (self.session[:n] >= 0))
            slots = slots[np.lexsort((self.ids[slots], self.order[slots], self.session[slots]))]
            cuts = np.flatnonzero(np.diff(self.session[slots])) + 1
            self._by_session = {
                int(self.session[group[0]]): group for group in np.split(slots, cuts) if len(group)
            }
        return self._by_session

    def _visible_codes(self, slots: np.ndarray, stats: Stats) -> np.ndarray:
        if stats.hidden is not None:
            slots = slots[~stats.hidden[slots]]
        return self.session[slots]

    def _distinct_sessions(self, codes: np.ndarray) -> int:
        named = codes[codes >= 0]
        spread = np.bincount(named, minlength=len(self.sessions)) if len(named) else named
        return int(np.count_nonzero(spread)) + int(np.count_nonzero(codes < 0))

    def session_frequency(self, term: str, stats: Stats) -> int:
        """How many sessions the reader may see hold `term` (a session-less memory is one)."""
        postings = self.postings.get(term)
        if postings is None:
            return 0
        return self._distinct_sessions(self._visible_codes(postings.slots, stats))

    def session_count(self, stats: Stats) -> int:
        if stats.sessions is None:
            every = np.flatnonzero(self.alive[: self.size])
            stats.sessions = self._distinct_sessions(self._visible_codes(every, stats))
        return stats.sessions

    def subject_terms(self, slot: int) -> frozenset[str]:
        """The subject's terms of the memory in `slot` (empty: it has none)."""
        code = int(self.subject[slot])
        if code < 0:
            return frozenset()
        terms = self._subject_terms.get(code)
        if terms is None:
            terms = self._subject_terms[code] = frozenset(tokenize(self.subject_texts[code]))
        return terms

    def session_codes(self, names: Iterable[str]) -> np.ndarray:
        return np.array([self.sessions[s] for s in names if s in self.sessions], np.int32)

    # --- writes (under the registry's lock) ----------------------------------------------------

    def _reserve(self, extra: int) -> None:
        need = self.size + extra
        if need <= len(self.ids):
            return
        capacity = max(need, int(len(self.ids) * 1.5), 1024)
        for name, dtype in _COLUMNS:
            grown = np.zeros(capacity, dtype)
            grown[: self.size] = getattr(self, name)[: self.size]
            setattr(self, name, grown)

    def _session_code(self, name: str) -> int:
        if not name:
            return -1
        code = self.sessions.get(name)
        if code is None:
            code = self.sessions[name] = len(self.sessions)
        return code

    def _subject_code(self, title: str, head: str, subject_field: str | None) -> int:
        text = signals.subject_text(title=title, content=head, metadata={"subject": subject_field})
        if not text:
            return -1
        code = self.subject_codes.get(text)
        if code is None:
            code = self.subject_codes[text] = len(self.subject_texts)
            self.subject_texts.append(text)
        return code

    def _add_rows(self, rows: Sequence[tuple]) -> None:
        self._reserve(len(rows))
        for row in rows:
            (pk, scope, owner, kind, sub, importance, status, created, updated, sess, start, tc) = (
                row[:12]
            )
            slot = self.size
            self.size += 1
            self.slot_of[pk] = slot
            self.ids[slot] = pk
            self.length[slot] = tc
            self.importance[slot] = importance
            self.created[slot] = created.timestamp()
            self.updated[slot] = updated.timestamp()
            self.status[slot] = STATUS_CODES.get(status, -1)
            self.kind[slot] = KIND_CODES.get(kind, -1)
            self.subcategory[slot] = SUBCATEGORY_CODES.get(sub, -1)
            self.project_scope[slot] = scope == Scope.PROJECT
            self.owner[slot] = owner or NO_OWNER
            self.session[slot] = self._session_code(sess)
            self.order[slot] = NO_ORDER if start is None else start
            self.subject[slot] = self._subject_code(*row[12:])
            self.alive[slot] = True

    def _kill(self, memory_ids: Iterable[int]) -> None:
        for pk in memory_ids:
            slot = self.slot_of.pop(pk, None)
            if slot is not None:
                self.alive[slot] = False
                self.dead += 1

    def _add_postings(self, rows: Iterable[tuple[int, str, int]]) -> None:
        grouped: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for memory_id, term, tf in rows:
            slot = self.slot_of.get(memory_id)
            if slot is None:  # written after the rows were read: the next sync adds it
                continue
            slots, tfs = grouped[term]
            slots.append(slot)
            tfs.append(tf)
        for term, (slots, tfs) in grouped.items():
            new_slots = np.array(slots, np.int32)
            new_tf = np.array(tfs, np.float32)
            old = self.postings.get(term)
            if old is not None:
                new_slots = np.concatenate([old.slots, new_slots])
                new_tf = np.concatenate([old.tf, new_tf])
            self.postings[term] = Postings(new_slots, new_tf)
            self.n_postings += len(slots)


# --- Loading from the database -----------------------------------------------------------------


def _version(project_id: int) -> int:
    # Every request reads it: a plain statement, no queryset to compile.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT version FROM {BankVersion._meta.db_table} WHERE project_id = %s",  # noqa: S608
            [project_id],
        )
        row = cursor.fetchone()
    return row[0] if row else 0


def _rows(project_id: int, ids: Sequence[int] | None = None) -> list[tuple]:
    memories = Memory.objects.filter(project_id=project_id)
    if ids is not None:
        memories = memories.filter(pk__in=list(ids))
    memories = memories.annotate(
        head=Substr("content", 1, SUBJECT_LABEL_CHARS),
        subject_field=KeyTextTransform("subject", "metadata"),
    )
    return list(memories.order_by("pk").values_list(*_ROW_FIELDS))


def _build(project_id: int) -> BankIndex:
    """A fresh copy. The version is read first: whatever changes while the rows are read has a
    later version and is read again by the next sync."""
    bank = BankIndex(project_id=project_id, version=_version(project_id))
    bank._add_rows(_rows(project_id))
    if connection.vendor == "postgresql":
        # Grouped by term in PostgreSQL: one row per term, its postings as two arrays.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT term, array_agg(memory_id), array_agg(tf) FROM memories_memoryterm"
                " WHERE project_id = %s GROUP BY term",
                [project_id],
            )
            slot_of = bank.slot_of
            for term, memory_ids, tfs in cursor.fetchall():
                slots = [slot_of.get(i, -1) for i in memory_ids]
                tf = np.array(tfs, np.float32)
                slots_np = np.array(slots, np.int32)
                if -1 in slots:  # postings of a memory written after the rows were read
                    keep = slots_np >= 0
                    slots_np, tf = slots_np[keep], tf[keep]
                if len(slots_np):
                    bank.postings[term] = Postings(slots_np, tf)
                    bank.n_postings += len(slots_np)
    else:
        bank._add_postings(
            MemoryTerm.objects.filter(project_id=project_id).values_list("memory_id", "term", "tf")
        )
    return bank


def _apply(bank: BankIndex, changed: Sequence[int]) -> None:
    """Read again the memories in `changed` (new, edited or deleted)."""
    bank._kill(changed)
    rows = _rows(bank.project_id, changed)
    bank._add_rows(rows)
    present = [row[0] for row in rows]
    if present:
        bank._add_postings(
            MemoryTerm.objects.filter(
                project_id=bank.project_id, memory_id__in=present
            ).values_list("memory_id", "term", "tf")
        )
    bank._stats.clear()
    bank.masks.clear()
    bank._by_session = None


# --- The per-process registry ------------------------------------------------------------------


class Registry:
    """The banks this process holds, least recently used first."""

    def __init__(self) -> None:
        self.banks: OrderedDict[int, BankIndex] = OrderedDict()
        self.lock = threading.RLock()
        self.builds = 0  # full builds (tests and benchmarks read it)
        self.deltas = 0  # memories read again by deltas

    @contextmanager
    def reading(self, project_id: int) -> Iterator[BankIndex]:
        """The bank of `project_id` as of now (one cheap query when nothing changed), for the
        duration of the block: threads of one process (ASGI) take turns."""
        with self.lock:
            version = _version(project_id)
            bank = self.banks.get(project_id)
            if bank is not None and bank.version != version:
                bank = self._sync(bank, version)
            if bank is None:
                bank = _build(project_id)
                self.builds += 1
            self.banks[project_id] = bank
            self.banks.move_to_end(project_id)
            self._evict()
            yield bank

    def _sync(self, bank: BankIndex, version: int) -> BankIndex | None:
        changes = list(
            BankChange.objects.filter(
                project_id=bank.project_id, version__gt=bank.version
            ).values_list("memory_id", "version")
        )
        limit = max(REBUILD_MIN, REBUILD_SHARE * bank.memories)
        if len(changes) > limit or bank.dead + len(changes) > max(REBUILD_MIN, bank.size / 2):
            return None  # cheaper to build anew
        _apply(bank, [memory_id for memory_id, _ in changes])
        self.deltas += len(changes)
        # Versions become visible in order: having seen one, every earlier one is in hand.
        bank.version = max([version, *(v for _, v in changes)])
        return bank

    def _evict(self) -> None:
        budget = getattr(settings, "RECALL_INDEX_MAX_POSTINGS", DEFAULT_MAX_POSTINGS)
        total = sum(b.n_postings for b in self.banks.values())
        while total > budget and len(self.banks) > 1:
            _, dropped = self.banks.popitem(last=False)
            total -= dropped.n_postings

    def clear(self) -> None:
        with self.lock:
            self.banks.clear()


registry = Registry()
reading = registry.reading
