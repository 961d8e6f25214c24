"""The bank's change counter: BankVersion / BankChange, written by triggers.

Triggers, not service code, so that every statement that changes a memory or its postings
counts — the services, cascaded deletes, backups restores, a reindex — in the same transaction
as the change. PostgreSQL: statement-level triggers with transition tables (one bump per
statement, not per row: a bulk import of 1,000 memories and 15,000 postings costs a few
statements). An UPDATE counts only when something besides the read bookkeeping (hit_count,
last_accessed_at) changed, so searching does not invalidate the in-memory indexes. SQLite (the
embedded default): row-level triggers.
"""

from django.db import migrations, models

PG_TOUCH = """
CREATE OR REPLACE FUNCTION memoryhub_bank_touch(projects bigint[], memories bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    now_us bigint := (extract(epoch FROM clock_timestamp()) * 1e6)::bigint;
BEGIN
    IF coalesce(cardinality(memories), 0) = 0 THEN
        RETURN;
    END IF;
    -- The version row's lock, held to commit, orders the writers of one bank: versions become
    -- visible in increasing order, so a reader at version v never misses an older change.
    -- Versions are clock microseconds (at least +1): a version a rolled-back transaction used
    -- is never handed out again for different content.
    WITH changed AS (
        SELECT DISTINCT p AS project_id, m AS memory_id FROM unnest(projects, memories) AS t(p, m)
    ), bumped AS (
        INSERT INTO memories_bankversion AS v (project_id, version)
        SELECT DISTINCT project_id, now_us FROM changed ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE SET version = greatest(v.version + 1, EXCLUDED.version)
        RETURNING v.project_id, v.version
    )
    INSERT INTO memories_bankchange AS c (project_id, memory_id, version)
    SELECT changed.project_id, changed.memory_id, bumped.version
    FROM changed JOIN bumped USING (project_id)
    ON CONFLICT (project_id, memory_id) DO UPDATE SET version = EXCLUDED.version;
END $$;
"""

# (trigger name, table, event, transition tables, the (project, memory) pairs it touches)
PG_TRIGGERS = [
    (
        "memoryhub_memory_ins",
        "memories_memory",
        "INSERT",
        "NEW TABLE AS new_rows",
        "SELECT project_id, id FROM new_rows",
    ),
    (
        "memoryhub_memory_del",
        "memories_memory",
        "DELETE",
        "OLD TABLE AS old_rows",
        "SELECT project_id, id FROM old_rows",
    ),
    (
        "memoryhub_memory_upd",
        "memories_memory",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "SELECT p, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id,"
        " LATERAL (VALUES (n.project_id), (o.project_id)) AS t(p)"
        " WHERE (to_jsonb(n) - 'hit_count' - 'last_accessed_at')"
        " IS DISTINCT FROM (to_jsonb(o) - 'hit_count' - 'last_accessed_at')",
    ),
    (
        "memoryhub_term_ins",
        "memories_memoryterm",
        "INSERT",
        "NEW TABLE AS new_rows",
        "SELECT project_id, memory_id FROM new_rows",
    ),
    (
        "memoryhub_term_del",
        "memories_memoryterm",
        "DELETE",
        "OLD TABLE AS old_rows",
        "SELECT project_id, memory_id FROM old_rows",
    ),
    (
        "memoryhub_term_upd",
        "memories_memoryterm",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "SELECT project_id, memory_id FROM new_rows"
        " UNION SELECT project_id, memory_id FROM old_rows",
    ),
]

# Every column that can change a ranking (not hit_count / last_accessed_at).
SQLITE_MEMORY_COLUMNS = (
    "project_id, scope, owner_id, kind, subcategory, goal, title, content, keywords, importance,"
    " status, status_reason, superseded_by_id, metadata, source_session, source_record_start,"
    " source_record_end, created_at, updated_at, content_hash, term_count"
)

