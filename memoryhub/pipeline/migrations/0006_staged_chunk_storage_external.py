"""Staged upload chunks are stored uncompressed (STORAGE EXTERNAL): they are read once and
deleted, and pglz-compressing 256 MiB of transcript on the way in and out costs the database
seconds of CPU for nothing. PostgreSQL only (SQLite has no such setting)."""

from django.db import migrations


def external(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE pipeline_stagedchunk ALTER COLUMN data SET STORAGE EXTERNAL"
        )


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0005_job_kind_import_staged_chunk")]

    operations = [migrations.RunPython(external, migrations.RunPython.noop)]
