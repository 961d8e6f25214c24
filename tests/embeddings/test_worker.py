"""Vectors are computed by a real Celery worker when a memory is written or edited."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memoryhub.embeddings.models import MemoryEmbedding
from memoryhub.memories.models import Memory
from tests.embeddings.test_embeddings import (
    EMBED_MODEL,
    PROJECT,
    normalised,
    stored_vector,
    use_fake_embeddings,
)
from tests.fake_llm import FakeLlm, fake_embedding
from tests.recall.memories import add_memory
from tests.worker import Worker, wait_for


def current_row(memory: Memory) -> MemoryEmbedding | None:
    memory.refresh_from_db(fields=["content", "content_hash"])
    return MemoryEmbedding.objects.filter(
        memory=memory, content_hash=memory.content_hash, vector__isnull=False
    ).first()


def test_the_worker_embeds_a_written_memory_and_again_after_an_edit(
    alice_client: APIClient, fake_llm: FakeLlm, settings: Any, celery_worker: Worker
) -> None:
    use_fake_embeddings(fake_llm, settings)
    celery_worker.env |= {
        "EMBEDDINGS_PROVIDER": "openai",
        "EMBEDDINGS_MODEL": EMBED_MODEL,
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": settings.LLM_BASE_URL,
        "LLM_API_KEY": settings.LLM_API_KEY,
        "LLM_MODEL": settings.LLM_MODEL,
    }
    celery_worker.start()
    public_id = add_memory(alice_client, "The staging deploy runs from the release branch.")
    memory = Memory.objects.get(public_id=public_id)

    assert wait_for(lambda: current_row(memory) is not None)
    first = current_row(memory)
    assert first is not None
    assert stored_vector(first) == pytest.approx(normalised(fake_embedding(memory.content)))

    response = alice_client.patch(
        f"{PROJECT}memories/{public_id}/",
        {"content": "Staging deploys run from main since the branch cleanup."},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert wait_for(lambda: current_row(memory) is not None)
    second = current_row(memory)
    assert second is not None and second.content_hash != first.content_hash
    assert stored_vector(second) == pytest.approx(normalised(fake_embedding(memory.content)))
    assert MemoryEmbedding.objects.filter(memory=memory).count() == 1  # replaced, not added
    sent = [r.body["input"] for r in fake_llm.requests if r.path == "/v1/embeddings"]
    assert sent == [
        ["The staging deploy runs from the release branch."],
        ["Staging deploys run from main since the branch cleanup."],
    ]
