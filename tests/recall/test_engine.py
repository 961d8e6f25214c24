"""The search engine's in-memory bank copy (memoryhub.recall.engine): exact against a reference
BM25 computed from the database, kept current by the triggers' change counter (deltas, not
rebuilds), correct across processes, and blind to other people's private memories."""

from __future__ import annotations

import math
import os
import random
import re
import threading
from collections import Counter
from typing import Any

import httpx
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from accounts.services import token_create
from memoryhub.memories import services as memory_services
from memoryhub.memories.models import BankChange, BankVersion, Memory, MemoryTerm
from memoryhub.memories.services import MemoryInput
from memoryhub.recall import engine, scoring
from memoryhub.recall.search import SearchQuery, memory_search
from projects.models import Project
from projects.selectors import project_access
from tests.recall.memories import add_memory
from tests.reliability.servers import gunicorn
from tests.worker import database_url_of_test_db

SEARCH = "/api/v1/projects/alpha/memories/search/"
WORDS = re.findall(
    r"\w+",
    "deploy docker kafka redis postgres migrate lint format review merge branch release rollback"
    " cache queue worker schema index vacuum backup restore token secret rotate alert page trace",
)


def _search(client: APIClient, q: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(SEARCH, {"q": q, **params})
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def _reference(project: Project, user: User | None, query: str, k: int) -> list[int]:
    """The exact ranking recomputed from the database rows, in plain Python: BM25 (k1 0.3,
    b 0, the defaults), idf over what `user` may see, no decay at strength 0."""
    visible = Memory.objects.filter(project=project).filter(
        pk__in=[
            m.pk
            for m in Memory.objects.filter(project=project)
            if m.scope == "project" or (user is not None and m.owner_id == user.pk)
        ]
    )
    ids = set(visible.values_list("pk", flat=True))
    postings: dict[str, dict[int, int]] = {}
    for memory_id, term, tf in MemoryTerm.objects.filter(project=project).values_list(
        "memory_id", "term", "tf"
    ):
        if memory_id in ids:
            postings.setdefault(term, {})[memory_id] = tf
    qtf = Counter(engine_tokenize(query))
    scores: dict[int, float] = {}
    for term, count in qtf.items():
        docs = postings.get(term, {})
        if not docs:
            continue
        weight = scoring.idf(len(ids), len(docs)) * count
        for memory_id, tf in docs.items():
            scores[memory_id] = scores.get(memory_id, 0.0) + weight * tf * 1.3 / (tf + 0.3)
    active = set(visible.filter(status="active").values_list("pk", flat=True))
    created = dict(visible.values_list("pk", "created_at"))
    ranked = sorted(
        (i for i in scores if i in active), key=lambda i: (-round(scores[i], 9), created[i], i)
    )
    return ranked[:k]


def engine_tokenize(text: str) -> list[str]:
    from memoryhub.memories.text import tokenize

    return tokenize(text)


def _bank_of(project: Project, alice: User, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)  # noqa: S311 — test data
    items = [
        MemoryInput(
            kind="fact",
            content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))),
            importance=rng.choice((1, 2)),
        )
        for _ in range(n)
    ]
    memory_services.memory_bulk_create(project=project, actor=Actor(user=alice), items=items)


def test_the_ranking_is_the_exact_bm25_over_the_whole_bank(alice: User, project: Project) -> None:
    project.settings = {"recall": {"search_decay": 0.0}}
    project.save()
    _bank_of(project, alice, 400)
    access = project_access(slug=project.slug, actor=Actor(user=alice))
    rng = random.Random(11)  # noqa: S311
    for _ in range(25):
        q = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
        hits = memory_search(access=access, query=SearchQuery(text=q, k=20, record=False))
        assert [h.memory.pk for h in hits] == _reference(project, alice, q, 20), q


