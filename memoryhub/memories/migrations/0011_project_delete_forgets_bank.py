"""A deleted project's bank bookkeeping (BankVersion, BankChange) goes with it.

Those tables have no foreign key because the memory triggers (0006) write them while a
project's memories are being deleted. A project's row is deleted after everything that refers
to it (by memoryhub.core.deletion, and by Django's collector in the admin), so a trigger on
that row runs last and removes what the cascade just wrote.
A trigger, like the others, so a deletion from any path (the service, the Django admin) counts.
Rows left by projects deleted before this migration are removed here.
"""

from django.db import migrations

FORGET = (
    "DELETE FROM memories_bankchange WHERE project_id = OLD.id;"
    " DELETE FROM memories_bankversion WHERE project_id = OLD.id;"
)


def create_trigger(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE OR REPLACE FUNCTION memoryhub_project_del_fn() RETURNS trigger"
                f" LANGUAGE plpgsql AS $$ BEGIN {FORGET} RETURN NULL; END $$;"
            )
            cursor.execute(
                "CREATE TRIGGER memoryhub_project_del AFTER DELETE ON projects_project"
                " FOR EACH ROW EXECUTE FUNCTION memoryhub_project_del_fn()"
            )
        elif connection.vendor == "sqlite":
            cursor.execute(
                "CREATE TRIGGER memoryhub_project_del AFTER DELETE ON projects_project"
                f" FOR EACH ROW BEGIN {FORGET} END"
            )
        for table in ("memories_bankchange", "memories_bankversion"):
            cursor.execute(
                f"DELETE FROM {table} WHERE project_id NOT IN (SELECT id FROM projects_project)"
            )


def drop_trigger(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("DROP TRIGGER IF EXISTS memoryhub_project_del ON projects_project")
            cursor.execute("DROP FUNCTION IF EXISTS memoryhub_project_del_fn()")
        elif connection.vendor == "sqlite":
            cursor.execute("DROP TRIGGER IF EXISTS memoryhub_project_del")


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0010_postings_without_length"),
        ("projects", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_trigger, drop_trigger)]
