"""summary_injection_token_limit belongs to recall (the injection reads it), not the pipeline:
move a stored value from settings["pipeline"] to settings["recall"]."""

from typing import Any

from django.db import migrations

KEY = "summary_injection_token_limit"


def forwards(apps: Any, schema_editor: Any) -> None:
    Project = apps.get_model("projects", "Project")
    for project in Project.objects.filter(settings__pipeline__has_key=KEY).iterator():
        value = project.settings["pipeline"].pop(KEY)
        recall = project.settings.get("recall") or {}
        recall.setdefault(KEY, value)
        project.settings["recall"] = recall
        project.save(update_fields=["settings"])


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0002_job_kind_dream"), ("projects", "0001_initial")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
