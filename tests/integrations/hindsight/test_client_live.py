"""The official Hindsight Python client (hindsight-client from PyPI) against a live MemoryHub
with a real Celery worker: what oh-my-pi and every Hindsight integration do, over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hindsight_client import Hindsight
from hindsight_client.hindsight_client import _run_async
from hindsight_client_api.exceptions import ApiException

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.llm.models import LlmCall
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.integrations.hindsight.omp import MORE_TURNS, TURNS, frame
from tests.worker import Worker, wait_for

pytestmark = pytest.mark.worker

SESSION = "0193f1c2-omp-session"


def token(user: User) -> str:
    return token_create(user=user, name="hindsight", actor=Actor.for_system("test"))[1]


def omp_item(turns: list[tuple[str, str, str]], project: str = "alpha") -> dict[str, Any]:
    """One full-session item exactly as oh-my-pi sends it (reference §2.3–2.5)."""
    return {
        "content": frame(turns),
        "timestamp": "2026-11-30T04:30:50.304+00:00",
        "context": "omp",
        "metadata": {"session_id": SESSION},
        "document_id": SESSION,
        "tags": [f"project:{project}"],
    }


def operation_done(client: Hindsight, bank: str, operation_id: str | None) -> Callable[[], bool]:
    assert operation_id

    def check() -> bool:
        status = _run_async(client.operations.get_operation_status(bank, operation_id))
        assert status.status != "failed", status
        return bool(status.status == "completed")

    return check


def consolidated(project: Project) -> bool:
    job = Job.objects.filter(project=project, kind=Job.Kind.STAGE2).first()
    return (
        job is not None
        and job.status == Job.Status.DONE
        and (job.success_watermark == job.input_watermark)
    )


def extraction_reply(content: str, first: int, last: int) -> str:
    keywords = ["git", "force-push", "main", "branch", "review", "pull", "request", "history"]
    return json.dumps(
        {
            "memories": [
                {
                    "kind": "rule",
                    "content": content,
                    "title": content[:40],
                    "keywords": keywords,
                    "importance": 3,
                    "record_start": first,
                    "record_end": last,
                }
            ]
        }
    )


ROLLOUT = json.dumps({"rollout_summary": "Git rules.", "rollout_slug": "git", "raw_memory": "Git."})
CONSOLIDATION = json.dumps(
    {"memory_md": "# Memory\n- Git rules.", "memory_summary": "Git rules.", "skills": []}
)


def test_retain_twice_is_incremental_then_recall_and_reflect(
    celery_worker: Worker,
    live_server: Any,
    project: Project,
    alice: User,
    fake_llm: Any,
    settings: Any,
) -> None:
    fake_llm.configure(settings)  # reflect runs in the live server, i.e. this process
    celery_worker.env |= {
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": fake_llm.url,
        "LLM_MODEL": "fake",
        "LLM_API_KEY": "test-key",
        "LLM_MAX_RETRIES": "0",
    }
    celery_worker.start()
    client = Hindsight(base_url=live_server.url, api_key=token(alice), timeout=30)

    profile = client.create_bank("alpha", reflect_mission="Help alpha's agents ship safely.")
    assert profile.bank_id == "alpha" and profile.mission == "Help alpha's agents ship safely."

    for reply in (extraction_reply("Never force-push to main.", 0, 5), ROLLOUT, CONSOLIDATION):
        fake_llm.reply(reply, tokens_in=500, tokens_out=50)
    first = client.retain_batch("alpha", items=[omp_item(TURNS)], retain_async=True)
    assert first.success and first.var_async and first.items_count == 1 and first.operation_id
    assert wait_for(operation_done(client, "alpha", first.operation_id), timeout=90)
    assert wait_for(lambda: consolidated(project), timeout=90)

    # oh-my-pi re-sends the whole, grown session under the same document_id.
    for reply in (
        extraction_reply("Deploy with make deploy from main.", 6, 9),
        ROLLOUT,
        CONSOLIDATION,
    ):
        fake_llm.reply(reply, tokens_in=500, tokens_out=50)
    second = client.retain_batch("alpha", items=[omp_item(TURNS + MORE_TURNS)], retain_async=True)
    assert second.operation_id != first.operation_id
    assert wait_for(operation_done(client, "alpha", second.operation_id), timeout=90)
    assert wait_for(lambda: consolidated(project), timeout=90)

    session = AgentSession.objects.get(project=project, external_id=SESSION)
    texts = list(SessionRecord.objects.filter(session=session).values_list("content", flat=True))
    assert sorted(texts) == sorted(t[2] for t in TURNS + MORE_TURNS)  # no duplicates
    # Per retain the worker made three calls in order: stage 1 (memories, output), stage 2.
    assert (
        list(LlmCall.objects.order_by("pk").values_list("purpose", flat=True))
        == [
            "stage1_memories",
            "stage1_output",
            "stage2",
        ]
        * 2
    )
    extraction_prompts = [fake_llm.requests[i].messages[-1]["content"] for i in (0, 3)]
    # The second extraction read only the new turns: LLM input does not grow with each resend.
    assert TURNS[0][2] in extraction_prompts[0] and MORE_TURNS[0][2] not in extraction_prompts[0]
    assert MORE_TURNS[0][2] in extraction_prompts[1] and TURNS[0][2] not in extraction_prompts[1]
    job = Job.objects.get(kind=Job.Kind.STAGE1, key=str(session.public_id))
    assert job.detail["records"] == len(MORE_TURNS)

    recalled = client.recall(
        "alpha",
        "force-push to main",
        types=["world", "experience"],
        max_tokens=1024,
        budget="mid",
        tags=["project:alpha"],
        tags_match="any",
    )
    assert [r.text for r in recalled.results][0] == "Never force-push to main."
    assert recalled.results[0].type == "world" and recalled.results[0].mentioned_at
    assert client.recall("alpha", "force-push", types=["observation"]).results == []
    assert (
        client.recall("alpha", "force-push", tags=["project:web"], tags_match="any_strict").results
        == []
    )

    fake_llm.reply("Never force-push to **main** [1].", tokens_in=200, tokens_out=9)
    answer = client.reflect("alpha", "What is our git policy?", budget="mid")
    assert answer.text == "Never force-push to **main** [1]."
    assert "Never force-push to main." in fake_llm.requests[-1].messages[-1]["content"]
    assert "Help alpha's agents ship safely." in fake_llm.requests[-1].messages[0]["content"]
    client.close()


def test_mental_models_and_isolation_with_the_official_client(
    celery_worker: Worker,
    live_server: Any,
    project: Project,
    alice: User,
    charlie: User,
    charlies_project: Project,
) -> None:
    celery_worker.start()  # the offline provider: extractive content
    alice_hs = Hindsight(base_url=live_server.url, api_key=token(alice), timeout=30)
    retained = alice_hs.retain_batch("alpha", items=[omp_item(TURNS)], retain_async=True)
    assert wait_for(operation_done(alice_hs, "alpha", retained.operation_id), timeout=90)
    assert wait_for(lambda: consolidated(project), timeout=90)

    created = alice_hs.create_mental_model(
        "alpha",
        name="Git policy",
        source_query="force-push main pull request",
        id="git-policy",
        max_tokens=600,
        trigger={"mode": "delta", "refresh_after_consolidation": True},
    )
    assert created.mental_model_id == "git-policy"
    assert wait_for(operation_done(alice_hs, "alpha", created.operation_id), timeout=60)
    model = alice_hs.get_mental_model("alpha", "git-policy", detail="content")
    assert "force-push" in (model.content or "").lower(), model
    assert model.trigger is not None and model.trigger.refresh_after_consolidation is True
    again = alice_hs.create_mental_model("alpha", name="x", source_query="y", id="git-policy")
    assert again.mental_model_id == "git-policy"  # an existing id is success
    listed = alice_hs.list_mental_models("alpha", detail="metadata")
    assert [m.id for m in listed.items] == ["git-policy"] and listed.items[0].content is None

    # A new retain → extraction → consolidation refreshes the model (refresh_after_consolidation).
    later = ("user", "2026-11-30T05:00:00.000Z", "Never force-push to the release branches either.")
    retained = alice_hs.retain_batch("alpha", items=[omp_item([*TURNS, later])], retain_async=True)
    assert wait_for(operation_done(alice_hs, "alpha", retained.operation_id), timeout=90)
    refreshed_before = model.last_refreshed_at
    assert wait_for(
        lambda: (
            alice_hs.get_mental_model("alpha", "git-policy").last_refreshed_at != refreshed_before
        ),
        timeout=90,
    )
    refresh = alice_hs.refresh_mental_model("alpha", "git-policy")
    assert wait_for(operation_done(alice_hs, "alpha", refresh.operation_id), timeout=60)
    history = alice_hs.get_mental_model_history("alpha", "git-policy")
    # Its content changed once (the release-branch rule joined it): the old text is history.
    assert [h["previous_content"] for h in history][-1] == ""
    assert any("force-push to main" in h["previous_content"] for h in history)
    content = alice_hs.get_mental_model("alpha", "git-policy", detail="content").content or ""
    assert "release branches" in content

    # Another team's token sees nothing and cannot tell alpha exists.
    charlie_hs = Hindsight(base_url=live_server.url, api_key=token(charlie), timeout=30)
    assert charlie_hs.recall("alpha", "force-push").results == []
    assert charlie_hs.list_mental_models("alpha").items == []
    statuses = []
    for call in (
        lambda hs, bank: hs.get_mental_model(bank, "git-policy"),
        lambda hs, bank: hs.reflect(bank, "force-push"),
        lambda hs, bank: hs.retain_batch(bank, items=[omp_item(TURNS)]),
        lambda hs, bank: hs.list_memories(bank),
    ):
        for bank in ("alpha", "no-such-bank"):
            with pytest.raises(ApiException) as caught:
                call(charlie_hs, bank)
            statuses.append((caught.value.status, caught.value.body))
    assert all(status == 404 for status, _ in statuses)
    assert statuses[0::2] == statuses[1::2]  # alpha's answers equal a missing bank's

    alice_hs.delete_mental_model("alpha", "git-policy")
    with pytest.raises(ApiException) as caught:
        alice_hs.get_mental_model("alpha", "git-policy")
    assert caught.value.status == 404
    alice_hs.close()
    charlie_hs.close()
