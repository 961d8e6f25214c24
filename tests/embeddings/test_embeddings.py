"""The embedding re-scorer: the local forward pass, the openai provider against the fake
server, vectors kept in step with edits, search re-scoring and its fallbacks."""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from memoryhub.embeddings import providers, rescore, services
from memoryhub.embeddings.models import MemoryEmbedding
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.fake_llm import API_KEY, FakeLlm, fake_embedding
from tests.recall.memories import add_memory

PROJECT = "/api/v1/projects/alpha/"
SEARCH = PROJECT + "memories/search/"
EMBED_MODEL = "fake-embed"


def use_fake_embeddings(fake_llm: FakeLlm, settings: Any) -> None:
    fake_llm.configure(settings)
    settings.EMBEDDINGS_PROVIDER = "openai"
    settings.EMBEDDINGS_MODEL = EMBED_MODEL


def normalised(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def stored_vector(row: MemoryEmbedding) -> list[float]:
    import numpy as np

    assert row.vector is not None
    return [float(v) for v in np.frombuffer(bytes(row.vector), dtype="<f4")]


def search_ids(client: APIClient, q: str) -> list[str]:
    response = client.get(SEARCH, {"q": q})
    assert response.status_code == 200, response.content
    return [hit["id"] for hit in response.json()["results"]]


def test_local_forward_pass_matches_the_reference_cosine() -> None:
    from memoryhub.embeddings import minilm

    model = minilm.MiniLM()
    a, b = model.encode(["A man is eating food.", "A man is eating a piece of bread."])
    # bench/dense_probe.py's reference pair (sentence-transformers gives 0.7553).
    assert float(a @ b) == pytest.approx(0.7553, abs=5e-4)
    far = model.encode(["The deploy uses Postgres 16."])[0]
    assert float(a @ far) < 0.3
    assert float(a @ a) == pytest.approx(1.0, abs=1e-5)


def test_openai_provider_embeds_through_the_fake_server_with_the_llm_key(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    use_fake_embeddings(fake_llm, settings)
    add_memory(alice_client, "The staging deploy runs from the release branch.")
    add_memory(alice_client, "Prices are integer cents, never floats.")

    call_command("embeddings_backfill", "--project", "alpha")

    calls = [r for r in fake_llm.requests if r.path == "/v1/embeddings"]
    assert len(calls) == 1  # one batch
    assert calls[0].body["model"] == EMBED_MODEL
    assert calls[0].headers["authorization"] == f"Bearer {API_KEY}"
    rows = list(MemoryEmbedding.objects.select_related("memory").order_by("memory_id"))
    assert [r.model for r in rows] == [f"openai:{EMBED_MODEL}"] * 2
    for row in rows:
        assert row.content_hash == row.memory.content_hash and row.error == ""
        assert stored_vector(row) == pytest.approx(normalised(fake_embedding(row.memory.content)))
    # Ensure-style: nothing is due the second time, so nothing is sent.
    assert services.embeddings_backfill(project=project).embedded == 0
    assert len([r for r in fake_llm.requests if r.path == "/v1/embeddings"]) == 1


def test_failures_are_stored_on_the_row_and_the_next_backfill_recovers(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    use_fake_embeddings(fake_llm, settings)
    add_memory(alice_client, "Lint with ruff before every commit.")
    fake_llm.fail_embeddings(400)

    result = services.embeddings_backfill(project=project)

    assert (result.embedded, result.failed) == (0, 1)
    row = MemoryEmbedding.objects.get()
    assert row.vector is None and "HTTP 400" in row.error
    assert services.embeddings_backfill(project=project).embedded == 1
    row.refresh_from_db()
    assert row.vector is not None and row.error == ""


def test_an_unreachable_endpoint_is_transient_and_the_command_says_so(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    use_fake_embeddings(fake_llm, settings)
    add_memory(alice_client, "Lint with ruff before every commit.")
    settings.LLM_MAX_RETRIES = 0  # one attempt, refused
    fake_llm.fail_embeddings(503)

    with pytest.raises(CommandError, match="unavailable"):
        call_command("embeddings_backfill")
    assert "HTTP 503" in MemoryEmbedding.objects.get().error


def test_the_backfill_command_refuses_without_a_provider(db: None) -> None:
    with pytest.raises(CommandError, match="EMBEDDINGS_PROVIDER is none"):
        call_command("embeddings_backfill")


def _rescoring_bank(client: APIClient) -> tuple[str, str]:
    """A bank where BM25 prefers `lexical` (a rare query word among unrelated ones) and the
    embedding prefers `dense` (two common query words and nothing else)."""
    lexical = add_memory(client, "staging notes alpha beta gamma delta epsilon zeta eta theta")
    dense = add_memory(client, "deploy server")
    for n in range(8):
        add_memory(client, f"deploy the api gateway version {n}")
        add_memory(client, f"server logs rotate nightly batch {n}")
    return lexical, dense


def test_search_re_scores_the_lexical_pool_with_the_embeddings(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    lexical, dense = _rescoring_bank(alice_client)
    query = "deploy staging server"
    assert search_ids(alice_client, query)[0] == lexical  # no provider: BM25 × decay

    use_fake_embeddings(fake_llm, settings)
    # A provider but no vectors yet: still lexical, and no query is embedded.
    assert search_ids(alice_client, query)[0] == lexical
    assert not [r for r in fake_llm.requests if r.path == "/v1/embeddings"]

    services.embeddings_backfill(project=project)
    ranked = search_ids(alice_client, query)
    assert ranked[:2] == [dense, lexical]
    assert fake_llm.requests[-1].body["input"] == [query]  # one call embeds the query

    # The weight is a validated recall setting; 0 turns the re-scorer off for the project.
    response = alice_client.patch(
        PROJECT, {"settings": {"recall": {"embedding_weight": 0}}}, format="json"
    )
    assert response.status_code == 200, response.content
    assert search_ids(alice_client, query)[0] == lexical
    response = alice_client.patch(
        PROJECT, {"settings": {"recall": {"embedding_weight": 1.5}}}, format="json"
    )
    assert response.status_code == 400
    assert "embedding_weight" in response.json()["error"]["message"]


def test_search_falls_back_to_lexical_when_the_endpoint_fails(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    lexical, dense = _rescoring_bank(alice_client)
    use_fake_embeddings(fake_llm, settings)
    services.embeddings_backfill(project=project)
    settings.LLM_MAX_RETRIES = 0
    fake_llm.fail_embeddings(503)

    assert search_ids(alice_client, "deploy staging server")[0] == lexical
    assert search_ids(alice_client, "deploy staging server")[0] == dense  # endpoint back


def test_an_edited_memory_loses_its_vector_until_re_embedded(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    use_fake_embeddings(fake_llm, settings)
    public_id = add_memory(alice_client, "deploy server")
    services.embeddings_backfill(project=project)
    memory = Memory.objects.get(public_id=public_id)
    encoder = providers.encoder()
    assert encoder is not None
    assert rescore.rescore_depth(project_id=project.pk, weight=0.5) == rescore.RESCORE_DEPTH

    response = alice_client.patch(
        f"{PROJECT}memories/{public_id}/", {"content": "rotate the logs"}, format="json"
    )
    assert response.status_code == 200, response.content

    from memoryhub.embeddings import selectors

    assert selectors.memory_vectors(memory_ids=[memory.pk], model=encoder.key) == {}
    assert list(selectors.memories_missing_vectors(model=encoder.key)) == [memory]
    services.embeddings_ensure(memory_ids=[memory.pk])
    row = MemoryEmbedding.objects.get(memory=memory)
    assert stored_vector(row) == pytest.approx(normalised(fake_embedding("rotate the logs")))


def test_a_rebuild_sends_every_memory_without_a_vector_to_the_worker(
    alice_client: APIClient,
    project: Project,
    fake_llm: FakeLlm,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from tests.pipeline.test_rebuild_keeps_decisions import extract, rebuild

    extract(alice_client, project)  # memories written while no provider was configured
    use_fake_embeddings(fake_llm, settings)
    # Extraction stays offline (a project override); embeddings use the server's endpoint.
    body = {"settings": {"llm": {"provider": "offline"}}}
    assert alice_client.patch(PROJECT, body, format="json").status_code == 200
    with django_capture_on_commit_callbacks() as sends:  # captured, not sent to a broker
        detail = rebuild(alice_client, project)

    count = Memory.objects.filter(project=project).count()
    assert count > 0 and detail["embeddings_queued"] == count
    assert sends  # the rebuild's own sends (on commit), besides the re-extraction's


def test_embedding_calls_are_logged_and_held_to_the_project_budget(
    alice_client: APIClient, project: Project, fake_llm: FakeLlm, settings: Any
) -> None:
    from memoryhub.llm.models import LlmCall

    lexical, dense = _rescoring_bank(alice_client)
    use_fake_embeddings(fake_llm, settings)
    settings.LLM_DAILY_TOKEN_BUDGET = 19  # the fake server counts one token per text

    assert services.embeddings_backfill(project=project).embedded == 18
    assert search_ids(alice_client, "deploy staging server")[0] == dense
    logged = list(LlmCall.objects.filter(project=project).order_by("pk"))
    assert [(c.purpose, c.model, c.tokens_in, c.outcome) for c in logged] == [
        ("embed_memories", EMBED_MODEL, 18, "ok"),
        ("embed_query", EMBED_MODEL, 1, "ok"),
    ]
    usage = alice_client.get(PROJECT + "llm/usage/").json()
    assert (usage["budget_used"], usage["state"]) == (19, "budget_exhausted")

    # Over budget: nothing is sent, search keeps the lexical order, a new memory's row says why.
    sent = len(fake_llm.requests)
    assert search_ids(alice_client, "deploy staging server")[0] == lexical
    add_memory(alice_client, "Rotate the deploy keys monthly.")
    result = services.embeddings_backfill(project=project)
    assert (result.embedded, result.failed) == (0, 1)
    assert "daily token budget of 19 exhausted" in MemoryEmbedding.objects.get(vector=None).error
    assert len(fake_llm.requests) == sent
    outcomes = LlmCall.objects.filter(project=project).values_list("purpose", "outcome")
    assert list(outcomes.order_by("pk"))[2:] == [
        ("embed_query", "budget_exhausted"),
        ("embed_memories", "budget_exhausted"),
    ]
