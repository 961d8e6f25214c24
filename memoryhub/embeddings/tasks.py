from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from memoryhub.embeddings.providers import EmbeddingUnavailable


# Ensure-style and so safe to run twice (acks_late): a worker that dies mid-batch leaves the
# message to another. Transient failures (endpoint down) retry with backoff; each attempt's
# error is stored on the memory's embedding row.
@shared_task(
    autoretry_for=(EmbeddingUnavailable, OperationalError),
    retry_backoff=True,
    max_retries=4,
    acks_late=True,
    ignore_result=True,
)
def memory_embed(memory_ids: list[int]) -> None:
    from memoryhub.embeddings import services

    services.embeddings_ensure(memory_ids=memory_ids)