def test_writes_reach_the_copy_as_deltas_not_rebuilds(alice: User, project: Project) -> None:
    _bank_of(project, alice, 50)
    access = project_access(slug=project.slug, actor=Actor(user=alice))
    actor = Actor(user=alice)

    def found(q: str) -> list[int]:
        hits = memory_search(access=access, query=SearchQuery(text=q, k=5, record=False))
        return [h.memory.pk for h in hits]

    assert found("zeppelin") == []
    builds = engine.registry.builds
    version = BankVersion.objects.get(project_id=project.pk).version
    memory = memory_services.memory_create(
        project=project,
        actor=actor,
        data=MemoryInput(kind="fact", content="The zeppelin hangar is in Friedrichshafen"),
    )
    assert BankVersion.objects.get(project_id=project.pk).version > version
    assert BankChange.objects.get(project_id=project.pk, memory_id=memory.pk).version > version
    deltas = engine.registry.deltas
    assert found("zeppelin") == [memory.pk]
    assert engine.registry.deltas > deltas
    memory_services.memory_update(
        memory=memory, actor=actor, changes={"content": "The airship hangar moved"}
    )
    assert found("zeppelin") == []
    assert found("airship") == [memory.pk]
    memory_services.memory_set_status(
        memory=memory, actor=actor, status=Memory.Status.ARCHIVED, reason="gone"
    )
    assert found("airship") == []
    assert engine.registry.builds == builds  # every change above was a delta

    # Bookkeeping of reads (hit counts) is not a change of the bank.
    version = BankVersion.objects.get(project_id=project.pk).version
    hits = memory_search(access=access, query=SearchQuery(text="docker", k=5))
    assert BankVersion.objects.get(project_id=project.pk).version == version
    counted = Memory.objects.get(pk=hits[0].memory.pk)
    assert counted.hit_count == 1
    assert counted.last_accessed_at is not None
    # The test runs in one transaction: the flag that spares the bank's trigger during the
    # bookkeeping must be off again, so the next real change in it is still a change (a
    # status change: it rewrites no postings, whose own triggers would count it anyway).
    memory_services.memory_set_status(
        memory=counted, actor=actor, status=Memory.Status.STALE, reason="docker moved"
    )
    assert BankVersion.objects.get(project_id=project.pk).version > version
    assert BankChange.objects.get(project_id=project.pk, memory_id=counted.pk).version > version


