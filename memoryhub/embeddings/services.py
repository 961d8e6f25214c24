"""Writes of the embedding vectors: derived data, like the index's postings (no audit event:
nobody changed a memory). Every function is idempotent, ensure-style: it computes only what is
missing or stale (the memory's content_hash differs from the vector's)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memoryhub.core.tasks import send_on_commit
from memoryhub.embeddings import providers, selectors, tasks
from memoryhub.embeddings.models import MemoryEmbedding
from memoryhub.memories.models import Memory
from projects.models import Project

logger = logging.getLogger(__name__)

CHUNK = 256  # memories per task message and per backfill step


def embedding_text(memory: Memory) -> str:
    """What is embedded: the content (its hash keys the vector). Titles summarise the content and
    keywords serve the lexical half."""
    return memory.content


@dataclass
class EnsureResult:
    embedded: int = 0
    failed: int = 0
    error: str = ""


def embeddings_ensure(*, memory_ids: Sequence[int]) -> EnsureResult:
    """Embed those of `memory_ids` whose current vector is missing (ensure-style: running it
    twice computes nothing the second time). Failures are stored on the rows (`error`) and
    logged; a transient one (endpoint unreachable) is raised again as EmbeddingUnavailable after
    that, so the task retries."""
    encoder = providers.encoder()
    if encoder is None or not memory_ids:
        return EnsureResult()
    due = list(
        selectors.memories_missing_vectors(model=encoder.key)
        .filter(pk__in=list(memory_ids))
        .only("pk", "project_id", "content", "content_hash")
        .order_by("pk")
    )
    if not due:
        return EnsureResult()
    result = EnsureResult()
    by_project: dict[int, list[Memory]] = {}
    for memory in due:
        by_project.setdefault(memory.project_id, []).append(memory)
    projects = Project.objects.in_bulk(list(by_project))
    # Per project: each one's calls are logged and budgeted as its own.
    for project_id, memories in by_project.items():
        # No transaction around the encoding: a remote call must not hold row locks.
        try:
            vectors = encoder.encode(
                [embedding_text(m) for m in memories],
                project=projects.get(project_id),
                purpose="embed_memories",
            )
        except providers.EmbeddingError as exc:
            message = str(exc)[:1000] or type(exc).__name__
            logger.warning(
                "Embedding %d memories with %s failed: %s", len(memories), encoder.key, message
            )
            _store(encoder.key, memories, None, message)
            if isinstance(exc, providers.EmbeddingUnavailable):
                raise
            result.failed += len(memories)
            result.error = message
            continue
        result.embedded += _store(encoder.key, memories, vectors, "")
    return result


@transaction.atomic
def _store(model: str, memories: list[Memory], vectors: object, error: str) -> int:
    """Upsert one row per memory, only for memories whose content is still what was encoded
    (an edit meanwhile sent its own task; this older vector must not stand for it)."""
    live = dict(
        Memory.objects.select_for_update()
        .filter(pk__in=[m.pk for m in memories])
        .values_list("pk", "content_hash")
    )
    now = timezone.now()
    rows = []
    for position, memory in enumerate(memories):
        if live.get(memory.pk) != memory.content_hash:
            continue
        vector = None if vectors is None else vectors[position]  # type: ignore[index]
        rows.append(
            MemoryEmbedding(
                memory_id=memory.pk,
                project_id=memory.project_id,
                model=model,
                content_hash=memory.content_hash,
                dims=0 if vector is None else int(vector.shape[0]),
                vector=None if vector is None else vector.astype("<f4").tobytes(),
                error=error,
                updated_at=now,
            )
        )
    MemoryEmbedding.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["memory", "model"],
        update_fields=["project", "content_hash", "dims", "vector", "error", "updated_at"],
    )
    return len(rows)


@dataclass
class BackfillResult:
    embedded: int = 0
    failed: int = 0


def embeddings_backfill(*, project: Project | None = None) -> BackfillResult:
    """Embed every memory (of `project`) lacking a current vector, in chunks, in this process
    (manage.py embeddings_backfill). Transient failures stop the run (raised), others are
    counted and stored on their rows."""
    encoder = providers.encoder()
    result = BackfillResult()
    if encoder is None:
        return result
    missing = selectors.memories_missing_vectors(
        model=encoder.key, project_id=None if project is None else project.pk
    )
    ids = list(missing.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), CHUNK):
        step = embeddings_ensure(memory_ids=ids[start : start + CHUNK])
        result.embedded += step.embedded
        result.failed += step.failed
    return result


def embeddings_enqueue(*, memory_ids: Sequence[int]) -> int:
    """Send `memory_ids` to the worker for embedding when the transaction commits (nothing
    when EMBEDDINGS_PROVIDER is none). The memory services call this on every write that
    changes content; returns the number of messages."""
    if providers.encoder() is None or not memory_ids:
        return 0
    ids = list(memory_ids)
    for start in range(0, len(ids), CHUNK):
        send_on_commit(tasks.memory_embed, ids[start : start + CHUNK])
    return (len(ids) + CHUNK - 1) // CHUNK


def embeddings_enqueue_missing(*, project: Project) -> int:
    """Rebuild's backfill: send every memory of `project` without a current vector to the
    worker (on commit). Returns how many memories were sent."""
    encoder = providers.encoder()
    if encoder is None:
        return 0
    ids = list(
        selectors.memories_missing_vectors(model=encoder.key, project_id=project.pk)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    embeddings_enqueue(memory_ids=ids)
    return len(ids)
