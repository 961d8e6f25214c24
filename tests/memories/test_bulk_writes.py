"""The bank's write path below the services: bulk inserts (COPY on PostgreSQL) store what a
single create stores, the postings' integrity is kept by the triggers (no per-row foreign keys),
and every write moves the bank version in its own transaction — or, when it fails, nothing."""

from __future__ import annotations

import os
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from django.db import IntegrityError, connection, transaction

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.memories import services
from memoryhub.memories.models import BankChange, BankVersion, Memory, MemoryEvent, MemoryTerm
from memoryhub.memories.services import MemoryInput
from projects.models import Project
from tests.reliability.servers import gunicorn
from tests.worker import database_url_of_test_db

# Columns a bulk insert and a single create must store alike (not ids, hashes of ids, times).
COMPARED = [
    "scope",
    "owner_id",
    "kind",
    "subcategory",
    "goal",
    "title",
    "content",
    "keywords",
    "importance",
    "status",
    "status_reason",
    "superseded_by_id",
    "metadata",
    "source_session",
    "source_record_start",
    "source_record_end",
    "created_by_user_id",
    "created_by_token_id",
    "created_via",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "hit_count",
    "content_hash",
    "term_count",
]


def _inputs() -> list[MemoryInput]:
    return [
        MemoryInput(
            content="Deploy with `make release`; password: hunter2hunter2 ☃",
            kind="project",
            subcategory="decisions",
            title="Releases",
            keywords=[" release ", "Release", "deploy"],
            importance=3,
            metadata={"src": "D1:3", "nested": {"list": [1, "two", None]}, "token": "s3cr3tvalue"},
            source_session="sess-1",
            source_record_start=2,
            source_record_end=5,
            created_at=datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC),
        ),
        MemoryInput(
            content="I prefer tabs",
            kind="user",
            status=Memory.Status.PROPOSED,
            created_at=datetime(2025, 1, 1, tzinfo=UTC),
            updated_at=datetime(2025, 6, 1, tzinfo=UTC),
        ),
        MemoryInput(
            content="Reach the goal",
            kind="topic",
            goal="ship it",
            created_at=datetime(2025, 1, 2, tzinfo=UTC),
        ),
    ]


def _row(memory: Memory) -> dict[str, Any]:
    return {name: getattr(memory, name) for name in COMPARED}


def _version(project: Project) -> int:
    row = BankVersion.objects.filter(project_id=project.pk).first()
    return row.version if row else 0


def test_a_bulk_insert_stores_what_single_creates_store(project: Project, alice: User) -> None:
    actor = Actor(user=alice)
    bulk = services.memory_bulk_create(project=project, actor=actor, items=_inputs())
    single = [services.memory_create(project=project, actor=actor, data=d) for d in _inputs()]
    for made, one in zip(bulk, single, strict=True):
        stored, alone = Memory.objects.get(pk=made.pk), Memory.objects.get(pk=one.pk)
        assert _row(stored) == _row(alone)
        assert _row(stored) == _row(made)  # the returned objects are what was stored
        assert stored.public_id == made.public_id
        postings = MemoryTerm.objects.filter(memory=stored).values_list("project_id", "term", "tf")
        alone_postings = MemoryTerm.objects.filter(memory=alone).values_list(
            "project_id", "term", "tf"
        )
        assert sorted(postings) == sorted(alone_postings) and postings
        event = MemoryEvent.objects.get(memory=stored)
        alone_event = MemoryEvent.objects.get(memory=alone)
        fields = ("project_id", "verb", "before", "after", "actor_user_id", "actor_label")
        assert [getattr(event, f) for f in fields] == [getattr(alone_event, f) for f in fields]
    first = Memory.objects.get(pk=bulk[0].pk)
    assert first.keywords == ["release", "deploy"]
    assert "hunter2" not in first.content and "s3cr3t" not in str(first.metadata)
    assert first.metadata["nested"] == {"list": [1, "two", None]}
    assert first.created_at == datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    assert Memory.objects.get(pk=bulk[1].pk).owner_id == alice.pk


def test_bulk_ids_ascend_in_input_order(project: Project, alice: User) -> None:
    items = [MemoryInput(content=f"fact number {i}", kind="fact") for i in range(30)]
    made = services.memory_bulk_create(project=project, actor=Actor(user=alice), items=items)
    assert [m.pk for m in made] == sorted(m.pk for m in made)
    stored = dict(Memory.objects.filter(project=project).values_list("pk", "content"))
    assert [stored[m.pk] for m in made] == [f"fact number {i}" for i in range(30)]


def test_a_bulk_insert_moves_the_version_once_for_each_memory(
    project: Project, alice: User
) -> None:
    before = _version(project)
    items = [MemoryInput(content=f"memory {i} about kafka", kind="fact") for i in range(20)]
    made = services.memory_bulk_create(project=project, actor=Actor(user=alice), items=items)
    after = _version(project)
    assert after > before
    changes = dict(
        BankChange.objects.filter(project_id=project.pk).values_list("memory_id", "version")
    )
    assert {m.pk for m in made} <= set(changes)
    assert all(before < changes[m.pk] <= after for m in made)


