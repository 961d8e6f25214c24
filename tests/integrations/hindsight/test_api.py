"""The Hindsight routes in-process (Django's test client): auth, errors, bank ↔ project,
retain upserts, recall filters, reflect, mental models and isolation. The official client
against a live server with a real worker is in test_client_live.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.integrations.hindsight import services as hindsight_services
from memoryhub.memories.models import BankArtifact, Memory
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.models import Job
from memoryhub.sessions import services as session_services
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from tests.integrations.hindsight.omp import MORE_TURNS, TURNS, full_session_body
from tests.recall.memories import add_memory

V = "/v1/default/banks"


def extract(project: Project) -> None:
    """Run every due stage-1 job in-process (what the worker does)."""
    for job in Job.objects.filter(project=project, kind=Job.Kind.STAGE1):
        pipeline_services.stage1_run(job_id=job.pk)


def raw_client(token_client: APIClient) -> APIClient:
    """The same token sent raw (no "Bearer"), as Hindsight also accepts."""
    header = token_client._credentials["HTTP_AUTHORIZATION"]  # type: ignore[attr-defined]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header.removeprefix("Bearer "))
    return client


def test_it_requires_a_token_and_answers_in_hindsights_shape(project: Project) -> None:
    response = APIClient().post(f"{V}/alpha/memories/recall", {"query": "x"}, format="json")
    assert response.status_code == 401
    assert set(response.json()) == {"detail"}
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Bearer mh_rw_notarealtoken0000000000")
    assert bad.get(f"{V}/alpha/profile").json() == {"detail": "Invalid API key"}


def test_it_accepts_the_raw_token_too(alice_client: APIClient) -> None:
    response = raw_client(alice_client).get(f"{V}/alpha/profile")
    assert response.status_code == 200, response.content
    assert response.json()["bank_id"] == "alpha"


def test_invalid_bodies_are_422_with_fastapi_details(alice_client: APIClient) -> None:
    response = alice_client.post(f"{V}/alpha/memories/recall", {"types": ["nope"]}, format="json")
    assert response.status_code == 422
    locs = {tuple(e["loc"]) for e in response.json()["detail"]}
    assert ("body", "query") in locs and ("body", "types", 0) in locs
    assert alice_client.get("/v1/default/nowhere").json() == {"detail": "Not Found"}


def test_put_bank_creates_a_project_once_and_stores_missions(alice_client: APIClient) -> None:
    body = {"reflect_mission": "Help the team ship.", "retain_mission": "Keep decisions."}
    first = alice_client.put(f"{V}/new-bank", body, format="json")
    again = alice_client.put(f"{V}/new-bank", body, format="json")
    assert first.status_code == again.status_code == 200, first.content
    assert first.json() == again.json()
    assert first.json()["mission"] == "Help the team ship."
    project = Project.objects.get(slug="new-bank")
    assert project.settings["hindsight"] == body
    assert AuditEvent.objects.filter(project=project, verb="project.updated").count() == 1


def test_put_bank_refuses_an_id_that_cannot_be_a_slug(alice_client: APIClient) -> None:
    response = alice_client.put(f"{V}/Not_A_Slug", {}, format="json")
    assert response.status_code == 400
    assert "lowercase" in response.json()["detail"]


def test_a_member_may_put_the_same_missions_but_not_change_them(
    alice_client: APIClient, bob_client: APIClient
) -> None:
    alice_client.put(f"{V}/alpha", {"reflect_mission": "m1"}, format="json")
    assert bob_client.put(f"{V}/alpha", {"reflect_mission": "m1"}, format="json").status_code == 200
    assert bob_client.put(f"{V}/alpha", {}, format="json").status_code == 200
    changed = bob_client.put(f"{V}/alpha", {"reflect_mission": "m2"}, format="json")
    assert changed.status_code == 403 and "maintainer" in changed.json()["detail"]


def test_retain_resent_transcript_replaces_without_duplicates_and_extracts_incrementally(
    alice_client: APIClient, project: Project
) -> None:
    first = alice_client.post(
        f"{V}/alpha/memories", full_session_body("sess-1", "alpha", TURNS), format="json"
    )
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["async"] is True and body["items_count"] == 1 and body["operation_id"]
    session = AgentSession.objects.get(project=project, external_id="sess-1")
    assert session.record_count == len(TURNS)
    assert session.metadata["tags"] == ["project:alpha"]
    rows = list(SessionRecord.objects.filter(session=session).order_by("index"))
    assert [r.type for r in rows] == ["user", "assistant"] * 3
    assert rows[0].content == TURNS[0][2] and rows[0].timestamp is not None
    extract(project)
    job = Job.objects.get(kind=Job.Kind.STAGE1, key=str(session.public_id))
    assert job.success_watermark == len(TURNS)
    first_ids = [r.pk for r in rows]

    # oh-my-pi re-sends the whole session, grown by two turns, under the same document_id.
    again = alice_client.post(
        f"{V}/alpha/memories",
        full_session_body("sess-1", "alpha", TURNS + MORE_TURNS),
        format="json",
    )
    assert again.status_code == 200
    rows = list(SessionRecord.objects.filter(session=session).order_by("index"))
    assert len(rows) == len(TURNS) + len(MORE_TURNS)
    assert [r.pk for r in rows[: len(TURNS)]] == first_ids  # the head is kept as stored
    job.refresh_from_db()
    assert (job.success_watermark, job.input_watermark) == (len(TURNS), len(rows))

    # The same transcript a third time changes nothing at all.
    alice_client.post(
        f"{V}/alpha/memories",
        full_session_body("sess-1", "alpha", TURNS + MORE_TURNS),
        format="json",
    )
    assert SessionRecord.objects.filter(session=session).count() == len(rows)


def test_a_changed_transcript_replaces_the_tail_and_rewinds_extraction(
    alice_client: APIClient, project: Project
) -> None:
    alice_client.post(f"{V}/alpha/memories", full_session_body("s2", "alpha", TURNS), format="json")
    extract(project)
    edited = [*TURNS[:2], ("user", "2026-11-30T05:00:00Z", "Actually, rebase before merging.")]
    alice_client.post(
        f"{V}/alpha/memories", full_session_body("s2", "alpha", edited), format="json"
    )
    session = AgentSession.objects.get(external_id="s2")
    contents = list(
        SessionRecord.objects.filter(session=session)
        .order_by("index")
        .values_list("content", flat=True)
    )
    assert contents == [t[2] for t in edited]
    assert session.record_count == 3
    job = Job.objects.get(kind=Job.Kind.STAGE1, key=str(session.public_id))
    assert (job.success_watermark, job.input_watermark) == (2, 3)
    assert AuditEvent.objects.filter(verb="session.records_replaced").exists()


def test_retain_redacts_secrets_before_storage(alice_client: APIClient, project: Project) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    body = {"items": [{"content": f"The deploy token is {secret}", "document_id": "sec"}]}
    assert alice_client.post(f"{V}/alpha/memories", body, format="json").status_code == 200
    stored = SessionRecord.objects.get(session__external_id="sec").content
    assert secret not in stored and "REDACTED" in stored


def test_read_only_tokens_recall_but_never_retain(
    alice_ro_client: APIClient, project: Project
) -> None:
    body = full_session_body("ro", "alpha", TURNS)
    response = alice_ro_client.post(f"{V}/alpha/memories", body, format="json")
    assert response.status_code == 403 and "read-only" in response.json()["detail"]
    assert not AgentSession.objects.filter(external_id="ro").exists()
    recall = alice_ro_client.post(f"{V}/alpha/memories/recall", {"query": "x"}, format="json")
    assert recall.status_code == 200


def test_recall_honours_types_tags_and_max_tokens(
    alice_client: APIClient, project: Project
) -> None:
    add_memory(alice_client, "Deploys use blue green switching.", "fact", source={"session": "t-a"})
    add_memory(
        alice_client, "Deploys failed when the cache was cold.", "lesson", source={"session": "t-b"}
    )
    add_memory(alice_client, "Deploys need the VPN.", "fact")  # untagged
    for doc, tag in (("t-a", "project:web"), ("t-b", "project:api")):
        alice_client.post(
            f"{V}/alpha/memories",
            {"items": [{"content": "x", "document_id": doc, "tags": [tag]}]},
            format="json",
        )

    def recall(**body: Any) -> list[str]:
        response = alice_client.post(
            f"{V}/alpha/memories/recall", {"query": "deploys", **body}, format="json"
        )
        assert response.status_code == 200, response.content
        return sorted(r["text"] for r in response.json()["results"])

    assert len(recall()) == 3
    assert recall(types=["experience"]) == ["Deploys failed when the cache was cold."]
    assert recall(tags=["project:web"]) == sorted(
        ["Deploys use blue green switching.", "Deploys need the VPN."]
    )
    assert recall(tags=["project:web"], tags_match="any_strict") == [
        "Deploys use blue green switching."
    ]
    assert recall(tags=[], tags_match="exact") == ["Deploys need the VPN."]
    assert len(recall(max_tokens=12)) == 1
    result = alice_client.post(
        f"{V}/alpha/memories/recall", {"query": "cache"}, format="json"
    ).json()["results"][0]
    assert result["type"] == "experience" and result["tags"] == ["project:api"]
    assert result["document_id"] == "t-b" and result["mentioned_at"]


def test_omp_bank_resolves_through_the_project_tag(
    alice_client: APIClient, project: Project
) -> None:
    add_memory(alice_client, "Releases are tagged by the release bot.", "fact")
    body = {"query": "releases", "tags": ["project:alpha"], "tags_match": "any"}
    response = alice_client.post(f"{V}/omp/memories/recall", body, format="json")
    assert [r["text"] for r in response.json()["results"]] == [
        "Releases are tagged by the release bot."
    ]
    # A tag naming nothing the token reaches leaves the bank unknown: no results, no error.
    body["tags"] = ["project:charlie-lab"]
    assert alice_client.post(f"{V}/omp/memories/recall", body, format="json").json() == {
        "results": []
    }


def test_a_restricted_token_always_acts_in_its_project(
    alice: User, project: Project, make_client: Callable[..., APIClient]
) -> None:
    client = make_client(alice, project=project)
    body = full_session_body("restricted", "some-repo", TURNS)
    assert client.post(f"{V}/omp/memories", body, format="json").status_code == 200
    assert AgentSession.objects.get(external_id="restricted").project == project


def test_outsiders_learn_nothing(
    alice_client: APIClient, charlie_client: APIClient, project: Project
) -> None:
    add_memory(alice_client, "The secret roadmap names Project Falcon.", "fact")
    hidden = charlie_client.post(f"{V}/alpha/memories/recall", {"query": "falcon"}, format="json")
    missing = charlie_client.post(f"{V}/nope/memories/recall", {"query": "falcon"}, format="json")
    assert hidden.json() == missing.json() == {"results": []}
    for path in ("/profile", "/stats", "/documents", "/memories/list", "/mental-models/x"):
        a = charlie_client.get(f"{V}/alpha{path}")
        b = charlie_client.get(f"{V}/no-such-bank{path}")
        assert a.status_code == b.status_code == 404, path
        assert a.json() == b.json()
    write = charlie_client.post(
        f"{V}/alpha/memories", full_session_body("x", "alpha", TURNS), format="json"
    )
    assert write.status_code == 404 and not AgentSession.objects.filter(external_id="x").exists()
    reflect = charlie_client.post(f"{V}/alpha/reflect", {"query": "falcon"}, format="json")
    assert reflect.status_code == 404
    assert charlie_client.get(f"{V}").json()["banks"][0]["bank_id"] == "charlie-lab"


def test_reflect_offline_lists_the_most_relevant_memories(
    alice_client: APIClient, project: Project
) -> None:
    add_memory(alice_client, "The API gateway times out after 30 seconds.", "fact")
    response = alice_client.post(f"{V}/alpha/reflect", {"query": "gateway timeout"}, format="json")
    assert response.status_code == 200
    text = response.json()["text"]
    assert "The API gateway times out after 30 seconds." in text and text.startswith("**")
    empty = alice_client.post(f"{V}/alpha/reflect", {"query": "zebra"}, format="json").json()
    assert empty["text"] == "No relevant information found in memory."


def test_reflect_uses_the_configured_llm(
    alice_client: APIClient, project: Project, fake_llm: Any, settings: Any
) -> None:
    fake_llm.configure(settings)
    add_memory(alice_client, "The API gateway times out after 30 seconds.", "fact")
    fake_llm.reply("The gateway gives up after **30 s** [1].", tokens_in=321, tokens_out=12)
    response = alice_client.post(f"{V}/alpha/reflect", {"query": "gateway timeout"}, format="json")
    assert response.json()["text"] == "The gateway gives up after **30 s** [1]."
    assert response.json()["usage"]["input_tokens"] == 321
    prompt = fake_llm.requests[-1].messages[-1]["content"]
    assert "The API gateway times out after 30 seconds." in prompt


def test_mental_model_lifecycle(alice_client: APIClient, project: Project) -> None:
    add_memory(alice_client, "Code review needs two approvals.", "rule")
    create = {
        "id": "review-rules",
        "name": "Review rules",
        "source_query": "code review approvals",
        "max_tokens": 300,
        "trigger": {"mode": "delta", "refresh_after_consolidation": True},
    }
    response = alice_client.post(f"{V}/alpha/mental-models", create, format="json")
    assert response.status_code == 200 and response.json()["mental_model_id"] == "review-rules"
    operation = response.json()["operation_id"]
    # Before its first refresh the model has no content: never a placeholder.
    listed = alice_client.get(f"{V}/alpha/mental-models?detail=content").json()
    assert listed["total"] == 1 and listed["items"][0]["content"] == ""
    assert (
        "content"
        not in alice_client.get(f"{V}/alpha/mental-models?detail=metadata").json()["items"][0]
    )
    status = alice_client.get(f"{V}/alpha/operations/{operation}").json()
    assert status["status"] == "pending"
    # An id with a time no datetime can hold is an unknown operation, not a 500.
    for forged in ("mm.99999999999999999999.review-rules", "mm.253402300800000.review-rules"):
        unknown = alice_client.get(f"{V}/alpha/operations/{forged}")
        assert unknown.status_code == 404, (forged, unknown.content)

    assert (
        hindsight_services.mental_model_refresh(project=project, model_id="review-rules")
        == "refreshed"
    )
    model = alice_client.get(f"{V}/alpha/mental-models/review-rules?detail=content").json()
    assert "Code review needs two approvals." in model["content"]
    assert model["trigger"]["refresh_after_consolidation"] is True and model["last_refreshed_at"]
    assert alice_client.get(f"{V}/alpha/operations/{operation}").json()["status"] == "completed"
    assert BankArtifact.objects.filter(
        project=project, path="mental-models/review-rules.md"
    ).exists()

    # An existing id is success and changes nothing.
    again = alice_client.post(f"{V}/alpha/mental-models", create | {"name": "Other"}, format="json")
    assert again.status_code == 200
    assert (
        alice_client.get(f"{V}/alpha/mental-models/review-rules").json()["name"] == "Review rules"
    )

    add_memory(alice_client, "Code review of migrations needs a DBA approval.", "rule")
    refresh = alice_client.post(f"{V}/alpha/mental-models/review-rules/refresh")
    assert refresh.json()["status"] == "queued"
    hindsight_services.mental_model_refresh(project=project, model_id="review-rules")
    history = alice_client.get(f"{V}/alpha/mental-models/review-rules/history").json()
    assert len(history) == 2 and history[-1]["previous_content"] == ""
    assert "two approvals" in history[0]["previous_content"]

    assert alice_client.delete(f"{V}/alpha/mental-models/review-rules").json() == {
        "status": "deleted"
    }
    assert alice_client.get(f"{V}/alpha/mental-models/review-rules").status_code == 404
    assert not BankArtifact.objects.filter(path="mental-models/review-rules.md").exists()


def test_consolidation_keeps_mental_models(alice_client: APIClient, project: Project) -> None:
    add_memory(alice_client, "Code review needs two approvals.", "rule")
    create = {"id": "rules", "name": "Rules", "source_query": "code review"}
    alice_client.post(f"{V}/alpha/mental-models", create, format="json")
    hindsight_services.mental_model_refresh(project=project, model_id="rules")
    pipeline_services.stage2_build(project=project)
    assert BankArtifact.objects.filter(project=project, path="mental-models/rules.md").exists()


def test_memories_list_and_invalidate(alice_client: APIClient, project: Project) -> None:
    mid = add_memory(alice_client, "The linter is ruff.", "fact")
    listed = alice_client.get(f"{V}/alpha/memories/list").json()
    assert listed["total"] == 1 and listed["items"][0]["state"] == "valid"
    patch = alice_client.patch(
        f"{V}/alpha/memories/{mid}",
        {"state": "invalidated", "reason": "We moved to flake8."},
        format="json",
    )
    assert patch.status_code == 200 and patch.json()["state"] == "invalidated"
    memory = Memory.objects.get(public_id=mid)
    assert (memory.status, memory.status_reason) == ("stale", "We moved to flake8.")
    assert alice_client.get(f"{V}/alpha/memories/list").json()["total"] == 0
    assert alice_client.get(f"{V}/alpha/memories/list?state=invalidated").json()["total"] == 1
    alice_client.patch(f"{V}/alpha/memories/{mid}", {"state": "valid"}, format="json")
    assert Memory.objects.get(public_id=mid).status == "active"
    assert alice_client.get(f"{V}/alpha/memories/not-a-uuid").status_code == 404
    # Fields of UpdateMemoryRequest MemoryHub has no counterpart for are refused by name, with
    # nothing applied (they used to answer 200 and change nothing); null means "leave it".
    refused = alice_client.patch(
        f"{V}/alpha/memories/{mid}",
        {"fact_type": "experience", "context": "ctx", "text": "The linter is black."},
        format="json",
    )
    assert refused.status_code == 422, refused.content
    assert {tuple(e["loc"]) for e in refused.json()["detail"]} == {
        ("body", "fact_type"),
        ("body", "context"),
    }
    assert Memory.objects.get(public_id=mid).content == "The linter is ruff."
    nulls = alice_client.patch(
        f"{V}/alpha/memories/{mid}",
        {"context": None, "text": "The linter is black."},
        format="json",
    )
    assert nulls.status_code == 200 and nulls.json()["text"] == "The linter is black."


def test_documents_list_get_delete(alice_client: APIClient, project: Project) -> None:
    alice_client.post(
        f"{V}/alpha/memories", full_session_body("doc-1", "alpha", TURNS), format="json"
    )
    listed = alice_client.get(f"{V}/alpha/documents").json()
    assert [d["id"] for d in listed["items"]] == ["doc-1"]
    doc = alice_client.get(f"{V}/alpha/documents/doc-1").json()
    assert doc["original_text"].startswith("[role: user]\n[timestamp: 2026-11-30T04:30:51.065")
    assert doc["tags"] == ["project:alpha"]
    deleted = alice_client.delete(f"{V}/alpha/documents/doc-1").json()
    assert deleted["success"] is True
    assert alice_client.get(f"{V}/alpha/documents/doc-1").json() == {"detail": "Document not found"}


def test_stats_health_and_version(alice_client: APIClient, project: Project) -> None:
    add_memory(alice_client, "The linter is ruff.", "fact")
    stats = alice_client.get(f"{V}/alpha/stats").json()
    assert stats["total_nodes"] == 1 and stats["nodes_by_fact_type"]["world"] == 1
    assert APIClient().get("/health").json()["status"] == "healthy"
    assert APIClient().get("/version").json()["api_version"]


def test_the_settings_section_is_validated_when_saved(alice_client: APIClient) -> None:
    bad: dict[str, Any]
    for bad in ({"mental_models": []}, {"reflect_mission": 3}, {"other": 1}):
        response = alice_client.patch(
            "/api/v1/projects/alpha/", {"settings": {"hindsight": bad}}, format="json"
        )
        assert response.status_code == 400, bad
        assert "hindsight" in response.json()["error"]["message"]


def test_a_document_belongs_to_whoever_retained_it_first(
    alice_client: APIClient, bob_client: APIClient, project: Project
) -> None:
    first = {"items": [{"content": "alice: I prefer tabs.", "document_id": "notes"}]}
    assert alice_client.post(f"{V}/alpha/memories", first, format="json").status_code == 200
    # bob's words would be extracted as alice's (her private memories included): refused.
    second = {"items": [{"content": "I prefer zebra themes.", "document_id": "notes"}]}
    refused = bob_client.post(f"{V}/alpha/memories", second, format="json")
    assert refused.status_code == 409
    assert "another person" in refused.json()["detail"]
    records = SessionRecord.objects.filter(session__external_id="notes")
    assert [r.content for r in records] == ["alice: I prefer tabs."]


def test_a_document_whose_author_is_gone_is_nobodys_to_append_to(
    alice_client: APIClient, project: Project
) -> None:
    # Its creator's account was deleted (created_by_user is now empty), or a process made it.
    session_services.session_get_or_create(
        project=project, actor=Actor.for_system("import"), external_id="orphan"
    )
    body = {"items": [{"content": "my words", "document_id": "orphan", "update_mode": "append"}]}
    assert alice_client.post(f"{V}/alpha/memories", body, format="json").status_code == 409
    assert not SessionRecord.objects.filter(session__external_id="orphan").exists()
