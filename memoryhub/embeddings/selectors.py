"""Reads of the stored vectors. Callers pass memory ids their own, scoped query already
returned (search's candidates); nothing here lists memories to anyone."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, F, OuterRef, QuerySet

from memoryhub.embeddings.models import MemoryEmbedding
from memoryhub.memories.models import Memory


def _current() -> QuerySet[MemoryEmbedding]:
    # A vector counts only while it was computed from the memory's present content.
    return MemoryEmbedding.objects.filter(
        vector__isnull=False, content_hash=F("memory__content_hash")
    )


def project_has_vectors(*, project_id: int, model: str) -> bool:
    return MemoryEmbedding.objects.filter(
        project_id=project_id, model=model, vector__isnull=False
    ).exists()


def memory_vectors(*, memory_ids: Iterable[int], model: str) -> dict[int, bytes]:
    """Current vectors (float32 bytes) of those of `memory_ids` that have one."""
    rows = _current().filter(memory_id__in=list(memory_ids), model=model)
    pairs = rows.values_list("memory", "vector")
    return {memory_id: bytes(vector) for memory_id, vector in pairs if vector is not None}


def memories_missing_vectors(*, model: str, project_id: int | None = None) -> QuerySet[Memory]:
    """Memories without a current vector of `model` (never embedded, edited since, failed)."""
    memories = (
        Memory.objects.all() if project_id is None else Memory.objects.filter(project_id=project_id)
    )
    current = _current().filter(memory=OuterRef("pk"), model=model)
    return memories.filter(~Exists(current))
