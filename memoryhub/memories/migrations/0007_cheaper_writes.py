"""Cheaper writes: postings' foreign keys become per-statement checks in the triggers, and two
redundant indexes go.

A foreign key checks each inserted row on its own (a lookup and a row lock of the memory and of
the project per posting): at ~15 postings per memory that was the largest part of the
database's time in a bulk import (about 240 of 620 ms per 1,000 memories at 30k, measured with
EXPLAIN ANALYZE). The triggers of migration 0006 already see each statement's rows at once, so
they now also check, once per statement, what the foreign keys checked: every posting's memory
exists in the posting's project, and that memory is locked FOR KEY SHARE until commit (as the
foreign key's check locked it) so a concurrent transaction cannot delete it in between. Deleting
memories deletes their postings (ON DELETE CASCADE, by a trigger), whatever the code path.

The check is immediate, not deferred to commit as Django's constraints were: every writer
inserts a memory before its postings (services, restores).

Dropped indexes: memories' project_id (every other index of the table starts with it) and
memory events' memory_id (the (memory, created_at) index serves it).
"""

from importlib import import_module

from django.db import migrations, models

bank_changes = import_module("memoryhub.memories.migrations.0006_bank_changes")

PG_CHECK = """
CREATE OR REPLACE FUNCTION memoryhub_postings_check(memories bigint[], projects bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    wanted int;
    found int;
BEGIN
    -- Distinct (memory, project) pairs first: ~15 postings per memory, one lookup each pair.
    WITH pairs AS (
        SELECT DISTINCT m, p FROM unnest(memories, projects) AS t(m, p)
    ), locked AS (
        SELECT memory.id FROM memories_memory memory JOIN pairs
            ON memory.id = pairs.m AND memory.project_id = pairs.p
        FOR KEY SHARE OF memory
    )
    SELECT (SELECT count(*) FROM pairs), (SELECT count(*) FROM locked) INTO wanted, found;
    IF found < wanted THEN
        RAISE EXCEPTION 'memories_memoryterm: a posting refers to a memory that is not in its project'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
END $$;
"""

# Postings come ~15 per memory: the pairs are made distinct once, for the check and the touch.
PG_TERM_INS = """
CREATE OR REPLACE FUNCTION memoryhub_term_ins_fn() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    memories bigint[];
    projects bigint[];
BEGIN
    SELECT array_agg(m), array_agg(p) INTO memories, projects
        FROM (SELECT DISTINCT memory_id, project_id FROM new_rows) AS t(m, p);
    PERFORM memoryhub_postings_check(memories, projects);
    PERFORM memoryhub_bank_touch(projects, memories);
    RETURN NULL;
END $$;
"""

PG_TERM_UPD = """
CREATE OR REPLACE FUNCTION memoryhub_term_upd_fn() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    memories bigint[];
    projects bigint[];
BEGIN
    SELECT array_agg(m), array_agg(p) INTO memories, projects
        FROM (SELECT DISTINCT memory_id, project_id FROM new_rows) AS t(m, p);
    PERFORM memoryhub_postings_check(memories, projects);
    PERFORM memoryhub_bank_touch(array_agg(p), array_agg(m)) FROM (
        SELECT project_id, memory_id FROM new_rows UNION SELECT project_id, memory_id FROM old_rows
    ) AS t(p, m);
    RETURN NULL;
END $$;
"""

PG_MEMORY_DEL = """
CREATE OR REPLACE FUNCTION memoryhub_memory_del_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memories_memoryterm t USING old_rows o WHERE t.memory_id = o.id;
    PERFORM memoryhub_bank_touch(array_agg(p), array_agg(m))
        FROM (SELECT project_id, id FROM old_rows) AS t(p, m);
    RETURN NULL;
END $$;
"""

# SQLite (the embedded default): row triggers, as in 0006.
SQLITE_TRIGGERS = {
    "memoryhub_term_check_ins": (
        "BEFORE INSERT ON memories_memoryterm FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM"
        " memories_memory WHERE id = NEW.memory_id AND project_id = NEW.project_id)"
        " BEGIN SELECT RAISE(ABORT, 'memories_memoryterm: a posting refers to a memory that is"
        " not in its project'); END"
    ),
    "memoryhub_term_check_upd": (
        "BEFORE UPDATE ON memories_memoryterm FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM"
        " memories_memory WHERE id = NEW.memory_id AND project_id = NEW.project_id)"
        " BEGIN SELECT RAISE(ABORT, 'memories_memoryterm: a posting refers to a memory that is"
        " not in its project'); END"
    ),
    "memoryhub_memory_del_postings": (
        "AFTER DELETE ON memories_memory FOR EACH ROW"
        " BEGIN DELETE FROM memories_memoryterm WHERE memory_id = OLD.id; END"
    ),
}


def _pg_function_0006(name: str, pairs: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql"
        f" AS $$ BEGIN PERFORM memoryhub_bank_touch(array_agg(p), array_agg(m))"
        f" FROM ({pairs}) AS t(p, m); RETURN NULL; END $$;"
    )


def forward(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for sql in (PG_CHECK, PG_TERM_INS, PG_TERM_UPD, PG_MEMORY_DEL):
                cursor.execute(sql)
        elif connection.vendor == "sqlite":
            # SQLite altered the postings' columns by copying the table, which dropped 0006's
            # triggers on it: create them again (CREATE … IF NOT EXISTS keeps the others).
            for name, event, pairs in bank_changes.SQLITE_TRIGGERS:
                body = "".join(
                    bank_changes.SQLITE_TOUCH.format(p=p, m=m, now=bank_changes.SQLITE_NOW_US)
                    for p, m in pairs
                )
                cursor.execute(
                    f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} FOR EACH ROW"
                    f" BEGIN {body} END"
                )
            for name, body in SQLITE_TRIGGERS.items():
                cursor.execute(f"CREATE TRIGGER {name} {body}")


def backward(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for name, _, _, _, pairs in bank_changes.PG_TRIGGERS:
                cursor.execute(_pg_function_0006(f"{name}_fn", pairs))
            cursor.execute("DROP FUNCTION IF EXISTS memoryhub_postings_check(bigint[], bigint[])")
        elif connection.vendor == "sqlite":
            for name in SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0006_bank_changes"),
        ("projects", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="memory",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="memories",
                to="projects.project",
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="memory",
            field=models.ForeignKey(
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="events",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="memoryterm",
            name="memory",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="+",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="memoryterm",
            name="project",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="+",
                to="projects.project",
            ),
        ),
        migrations.RunPython(forward, backward),
    ]
