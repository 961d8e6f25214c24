"""Vectors of the bank's memories, one row per memory and embedding model.

A row is current while its content_hash equals the memory's: an edit changes the memory's
hash, so the old vector stops counting at once (queries join on the hash) and the worker
writes the new one. A row with `error` and no vector records a failed attempt, so failures
show in the bank instead of only in a worker's log.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class MemoryEmbedding(models.Model):
    memory = models.ForeignKey(
        "memories.Memory", on_delete=models.CASCADE, related_name="embeddings"
    )
    # Denormalised from the memory: "does this project have vectors" without a join.
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)  # "<provider>:<model>", e.g. local:all-MiniLM-L6-v2
    content_hash = models.CharField(max_length=64)  # the memory's content_hash when embedded
    dims = models.PositiveIntegerField(default=0)
    vector = models.BinaryField(null=True)  # float32, little-endian, L2-normalised
    error = models.CharField(max_length=1000, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "model"], name="embedding_one_per_model"),
        ]
        indexes = [
            # project_has_vectors and the backfill's "what is missing" scan.
            models.Index(fields=["project", "model"]),
        ]

    def __str__(self) -> str:
        return f"{self.model} of memory {self.memory_id}"