def _make_later_writes_fail() -> None:
    """A database-side failure at the last statement of a bulk insert (its events), after the
    memories and postings were written."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END $$"
            )
            cursor.execute(
                "CREATE TRIGGER test_refuse BEFORE INSERT ON memories_memoryevent"
                " FOR EACH STATEMENT EXECUTE FUNCTION test_refuse()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER test_refuse BEFORE INSERT ON memories_memoryevent"
                " BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )


def test_a_failed_batch_leaves_no_rows_and_no_version_bump(project: Project, alice: User) -> None:
    actor = Actor(user=alice)
    services.memory_create(project=project, actor=actor, data=MemoryInput(content="x", kind="fact"))
    version = _version(project)
    counts = (Memory.objects.count(), MemoryTerm.objects.count(), BankChange.objects.count())
    _make_later_writes_fail()
    items = [MemoryInput(content=f"doomed {i} kafka", kind="fact") for i in range(50)]
    with pytest.raises(IntegrityError):
        services.memory_bulk_create(project=project, actor=actor, items=items)
    assert _version(project) == version
    assert (Memory.objects.count(), MemoryTerm.objects.count(), BankChange.objects.count()) == (
        counts
    )
    assert not MemoryTerm.objects.filter(term="doom").exists()


def _insert_posting(memory_id: int, project_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memories_memoryterm (memory_id, project_id, term, tf)"
            " VALUES (%s, %s, 'zebra', 1)",
            [memory_id, project_id],
        )


def test_a_posting_must_belong_to_a_memory_of_its_project(
    project: Project, charlies_project: Project, alice: User
) -> None:
    memory = services.memory_create(
        project=project, actor=Actor(user=alice), data=MemoryInput(content="x", kind="fact")
    )
    for memory_id, project_id in (
        (memory.pk + 1000, project.pk),  # no such memory
        (memory.pk, charlies_project.pk),  # a memory of another project
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            _insert_posting(memory_id, project_id)
    _insert_posting(memory.pk, project.pk)  # the memory's own project: accepted
    assert MemoryTerm.objects.filter(memory=memory, term="zebra").count() == 1


def test_raw_sql_writes_move_the_version_and_deletes_take_the_postings(
    project: Project, alice: User
) -> None:
    """Whatever the code path: a memory and its postings written, then deleted, by SQL."""
    with connection.cursor() as cursor:
        version = _version(project)
        cursor.execute(
            "INSERT INTO memories_memory (public_id, project_id, scope, kind, subcategory, goal,"
            " title, content, keywords, importance, status, status_reason, metadata,"
            " source_session, created_via, created_at, updated_at, hit_count, content_hash,"
            " term_count) VALUES (%s, %s, 'project',"
            " 'fact', '', '', '', 'raw zebra', '[]', 1, 'active', '', '{}', '', 'system',"
            " %s, %s, 0, '', 2)",
            [uuid.uuid4().hex, project.pk, datetime.now(UTC), datetime.now(UTC)],
        )
        memory = Memory.objects.get(content="raw zebra")
        assert _version(project) > version
        version = _version(project)
        _insert_posting(memory.pk, project.pk)
        assert _version(project) > version
        assert BankChange.objects.get(memory_id=memory.pk).version == _version(project)
        version = _version(project)
        cursor.execute("DELETE FROM memories_memory WHERE id = %s", [memory.pk])
    assert not MemoryTerm.objects.filter(memory_id=memory.pk).exists()
    assert _version(project) > version
    assert BankChange.objects.get(memory_id=memory.pk).version == _version(project)


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs a database server several processes share; the SQLite test database is in memory",
)
@pytest.mark.django_db(transaction=True)
def test_concurrent_bulk_imports_from_several_processes_are_all_seen(
    alice: User, project: Project
) -> None:
    """Two gunicorn servers (each with its own in-memory copy of the bank) import batches at
    the same time while this process imports too, like a worker: every server then finds
    every memory, and every memory's change is at or below the bank's version."""
    _, raw = token_create(user=alice, name="bulk", actor=Actor.for_system("test"))
    env = os.environ | {"DATABASE_URL": database_url_of_test_db(), "DEBUG": "false"}
    headers = {"Authorization": f"Bearer {raw}"}
    base_path = f"/api/v1/projects/{project.slug}/memories/"

    # One word per batch (searches return at most 100).
    words = ["aardvark", "badger", "caracal", "dingo", "eland", "fennec", "gerbil", "hyrax", "ibex"]

    def found(url: str) -> set[str]:
        ids: set[str] = set()
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            for word in words:
                response = http.get(base_path + "search/", params={"q": word, "k": 100})
                assert response.status_code == 200, response.text
                ids |= {r["id"] for r in response.json()["results"]}
        return ids

    with gunicorn(env) as a, gunicorn(env) as b:
        assert found(a) == found(b) == set()  # each server builds its copy here
        made: list[list[str]] = [[], [], []]

        def import_over_http(i: int) -> None:
            with httpx.Client(base_url=(a, b)[i], headers=headers, timeout=60) as http:
                for n in range(3):
                    items = [
                        {"content": f"item {k} {words[3 * i + n]}", "kind": "fact"}
                        for k in range(40)
                    ]
                    response = http.post(base_path + "bulk/", json={"items": items})
                    assert response.status_code == 201, response.text
                    made[i] += response.json()["ids"]

        def import_here() -> None:
            try:
                for n in range(3):
                    items = [
                        MemoryInput(content=f"item {k} {words[6 + n]}", kind="fact")
                        for k in range(40)
                    ]
                    memories = services.memory_bulk_create(
                        project=project, actor=Actor(user=alice), items=items
                    )
                    made[2] += [str(m.public_id) for m in memories]
            finally:
                connection.close()  # this thread's own; left open, it blocks dropping the test DB

        threads = [threading.Thread(target=import_over_http, args=(i,)) for i in (0, 1)]
        threads.append(threading.Thread(target=import_here))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=180)
        everyone = set(made[0] + made[1] + made[2])
        assert len(everyone) == 360
        assert found(a) == found(b) == everyone
    version = _version(project)
    changes = BankChange.objects.filter(project_id=project.pk)
    assert changes.count() == 360 and all(c.version <= version for c in changes)
