"""One name per concept (issue 9): the pipeline's knobs, job kinds and LLM purposes say stage 1 /
stage 2. A setting sent under oh-my-pi's old name is refused with the new name; stored settings,
jobs and call-log rows are renamed by migration pipeline 0004."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from memoryhub.llm.models import LlmCall
from memoryhub.pipeline.conf import RENAMED, PipelineConfig, pipeline_config
from memoryhub.pipeline.models import Job
from projects.models import Project

P = "/api/v1/projects/alpha/"
migration = importlib.import_module("memoryhub.pipeline.migrations.0004_stage_names")


def test_every_old_name_maps_to_a_knob() -> None:
    knobs = {f for f in PipelineConfig.__dataclass_fields__}
    assert set(RENAMED.values()) <= knobs
    assert not set(RENAMED) & knobs
    assert migration.SETTINGS == RENAMED


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_an_old_key_is_refused_naming_the_new_one(
    alice_client: APIClient, project: Project, old: str
) -> None:
    response = alice_client.patch(P, {"settings": {"pipeline": {old: 1}}}, format="json")
    assert response.status_code == 400
    assert f"pipeline.{RENAMED[old]}" in response.content.decode()
    project.refresh_from_db()
    assert "pipeline" not in project.settings


def test_the_new_keys_are_accepted(alice_client: APIClient, project: Project) -> None:
    body = {"settings": {"pipeline": {"stage2_lease_seconds": 240, "stage1_payload_percent": 0.5}}}
    assert alice_client.patch(P, body, format="json").status_code == 200
    project.refresh_from_db()
    config = pipeline_config(project.settings)
    assert (config.stage2_lease_seconds, config.stage1_payload_percent) == (240, 0.5)


def test_the_migration_renames_stored_settings_jobs_and_purposes(project: Project) -> None:
    stored = {
        "phase2_lease_seconds": 240,
        "max_rollouts_per_scan": 5,
        "stage1_input_token_limit": 900,  # already new: wins over the old name below
        "phase1_input_token_limit": 100,
        "dream_idle_minutes": 60,
    }
    Project.objects.filter(pk=project.pk).update(settings={"pipeline": stored, "x": 1})
    Job.objects.create(kind="consolidate", key="project:1", project=project)
    LlmCall.objects.create(project=project, purpose="extraction", role="smol", outcome="ok")
    LlmCall.objects.create(project=project, purpose="consolidation", role="smol", outcome="ok")

    migration.forwards(apps, None)

    project.refresh_from_db()
    assert project.settings == {
        "pipeline": {
            "stage2_lease_seconds": 240,
            "stage1_max_sessions_per_scan": 5,
            "stage1_input_token_limit": 900,
            "dream_idle_minutes": 60,
        },
        "x": 1,
    }
    pipeline_config(project.settings)  # valid under today's names
    assert list(Job.objects.values_list("kind", flat=True)) == [Job.Kind.STAGE2]
    assert sorted(LlmCall.objects.values_list("purpose", flat=True)) == [
        "stage1_memories",
        "stage2",
    ]

    migration.backwards(apps, None)
    project.refresh_from_db()
    assert project.settings["pipeline"]["phase2_lease_seconds"] == 240
    assert list(Job.objects.values_list("kind", flat=True)) == ["consolidate"]


@pytest.mark.parametrize("share", [70, 0, -0.1, 1.01])
def test_the_transcript_share_is_a_fraction_of_the_window(
    alice_client: APIClient, project: Project, share: float
) -> None:
    body = {"settings": {"pipeline": {"stage1_payload_percent": share}}}
    response = alice_client.patch(P, body, format="json")
    assert response.status_code == 400
    assert "pipeline.stage1_payload_percent" in response.content.decode()
    body = {"settings": {"pipeline": {"stage1_payload_percent": 1}}}
    assert alice_client.patch(P, body, format="json").status_code == 200