SQLITE_NOW_US = "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"
SQLITE_TOUCH = """
    INSERT INTO memories_bankversion (project_id, version) VALUES ({p}, {now})
        ON CONFLICT (project_id) DO UPDATE SET version = max(version + 1, excluded.version);
    INSERT INTO memories_bankchange (project_id, memory_id, version)
        VALUES ({p}, {m}, (SELECT version FROM memories_bankversion WHERE project_id = {p}))
        ON CONFLICT (project_id, memory_id) DO UPDATE SET version = excluded.version;
"""

SQLITE_TRIGGERS = [
    ("memoryhub_memory_ins", "INSERT ON memories_memory", [("NEW.project_id", "NEW.id")]),
    ("memoryhub_memory_del", "DELETE ON memories_memory", [("OLD.project_id", "OLD.id")]),
    (
        "memoryhub_memory_upd",
        f"UPDATE OF {SQLITE_MEMORY_COLUMNS} ON memories_memory",
        [("OLD.project_id", "OLD.id"), ("NEW.project_id", "NEW.id")],
    ),
    (
        "memoryhub_term_ins",
        "INSERT ON memories_memoryterm",
        [("NEW.project_id", "NEW.memory_id")],
    ),
    (
        "memoryhub_term_del",
        "DELETE ON memories_memoryterm",
        [("OLD.project_id", "OLD.memory_id")],
    ),
    (
        "memoryhub_term_upd",
        "UPDATE ON memories_memoryterm",
        [("OLD.project_id", "OLD.memory_id"), ("NEW.project_id", "NEW.memory_id")],
    ),
]


def create_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(PG_TOUCH)
            for name, table, event, transition, pairs in PG_TRIGGERS:
                function = f"{name}_fn"
                cursor.execute(
                    f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql"
                    f" AS $$ BEGIN PERFORM memoryhub_bank_touch(array_agg(p), array_agg(m))"
                    f" FROM ({pairs}) AS t(p, m); RETURN NULL; END $$;"
                )
                cursor.execute(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {transition}"
                    f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
                )
        elif connection.vendor == "sqlite":
            for name, event, pairs in SQLITE_TRIGGERS:
                body = "".join(SQLITE_TOUCH.format(p=p, m=m, now=SQLITE_NOW_US) for p, m in pairs)
                cursor.execute(f"CREATE TRIGGER {name} AFTER {event} FOR EACH ROW BEGIN {body} END")


def drop_triggers(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for name, table, *_ in PG_TRIGGERS:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                cursor.execute(f"DROP FUNCTION IF EXISTS {name}_fn()")
            elif connection.vendor == "sqlite":
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        if connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS memoryhub_bank_touch(bigint[], bigint[])")


def seed_versions(apps, schema_editor):
    """Banks that exist already start at version 1 with every memory in it."""
    Memory = apps.get_model("memories", "Memory")
    BankVersion = apps.get_model("memories", "BankVersion")
    BankChange = apps.get_model("memories", "BankChange")
    projects = set(Memory.objects.values_list("project_id", flat=True).distinct())
    BankVersion.objects.bulk_create([BankVersion(project_id=p, version=1) for p in projects])
    rows = Memory.objects.values_list("project_id", "pk").iterator(chunk_size=5000)
    batch = []
    for project_id, memory_id in rows:
        batch.append(BankChange(project_id=project_id, memory_id=memory_id, version=1))
        if len(batch) == 5000:
            BankChange.objects.bulk_create(batch)
            batch = []
    BankChange.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0005_postings_length"),
    ]

    operations = [
        migrations.CreateModel(
            name="BankVersion",
            fields=[
                ("project_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("version", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="BankChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("project_id", models.BigIntegerField()),
                ("memory_id", models.BigIntegerField()),
                ("version", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(fields=["project_id", "version"], name="bank_change_since")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project_id", "memory_id"), name="bank_change_memory"
                    )
                ],
            },
        ),
        migrations.RunPython(seed_versions, migrations.RunPython.noop),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
