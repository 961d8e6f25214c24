"""Reads' bookkeeping (hit_count, last_accessed_at) no longer runs the bank's change check.

Every search bumps the hit counts of its results. Migration 0006's UPDATE trigger already
ignores that change, but only after joining the statement's old and new rows and comparing
to_jsonb of each: about 1 ms of PostgreSQL per search, a fifth of a search's database time. The
bookkeeping now goes through memoryhub_record_access(), which sets a transaction-local flag
around its one UPDATE; the trigger returns at once while the flag is on. The flag is cleared
again before the function returns, so a real change later in the same transaction is counted.
SQLite's row trigger names its columns (UPDATE OF …) and never fired for these two.
"""

from django.db import migrations

# The UPDATE trigger of migration 0006, written out; `guard` goes before its body.
UPD_FN = """
CREATE OR REPLACE FUNCTION memoryhub_memory_upd_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {guard}
    PERFORM memoryhub_bank_touch(array_agg(p), array_agg(m)) FROM (
        SELECT p, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id,
        LATERAL (VALUES (n.project_id), (o.project_id)) AS t(p)
        WHERE (to_jsonb(n) - 'hit_count' - 'last_accessed_at')
            IS DISTINCT FROM (to_jsonb(o) - 'hit_count' - 'last_accessed_at')
    ) AS t(p, m);
    RETURN NULL;
END $$;
"""

PG_UP = UPD_FN.format(
    guard="IF current_setting('memoryhub.bookkeeping', true) = 'on' THEN RETURN NULL; END IF;"
) + """
CREATE OR REPLACE FUNCTION memoryhub_record_access(ids bigint[], at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('memoryhub.bookkeeping', 'on', true);
    UPDATE memories_memory SET hit_count = hit_count + 1, last_accessed_at = at
        WHERE id = ANY(ids);
    PERFORM set_config('memoryhub.bookkeeping', 'off', true);
END $$;
"""

PG_DOWN = UPD_FN.format(guard="") + """
DROP FUNCTION IF EXISTS memoryhub_record_access(bigint[], timestamptz);
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_UP)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_DOWN)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0007_cheaper_writes"),
    ]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