def test_a_teammates_scores_do_not_depend_on_anothers_private_memories(
    alice: User, bob: User, project: Project, make_client: Any
) -> None:
    alice_client = make_client(alice)
    bob_client = make_client(bob)
    for content in ("deploy with docker", "docker compose for tests", "kafka topics"):
        add_memory(alice_client, content)
    before = _search(alice_client, "docker kafka")
    # Bob's own preferences hold the same words, many times over.
    for i in range(6):
        add_memory(bob_client, f"docker kafka note {i}", kind="user", scope="user")
    after = _search(alice_client, "docker kafka")
    assert [(r["id"], r["score"]) for r in after] == [(r["id"], r["score"]) for r in before]
    # Bob sees his own memories, with statistics that count them.
    bobs = _search(bob_client, "docker kafka")
    assert len(bobs) == 9


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs a database server several processes share; the SQLite test database is in memory",
)
@pytest.mark.django_db(transaction=True)
def test_writes_through_one_process_are_read_through_another(alice: User, project: Project) -> None:
    """Two gunicorn servers (separate processes, each with its own copy of the bank) and this
    process writing like a Celery worker: each reads what the others wrote, also while they
    write at the same time."""
    _, raw = token_create(user=alice, name="engine", actor=Actor.for_system("test"))
    env = os.environ | {"DATABASE_URL": database_url_of_test_db(), "DEBUG": "false"}
    headers = {"Authorization": f"Bearer {raw}"}
    base_path = f"/api/v1/projects/{project.slug}/memories/"

    with gunicorn(env) as a, gunicorn(env) as b:
        clients = [httpx.Client(base_url=u, headers=headers, timeout=60) for u in (a, b)]
        writer, reader = clients

        def ids(client: httpx.Client, q: str) -> list[str]:
            response = client.get(base_path + "search/", params={"q": q, "k": 50})
            assert response.status_code == 200, response.text
            return [r["id"] for r in response.json()["results"]]

        def create(client: httpx.Client, content: str) -> str:
            response = client.post(base_path, json={"content": content, "kind": "fact"})
            assert response.status_code == 201, response.text
            return str(response.json()["id"])

        first = create(writer, "the walrus operator needs python 3.8")
        assert ids(reader, "walrus") == [first]  # the reader builds its copy here
        assert ids(writer, "walrus") == [first]
        patched = writer.patch(f"{base_path}{first}/", json={"content": "pattern matching"})
        assert patched.status_code == 200, patched.text
        assert ids(reader, "walrus") == []
        assert ids(reader, "pattern") == [first]

        # A write from a third process (the pipeline's Celery worker writes like this).
        memory = memory_services.memory_create(
            project=project,
            actor=Actor(user=alice),
            data=MemoryInput(kind="fact", content="narwhal tusks are teeth"),
        )
        assert ids(reader, "narwhal") == [str(memory.public_id)]
        assert ids(writer, "narwhal") == [str(memory.public_id)]

        # Both servers write at the same time, each reads the other's writes.
        made: list[list[str]] = [[], []]

        def burst(i: int) -> None:
            with httpx.Client(base_url=(a, b)[i], headers=headers, timeout=60) as http:
                made[i] = [create(http, f"burst{i} item{n} quokka") for n in range(15)]

        threads = [threading.Thread(target=burst, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        everyone = sorted(made[0] + made[1])
        assert len(everyone) == 30
        for client in clients:
            assert sorted(ids(client, "quokka")) == everyone

        deleted = writer.post(f"{base_path}{first}/delete/", json={"confirm": first[:8]})
        assert deleted.status_code == 204, deleted.text
        assert ids(reader, "pattern") == []
        for client in clients:
            client.close()


def test_idf_uses_the_callers_visible_document_count(alice: User, project: Project) -> None:
    """N in idf is the number of memories the caller may see (every status)."""
    actor = Actor(user=alice)
    for content in ("alpha beta", "alpha gamma", "delta"):
        memory_services.memory_create(
            project=project, actor=actor, data=MemoryInput(kind="fact", content=content)
        )
    access = project_access(slug=project.slug, actor=actor)
    hits = memory_search(access=access, query=SearchQuery(text="beta", k=5, record=False))
    assert len(hits) == 1
    assert hits[0].raw == pytest.approx(math.log(1 + (3 - 1 + 0.5) / 1.5) * 1.3 / 1.3)


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="PostgreSQL's page layout; CI runs it",
)
def test_hit_counts_are_bumped_in_place_without_index_writes(project: Project) -> None:
    from django.db import connection

    actor = Actor.for_system("test")
    memory_services.memory_bulk_create(
        project=project,
        actor=actor,
        items=[
            MemoryInput(kind="fact", content=f"Note {i}: " + "the release train leaves " * 12)
            for i in range(120)
        ],
    )
    with connection.cursor() as cursor:
        # One memory per filled page (every page but the last), as a search's scattered winners.
        cursor.execute(
            "SELECT DISTINCT ON ((ctid::text::point)[0]) id FROM memories_memory"
            " WHERE project_id = %s AND (ctid::text::point)[0] <"
            " (SELECT max((ctid::text::point)[0]) FROM memories_memory)"
            " ORDER BY (ctid::text::point)[0], id",
            [project.pk],
        )
        ids = [row[0] for row in cursor.fetchall()]
        assert len(ids) >= 3
        hot_before = _xact_hot_updates(cursor)
        memory_services.memory_record_access(memory_ids=ids, at=timezone.now())
        # Each bump stayed on its page (a HOT update): no index entries were written.
        assert _xact_hot_updates(cursor) - hot_before == len(ids)
    assert set(Memory.objects.filter(pk__in=ids).values_list("hit_count", flat=True)) == {1}


def _xact_hot_updates(cursor: Any) -> int:
    cursor.execute("SELECT pg_stat_get_xact_tuples_hot_updated('memories_memory'::regclass)")
    return int(cursor.fetchone()[0])
