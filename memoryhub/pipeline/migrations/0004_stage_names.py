"""One name per concept (issue 9): stage 1 / stage 2 rather than also phase1/phase2, rollout and
consolidate. Renames stored pipeline settings keys, the stage-2 job kind and the LLM call
purposes; pipeline.conf.RENAMED refuses the old keys from now on."""

from typing import Any

from django.db import migrations, models

SETTINGS = {
    "max_rollouts_per_scan": "stage1_max_sessions_per_scan",
    "max_rollout_age_days": "stage1_max_session_age_days",
    "min_rollout_idle_hours": "stage1_min_session_idle_hours",
    "thread_scan_limit": "session_scan_limit",
    "max_raw_memories_for_global": "stage2_max_raw_memories",
    "phase2_lease_seconds": "stage2_lease_seconds",
    "phase2_retry_delay_seconds": "stage2_retry_delay_seconds",
    "phase2_heartbeat_seconds": "stage2_heartbeat_seconds",
    "rollout_payload_percent": "stage1_payload_percent",
    "phase1_input_token_limit": "stage1_input_token_limit",
}
JOB_KINDS = {"consolidate": "stage2"}
PURPOSES = {"extraction": "stage1_memories", "stage1": "stage1_output", "consolidation": "stage2"}


def _rename(
    apps: Any, settings: dict[str, str], kinds: dict[str, str], purposes: dict[str, str]
) -> None:
    Project = apps.get_model("projects", "Project")
    for project in Project.objects.filter(settings__has_key="pipeline").iterator():
        pipeline = project.settings.get("pipeline")
        if not isinstance(pipeline, dict) or not set(pipeline) & set(settings):
            continue
        renamed = {}
        for key, value in pipeline.items():
            if key in settings and settings[key] in pipeline:
                continue  # a value already stored under the new name wins
            renamed[settings.get(key, key)] = value
        project.settings["pipeline"] = renamed
        project.save(update_fields=["settings"])
    Job = apps.get_model("pipeline", "Job")
    for old, new in kinds.items():
        Job.objects.filter(kind=old).update(kind=new)
    LlmCall = apps.get_model("llm", "LlmCall")
    for old, new in purposes.items():
        LlmCall.objects.filter(purpose=old).update(purpose=new)


def forwards(apps: Any, schema_editor: Any) -> None:
    _rename(apps, SETTINGS, JOB_KINDS, PURPOSES)


def backwards(apps: Any, schema_editor: Any) -> None:
    def flip(mapping: dict[str, str]) -> dict[str, str]:
        return {new: old for old, new in mapping.items()}

    _rename(apps, flip(SETTINGS), flip(JOB_KINDS), flip(PURPOSES))


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0003_move_summary_injection_token_limit"),
        ("projects", "0001_initial"),
        ("llm", "0001_initial"),
    ]
    operations = [
        migrations.AlterField(
            model_name="job",
            name="kind",
            field=models.CharField(
                choices=[
                    ("stage1", "Stage1"),
                    ("stage2", "Stage2"),
                    ("rebuild", "Rebuild"),
                    ("dream", "Dream"),
                ],
                max_length=16,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
