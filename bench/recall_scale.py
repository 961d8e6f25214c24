"""Recall at scale: search, recall and injection latency and server memory at 1k, 10k
and 100k memories in one project, on PostgreSQL, through real HTTP.

    bench/pg.sh                                       # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/recall_scale.py [--sizes 1000,10000,100000]
        [--endpoints search,recall,injection,hindsight,write] [--queries 1986] [--budget-s 90]
        [--baseline DIR] [--exact-n 400] [--exact-budget-s 150] [--explain] [--json FILE]

One fresh database (dropped at the end), gunicorn with 2 workers as `make run` and the Docker
image start it (`--server asgi`, the default: uvicorn workers serving memoryhub.asgi, the client
keeping its connection alive; `--server wsgi`: sync workers serving memoryhub.wsgi), one
project grown 0 → 1k → 10k → 100k by the bulk API in 1,000-item batches (ingest throughput is
reported per step). The text is realistic, as in benchmarks.md §7: LoCoMo turns copied with
the speakers' names swapped (in the prefix and in the text) and their sentences shuffled,
created_at spread over a year, importance 1–2, kind fact.

At each size: ANALYZE (what autovacuum does within a minute of a bulk load; without it the
first minute measures the planner's guesses), fresh gunicorn workers (SIGHUP: empty
in-process caches), a concurrent warm-up that reaches both workers, VmHWM of the workers reset
(/proc/<pid>/clear_refs), then the LoCoMo questions (all 1,986, shuffled with a fixed seed)
one at a time until --queries or --budget-s is reached, per endpoint:
- search:    GET  …/memories/search/?q=<question>&k=20
- recall:    POST …/recall/ {"query": <question>, "session_id": <a bench session>}
- injection: GET  …/injection/?profile=default&session_id=<a bench session>
- write:     POST …/memories/ (one memory; at most 200 per size, so the bank grows a little)
An endpoint that answers 404 "No API endpoint" is skipped with a note (not built yet).

--baseline DIR: a second database and gunicorn serving DIR's code (e.g. `git worktree add
/tmp/base <commit>`), fed the same batches and asked the same questions, each phase right
after the other: "today" and "new" side by side from one run, under the same machine load.
Exactness (--exact-n questions at the largest size right after its ingest, each side, at most
--exact-budget-s seconds each; logged as soon as it is known): the server's top 20 over HTTP
against the ranking recomputed in the bench from the database rows (every term, every memory):
BM25 × decay, then the context signals with their defaults when the server's code has them.

Latency is the client's wall time per request (with `--server wsgi` it includes a TCP
connect: sync workers close the connection after each response). Peak RSS is the max VmHWM over the
workers during the endpoint's phase. Machine load is reported because this machine is shared.

--explain: after the largest size, times memory_search in-process (Django on the bench
database, the server's code snapshot) stage by stage over --profile-n questions, then re-runs
the slowest HTTP question with its SQL captured and prints EXPLAIN (ANALYZE, BUFFERS) of each
SELECT it issued.

"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import _harness as h
import _locomo as L
import psycopg

PROJECT = "scale"
BATCH = 1000
SEED = 20260301
# Issue 15's targets at 100k (the write: one memory through POST …/memories/).
TARGET_P95_MS = {
    "search": 20.0,
    "recall": 20.0,
    "injection": 10.0,
    "hindsight": 50.0,
    "write": 20.0,
}
ENDPOINTS = ("search", "recall", "injection", "hindsight", "write")
WRITES_PER_SIZE = 200  # single writes grow the bank: a bounded number per size
EXACT_AS_OF = "2026-03-01T00:00:00+00:00"  # "now" of the exactness check (both sides)
# Extra first names for the swap (LoCoMo's own 20 speakers are added to these).
NAMES = """
    Aisha Bruno Chen Dara Elif Farah Gus Hana Ivan Jonas Kemal Lena Mateo Nadia Omar Priya Quinn
    Rafael Sana Tomas Uma Viktor Wen Ximena Yusuf Zoe Amir Beatriz Carlos Dmitri Esther Felix
    Greta Hugo Ines Jamal Keiko Luca Mira Nikolai
""".split()  # noqa: SIM905 - a word list reads better as text


# --- Synthetic bank ----------------------------------------------------------------------------


class Bank:
    """Memories made from LoCoMo turns: names swapped, sentences shuffled (§7)."""

    _SENTENCE = re.compile(r"(?<=[.!?])\s+")

    def __init__(self, convs: Sequence[L.Conversation], seed: int = SEED) -> None:
        self.rng = random.Random(seed)  # noqa: S311 — synthetic data, not security
        self.turns = [t for c in convs for t in c.turns]
        speakers = sorted({s for c in convs for s in c.speakers})
        self.speakers = speakers
        self.names = sorted(set(NAMES) | set(speakers))
        self.pattern = re.compile(r"\b(" + "|".join(map(re.escape, speakers)) + r")\b")
        self.start = datetime(2025, 3, 1, tzinfo=UTC)
        self.made = 0

    def item(self) -> dict[str, Any]:
        rng = self.rng
        turn = self.turns[rng.randrange(len(self.turns))]
        swap = {s: rng.choice(self.names) for s in self.speakers}
        sentences = self._SENTENCE.split(turn.text)
        rng.shuffle(sentences)
        text = self.pattern.sub(lambda m: swap[m.group(1)], " ".join(sentences))
        created = self.start + timedelta(seconds=rng.randrange(365 * 86_400))
        self.made += 1
        return {
            "content": f"{swap.get(turn.speaker, turn.speaker)}: {text}",
            "kind": "fact",
            "importance": rng.choice((1, 1, 1, 2)),
            "created_at": created.isoformat(),
            "metadata": {"src": turn.dia_id, "n": self.made},
        }

    def batches(self, count: int) -> list[bytes]:
        """Pre-encoded bulk bodies for `count` more memories."""
        out = []
        while count > 0:
            size = min(BATCH, count)
            out.append(json.dumps({"items": [self.item() for _ in range(size)]}).encode())
            count -= size
        return out


# --- Measuring ---------------------------------------------------------------------------------


def machine_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


@dataclass
class Phase:
    endpoint: str
    size: int
    code: str = "new"  # "today" (--baseline) or "new"
    latencies_ms: list[float] = field(default_factory=list)
    peak_rss_mib: float | None = None
    rss_before_mib: float | None = None
    server_cpu_s: float | None = None  # gunicorn workers
    db_cpu_s: float | None = None  # the bench database's PostgreSQL backends
    machine_busy_pct: float | None = None
    own_cpu_pct: float | None = None  # workers + PostgreSQL backends + this client
    wall_s: float = 0.0
    results_per_query: float = 0.0
    note: str = ""

    def p(self, q: float) -> float | None:
        return h.percentile(self.latencies_ms, q)


@dataclass
class Ingest:
    size: int
    code: str
    added: int
    seconds: float
    batch_ms: list[float]
    server_cpu_s: float | None = None  # gunicorn workers
    db_cpu_s: float | None = None  # the bench database's PostgreSQL backends

    def cpu_ms_per_memory(self) -> str:
        if self.server_cpu_s is None or self.db_cpu_s is None or not self.added:
            return "–"
        server, db = 1000 * self.server_cpu_s / self.added, 1000 * self.db_cpu_s / self.added
        return f"{server:.2f} + {db:.2f}"

    @property
    def per_s(self) -> float:
        return self.added / self.seconds if self.seconds else 0.0


class Endpoint:
    """How to ask one endpoint a question; `probe` says whether it exists."""

    def __init__(self, name: str, api: h.Api, session: str | None) -> None:
        self.name = name
        self.api = api
        self.session = session

    def request(self, question: str) -> tuple[Any, float]:
        api, base = self.api, f"projects/{PROJECT}/"
        if self.name == "write":
            body = json.dumps({"content": f"Note: {question}", "kind": "fact"}).encode()
            response, s = api.post_json(base + "memories/", body, 201)
            return [response.json().get("id")], s
        if self.name == "search":
            response, s = api.call(
                "GET", base + "memories/search/", 200, params={"q": question, "k": "20"}
            )
            return response.json().get("results", []), s
        if self.name == "recall":
            body = json.dumps({"query": question, "session_id": self.session}).encode()
            response, s = api.post_json(base + "recall/", body, 200)
            return response.json().get("results", []), s
        if self.name == "hindsight":  # oh-my-pi's first-turn recall, through the Hindsight API
            body = json.dumps(
                {
                    "query": question,
                    "types": ["world", "experience"],
                    "max_tokens": 1024,
                    "budget": "mid",
                    "tags": [f"project:{PROJECT}"],
                    "tags_match": "any",
                }
            ).encode()
            path = f"/v1/default/banks/{PROJECT}/memories/recall".encode()
            url = str(api.client.base_url.copy_with(raw_path=path))
            response, s = api.post_json(url, body, 200)
            return response.json().get("results", []), s
        params = {"profile": "default"}
        if self.session:
            params["session_id"] = self.session
        response, s = api.call("GET", base + "injection/", 200, params=params)
        return response.json().get("memory_ids", []), s

    def probe(self) -> str | None:
        """None when the endpoint answers; else why it is skipped."""
        if self.name == "write":
            return None  # the probe would write
        try:
            self.request("warm-up probe")
        except h.BenchError as exc:
            text = str(exc)
            if "HTTP 404" in text and "No API endpoint" in text:
                return f"{self.name}: no such endpoint yet (404), skipped"
            return f"{self.name}: skipped, probe failed: {text[:300]}"
        return None


def warm_up(server: h.Server, endpoint: Endpoint, questions: Sequence[str]) -> None:
    """Concurrent requests, so both sync workers load the app and open their connection (and
    build what they keep in memory). Writes warm up through searches."""
    if endpoint.name == "write":
        endpoint = Endpoint("search", endpoint.api, endpoint.session)
    with ThreadPoolExecutor(2 * server.workers) as pool:
        list(pool.map(endpoint.request, questions))


def measure(
    stack: h.Stack,
    endpoint: Endpoint,
    size: int,
    questions: Sequence[str],
    limit: int,
    budget_s: float,
    code: str = "new",
) -> Phase:
    server = stack.server
    phase = Phase(endpoint.name, size, code)
    if endpoint.name == "write":
        limit = min(limit, WRITES_PER_SIZE)
    server.recycle_workers()
    warm_up(server, endpoint, questions[-40:])
    workers = server.worker_pids()
    rss = {pid: h.status_kib(pid, "VmRSS") or 0 for pid in workers}
    phase.rss_before_mib = max(rss.values()) / 1024 if rss else None
    for pid in workers:
        h.reset_peak_rss(pid)
    cpu0 = h.cpu_seconds(workers)
    backends = BackendCpu(stack.db)
    own0 = time.process_time()
    busy0, total0 = machine_busy()
    started = time.perf_counter()
    results = 0
    try:
        for n, question in enumerate(questions[:limit], 1):
            got, seconds = endpoint.request(question)
            phase.latencies_ms.append(seconds * 1000)
            results += len(got)
            if n % 20 == 0:
                backends.sample()  # Django reconnects every 60 s: catch backends before exit
            if time.perf_counter() - started > budget_s:
                break
        phase.wall_s = time.perf_counter() - started
        backends.sample()
    finally:
        backends.close()
    busy1, total1 = machine_busy()
    after = server.worker_pids()
    peaks = [h.status_kib(pid, "VmHWM") or 0 for pid in after]
    phase.peak_rss_mib = max(peaks) / 1024 if peaks else None
    cpu1 = h.cpu_seconds(after)
    phase.server_cpu_s = sum(cpu1.get(p, 0.0) - cpu0.get(p, 0.0) for p in after)
    phase.db_cpu_s = backends.used()
    if total1 > total0:
        phase.machine_busy_pct = 100 * (busy1 - busy0) / (total1 - total0)
        ticks = os.sysconf("SC_CLK_TCK")
        own = phase.server_cpu_s + phase.db_cpu_s + time.process_time() - own0
        phase.own_cpu_pct = 100 * own * ticks / (total1 - total0)
    phase.results_per_query = results / max(1, len(phase.latencies_ms))
    if after != workers:
        phase.note = "a worker was replaced during the phase"
    return phase


class BackendCpu:
    """CPU time of the PostgreSQL backends serving the bench database, sampled: Django closes
    a connection older than DATABASE_CONN_MAX_AGE (60 s) and opens a new one, and a backend
    that exits takes its CPU time with it. Local servers only (else 0)."""

    def __init__(self, db: h.Database) -> None:
        self.local = urlsplit(db.url).hostname in ("127.0.0.1", "localhost", "::1", None, "")
        self.conn = psycopg.connect(db.url, autocommit=True) if self.local else None
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.started = False
        self.sample()
        self.started = True

    def sample(self) -> None:
        if self.conn is None:
            return
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
        for pid, cpu in h.cpu_seconds([int(pid) for (pid,) in rows]).items():
            # A backend first seen after the start is new: all its CPU is ours.
            self.first.setdefault(pid, cpu if not self.started else 0.0)
            self.last[pid] = cpu

    def used(self) -> float:
        return sum(cpu - self.first[pid] for pid, cpu in self.last.items())

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def analyze(db: h.Database) -> float:
    started = time.perf_counter()
    with psycopg.connect(db.url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    return time.perf_counter() - started


def ingest(stack: h.Stack, bodies: Sequence[bytes], size: int, have: int, code: str) -> Ingest:
    """The batches one after the other; CPU per memory of the workers and PostgreSQL too (a
    shared machine makes the rate noisy; the CPU a memory costs is not)."""
    latencies = []
    workers = stack.server.worker_pids()
    cpu0 = h.cpu_seconds(workers)
    backends = BackendCpu(stack.db)
    try:
        for body in bodies:
            response, seconds = stack.api.post_json(f"projects/{PROJECT}/memories/bulk/", body, 201)
            latencies.append(seconds * 1000)
            if not response.json().get("ids"):
                raise h.BenchError("bulk import returned no ids")
            backends.sample()
    finally:
        backends.close()
    after = stack.server.worker_pids()
    cpu1 = h.cpu_seconds(after)
    server_cpu = sum(cpu1.get(p, 0.0) - cpu0.get(p, 0.0) for p in after)
    return Ingest(
        size, code, size - have, sum(latencies) / 1000, latencies, server_cpu, backends.used()
    )


def table_size(db: h.Database) -> dict[str, int]:
    with psycopg.connect(db.url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
            "WHERE relname IN ('memories_memory', 'memories_memoryterm', 'memoryterm_lookup', "
            "'memories_memoryevent')"
        ).fetchall()
        terms = conn.execute("SELECT count(*) FROM memories_memoryterm").fetchone()
    out = {name: int(size) for name, size in rows}
    out["postings"] = int(terms[0]) if terms else 0
    return out


# --- EXPLAIN of the slowest search -------------------------------------------------------------


def _statement_kind(sql: str) -> str:
    if sql.startswith("UPDATE"):
        return "hit_count UPDATE"
    if 'AS "df"' in sql:
        return "df query"
    if "SUM(" in sql:
        return "BM25 query"
    if "AVG(" in sql:
        return "bank stats"
    if 'FROM "memories_memory" WHERE "memories_memory"."id" IN' in sql:
        return "load 200 memories"
    return "other"


def explain_search(stack: h.Stack, slowest: str, sample: Sequence[str]) -> str:
    """Where memory_search spends its time, in this process through Django on the bench
    database: a per-stage breakdown over `sample` questions, then the SQL of the `slowest`
    question with EXPLAIN (ANALYZE, BUFFERS) of each SELECT."""
    os.environ.update(
        {k: v for k, v in stack.env.items() if k in ("DATABASE_URL", "MEMORYHUB_VAR_DIR")}
    )
    os.environ.update(DEBUG="false", LLM_PROVIDER="offline")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    sys.path.insert(0, str(stack.app_dir))  # the snapshot the server runs
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.actors import Actor
    from accounts.models import User
    from memoryhub.recall import search
    from projects.selectors import project_access

    actor = Actor(user=User.objects.get(username=h.OWNER))
    access = project_access(slug=PROJECT, actor=actor)
    timings: list[tuple[str, float]] = []

    def timed(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            timings.append((sql, (time.perf_counter() - t0) * 1000))

    record_access = search._record_access
    bookkeeping: list[float] = []

    def timed_record_access(*args: Any, **kwargs: Any) -> None:
        t0 = time.perf_counter()
        record_access(*args, **kwargs)
        bookkeeping.append((time.perf_counter() - t0) * 1000)

    search._record_access = timed_record_access

    def one(text: str) -> tuple[float, dict[str, float], int]:
        timings.clear()
        bookkeeping.clear()
        t0 = time.perf_counter()
        with connection.execute_wrapper(timed):
            hits = search.memory_search(access=access, query=search.SearchQuery(text=text, k=20))
        total = (time.perf_counter() - t0) * 1000
        stages: dict[str, float] = {}
        for sql, ms in timings:
            kind = _statement_kind(sql)
            stages[kind] = stages.get(kind, 0.0) + ms
        stages["_record_access incl. COMMIT"] = sum(bookkeeping)
        stages["Python (rest)"] = (
            total
            - sum(ms for _, ms in timings)
            - (sum(bookkeeping) - stages.get("hit_count UPDATE", 0.0))
        )
        return total, stages, len(hits)

    for text in sample[:10]:
        one(text)  # warm: stats cache, plans, pages
    totals: list[float] = []
    per_stage: dict[str, list[float]] = {}
    for text in sample:
        total, stages, _ = one(text)
        totals.append(total)
        for kind, ms in stages.items():
            per_stage.setdefault(kind, []).append(ms)
    lines = [
        f"In-process memory_search over {len(sample)} questions (no HTTP, no DRF): p50 "
        f"{h.ms(h.percentile(totals, 0.5))} ms, p95 {h.ms(h.percentile(totals, 0.95))} ms.",
        "",
        "| stage | p50 ms | p95 ms | share of total (sum) |",
        "|---|---:|---:|---:|",
    ]
    whole = sum(totals) or 1.0
    for kind in sorted(per_stage, key=lambda k: -sum(per_stage[k])):
        values = per_stage[kind]
        lines.append(
            f"| {kind} | {h.ms(h.percentile(values, 0.5))} | {h.ms(h.percentile(values, 0.95))} "
            f"| {100 * sum(values) / whole:.0f} % |"
        )
    lines.append(
        "(hit_count UPDATE is part of _record_access; _record_access also holds BEGIN/COMMIT.)"
    )
    lines.append("")

    with CaptureQueriesContext(connection) as captured:
        total, stages, n_hits = one(slowest)
    statements = [
        q for q in captured.captured_queries if q["sql"] not in ("BEGIN", "COMMIT", "ROLLBACK")
    ]
    lines += [
        f"Slowest question over HTTP: {slowest!r} → {n_hits} hits; in-process {total:.1f} ms:",
        "",
    ]
    for i, q in enumerate(statements, 1):
        took = f"{timings[i - 1][1]:.1f}" if i <= len(timings) else "?"
        lines.append(f"-- [{i}] {took} ms: {q['sql'][:1000]}")
    lines.append(f"-- _record_access (UPDATE + COMMIT): {sum(bookkeeping):.1f} ms")
    lines.append("")
    with connection.cursor() as cursor:
        for i, q in enumerate(statements, 1):
            sql = q["sql"]
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            lines += [f"EXPLAIN (ANALYZE, BUFFERS) [{i}]:", plan, ""]
    search._record_access = record_access
    return "\n".join(lines)


# --- Exactness --------------------------------------------------------------------------------


class _Weights:
    """The default recall settings (memoryhub/recall/conf.py) the signals read."""

    signal_session = 0.3
    signal_neighbour = 0.3
    signal_subject = 1.5


def exactness(
    stack: h.Stack, questions: Sequence[str], budget_s: float = float("inf")
) -> dict[str, float]:
    """How often the server's top 20 (GET …/memories/search/, over HTTP) is the exact ranking,
    recomputed here from the database rows in plain Python: BM25 with the default k1 0.3, b 0
    over every term and every memory, × the default decay (strength 0.1) at a fixed "now", then
    — when the server's code has them (memoryhub/recall/signals.py) — the context signals with
    their defaults over the pool the ranking documents (the memories within the decay's floor of
    the 20th best raw score): session coherence (the bench's memories have no source session,
    so each is a session of its own and has no neighbours) and the subject factor (their
    leading `Name:` label), through the server's own pure signals module. Ties: earlier
    insertion first. Stops after `budget_s` seconds; the share is over the questions checked."""
    sys.path.insert(0, str(stack.app_dir))
    from memoryhub.memories.text import tokenize  # the server's own tokenizer
    from memoryhub.recall import scoring

    with_signals = (stack.app_dir / "memoryhub" / "recall" / "signals.py").exists()
    # Pure Python, no Django; the new stack is checked first, so its module is the one loaded.
    signals: Any = importlib.import_module("memoryhub.recall.signals") if with_signals else None

    k1, b, strength, depth = 0.3, 0.0, 0.1, 20
    floor = scoring.decay_floor(strength) if hasattr(scoring, "decay_floor") else 1.0
    now = datetime.fromisoformat(EXACT_AS_OF)
    same20 = same5 = checked = 0
    overlap = 0.0
    started = time.perf_counter()
    with psycopg.connect(stack.db.url, autocommit=True) as conn:
        row = conn.execute("SELECT id FROM projects_project WHERE slug = %s", [PROJECT]).fetchone()
        assert row is not None
        project_id = row[0]
        memories = {
            pk: (str(public_id), importance, created, updated, status, length, session)
            for pk, public_id, importance, created, updated, status, length, session in (
                conn.execute(
                    "SELECT id, public_id, importance, created_at, updated_at, status,"
                    " term_count, source_session FROM memories_memory WHERE project_id = %s",
                    [project_id],
                )
            )
        }
        if with_signals and any(m[6] for m in memories.values()):
            raise h.BenchError("the exactness check assumes memories without a source session")
        subjects: dict[int, frozenset[str]] = {}
        if with_signals:
            for pk, title, head, subject in conn.execute(
                "SELECT id, title, substr(content, 1, 80), metadata->>'subject'"
                " FROM memories_memory WHERE project_id = %s",
                [project_id],
            ):
                text = signals.subject_text(
                    title=title, content=head, metadata={"subject": subject}
                )
                subjects[pk] = frozenset(tokenize(text)) if text else frozenset()
        n_docs = len(memories)
        avgdl = sum(m[5] for m in memories.values()) / max(1, n_docs)
        for question in questions:
            if time.perf_counter() - started > budget_s:
                break
            qtf = Counter(tokenize(question))
            terms = [t for t, _ in qtf.most_common(64)]
            postings = conn.execute(
                "SELECT term, memory_id, tf FROM memories_memoryterm"
                " WHERE project_id = %s AND term = ANY(%s)",
                [project_id, terms],
            ).fetchall()
            df = Counter(term for term, _, _ in postings)
            raw: dict[int, float] = {}
            tf_of: dict[int, dict[str, int]] = {}
            for term, memory_id, tf in postings:
                weight = scoring.idf(n_docs, df[term]) * qtf[term]
                norm = k1 * (1 - b + b * memories[memory_id][5] / max(avgdl, 1e-9))
                raw[memory_id] = raw.get(memory_id, 0.0) + weight * tf * (k1 + 1) / (tf + norm)
                tf_of.setdefault(memory_id, {})[term] = tf
            active = {i: r for i, r in raw.items() if memories[i][4] == "active"}
            best = max(active.values(), default=0.0)
            scored = {
                i: scoring.decayed(
                    r,
                    best_raw=best,
                    importance=memories[i][1],
                    updated_at=memories[i][3],
                    now=now,
                    strength=strength,
                )
                for i, r in active.items()
            }
            if with_signals and scored:
                if len(active) > depth:
                    kth_raw = sorted(active.values(), reverse=True)[depth - 1]
                    pool = [i for i, r in active.items() if r >= floor * kth_raw]
                else:
                    pool = list(active)
                # Each memory is its own session: session BM25 with idf over sessions (= over
                # memories, every status the caller sees) and the memory as the document.
                session_scores = signals.session_bm25(
                    tf={f"#{i}": tf_of[i] for i in pool},
                    lengths={f"#{i}": memories[i][5] for i in pool},
                    df=df,
                    n_sessions=n_docs,
                    qtf=qtf,
                    k1=k1,
                    b=b,
                    avg_length=avgdl,
                )
                final = signals.rerank(
                    [
                        signals.Candidate(
                            id=i,
                            base=scored[i],
                            session=f"#{i}",
                            order=None,
                            subject=subjects.get(i, frozenset()),
                        )
                        for i in pool
                    ],
                    adjacent={},
                    session_scores=session_scores,
                    query_terms=frozenset(qtf),
                    weights=_Weights,
                )
                scored = {c.id: c.score for c in final}
            order = sorted(scored, key=lambda i: (-round(scored[i], 9), memories[i][2], i))
            expected = [memories[i][0] for i in order[:20]]
            response, _ = stack.api.call(
                "GET",
                f"projects/{PROJECT}/memories/search/",
                200,
                params={"q": question, "k": "20", "as_of": EXACT_AS_OF},
            )
            got = [r["id"] for r in response.json()["results"]]
            checked += 1
            same20 += got == expected
            same5 += got[:5] == expected[:5]
            overlap += len(set(got) & set(expected)) / max(1, len(expected))
    n = max(1, checked)
    return {
        "questions": checked,
        "asked": len(questions),
        "signals": with_signals,
        "identical_top20_pct": 100 * same20 / n,
        "identical_top5_pct": 100 * same5 / n,
        "mean_overlap_top20_pct": 100 * overlap / n,
    }


# --- Report ------------------------------------------------------------------------------------


def render(
    facts: dict[str, Any],
    phases: Sequence[Phase],
    ingests: Sequence[Ingest],
    sizes_info: dict[int, dict[str, int]],
    notes: Sequence[str],
) -> str:
    out = [
        f"Recall at scale · {h.facts_line(facts)}",
        "",
        "| endpoint | code | memories | n | p50 ms | p95 ms | p99 ms | target p95 | results/query "
        "| peak RSS MiB (+growth) | CPU ms/query: gunicorn + PostgreSQL | machine busy % "
        "(ours) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ph in phases:
        growth = (
            f" (+{ph.peak_rss_mib - ph.rss_before_mib:,.0f})"
            if ph.peak_rss_mib is not None and ph.rss_before_mib is not None
            else ""
        )
        n = max(1, len(ph.latencies_ms))
        cpu = (
            f"{1000 * ph.server_cpu_s / n:.1f} + {1000 * ph.db_cpu_s / n:.1f}"
            if ph.server_cpu_s is not None and ph.db_cpu_s is not None
            else "–"
        )
        busy = (
            f"{ph.machine_busy_pct:.0f} ({ph.own_cpu_pct:.0f})"
            if ph.machine_busy_pct is not None and ph.own_cpu_pct is not None
            else "–"
        )
        out.append(
            f"| {ph.endpoint} | {ph.code} | {ph.size:,} | {len(ph.latencies_ms):,} "
            f"| {h.ms(ph.p(0.5))} "
            f"| {h.ms(ph.p(0.95))} | {h.ms(ph.p(0.99))} | {TARGET_P95_MS[ph.endpoint]:.0f} "
            f"| {ph.results_per_query:.1f} | "
            + (f"{ph.peak_rss_mib:,.0f}{growth}" if ph.peak_rss_mib is not None else "–")
            + f" | {cpu} | {busy} |"
        )
    by_endpoint: dict[str, dict[int, Phase]] = {}
    for ph in phases:
        by_endpoint.setdefault(f"{ph.endpoint} ({ph.code})", {})[ph.size] = ph
    out += ["", "Growth factor (p50 and p95 at the largest size ÷ at the smallest):", ""]
    for name, per_size in by_endpoint.items():
        lo, hi = per_size[min(per_size)], per_size[max(per_size)]
        p50_lo, p50_hi, p95_lo, p95_hi = lo.p(0.5), hi.p(0.5), lo.p(0.95), hi.p(0.95)
        if p50_lo and p50_hi and p95_lo and p95_hi:
            out.append(
                f"- {name}: {min(per_size):,} → {max(per_size):,} memories "
                f"(×{max(per_size) // min(per_size)}): p50 ×{p50_hi / p50_lo:.1f}, "
                f"p95 ×{p95_hi / p95_lo:.1f}"
            )
    out += [
        "",
        "| ingest step | code | memories added | batches of 1,000 | seconds | memories/s "
        "| batch p50 ms | batch p95 ms | CPU ms/memory: gunicorn + PostgreSQL | postings after "
        "| memoryterm table+indexes MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ing in ingests:
        info = sizes_info.get(ing.size, {})
        out.append(
            f"| → {ing.size:,} | {ing.code} | {ing.added:,} | {len(ing.batch_ms)} "
            f"| {ing.seconds:,.1f} "
            f"| {ing.per_s:,.0f} | {h.ms(h.percentile(ing.batch_ms, 0.5))} "
            f"| {h.ms(h.percentile(ing.batch_ms, 0.95))} | {ing.cpu_ms_per_memory()} "
            f"| {info.get('postings', 0):,} "
            f"| {info.get('memories_memoryterm', 0) / h.MiB:,.0f} |"
        )
    if notes:
        out += ["", "Notes:"] + [f"- {n}" for n in notes]
    return "\n".join(out)


def exact_line(code: str, share: dict[str, Any], size: int) -> str:
    cut = (
        f" (of {share['asked']:,} asked: --exact-budget-s ran out)"
        if share["questions"] < share["asked"]
        else ""
    )
    against = "BM25 × decay + the context signals" if share["signals"] else "BM25 × decay"
    return (
        f"exact ({code}, {share['questions']:,} questions at {size:,}{cut}): identical top 20 "
        f"for {share['identical_top20_pct']:.1f} %, identical top 5 for "
        f"{share['identical_top5_pct']:.1f} %, mean overlap of the top 20 "
        f"{share['mean_overlap_top20_pct']:.1f} % (against {against} recomputed from the "
        "database rows in the bench)"
    )


def run(args: argparse.Namespace, admin_url: str) -> int:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    wanted = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    for e in wanted:
        if e not in ENDPOINTS:
            raise h.BenchError(f"unknown endpoint {e!r}; choose from {', '.join(ENDPOINTS)}")
    convs = L.load(Path(args.data))
    questions = [q.text for c in convs for q in c.questions]
    random.Random(SEED).shuffle(questions)  # noqa: S311 — a fixed order, not security
    bank = Bank(convs)
    phases: list[Phase] = []
    ingests: list[Ingest] = []
    sizes_info: dict[int, dict[str, int]] = {}
    notes: list[str] = []
    explain = ""
    exact: dict[str, dict[str, float]] = {}
    server = h.SERVERS[args.server]
    started = time.perf_counter()
    with contextlib.ExitStack() as exit_stack:
        stacks: list[tuple[str, h.Stack]] = []
        if args.baseline:
            h.log(f"baseline (today's code): {args.baseline}")
            base = exit_stack.enter_context(
                h.bench_stack(admin_url, PROJECT, source=Path(args.baseline), server_class=server)
            )
            stacks.append(("today", base))
        stack = exit_stack.enter_context(h.bench_stack(admin_url, PROJECT, server_class=server))
        stacks.append(("new", stack))
        endpoints: dict[str, list[Endpoint]] = {}
        for code, st in stacks:
            session: str | None = None
            if "recall" in wanted or "injection" in wanted:
                response, _ = st.api.post_json(
                    f"projects/{PROJECT}/sessions/",
                    json.dumps({"external_id": "bench-recall"}).encode(),
                    201,
                )
                session = str(response.json().get("id") or "bench-recall")
            endpoints[code] = [Endpoint(name, st.api, session) for name in wanted]
        have = 0
        for size in sizes:
            h.log(f"ingest: {have:,} → {size:,} memories in batches of {BATCH:,}")
            bodies = bank.batches(size - have)  # encoded before timing, the same for both
            for code, st in stacks:
                ing = ingest(st, bodies, size, have, code)
                ingests.append(ing)
                h.log(f"  {code}: {ing.seconds:,.1f} s, {ing.per_s:,.0f} memories/s; ANALYZE")
                analyze_s = analyze(st.db)
                if code == "new":
                    sizes_info[size] = table_size(st.db)
                    sizes_info[size]["analyze_ms"] = int(analyze_s * 1000)
            have = size
            if args.exact_n and size == sizes[-1]:
                # Before the latency phases (which recycle the workers anyway), so a run cut
                # short by its caller still has it; the new stack first: its tokenizer and
                # scoring are imported for both checks.
                for code, st in reversed(stacks):
                    h.log(f"exactness ({code}) over {args.exact_n} questions at {size:,}")
                    exact[code] = exactness(st, questions[: args.exact_n], args.exact_budget_s)
                    h.log(f"  {exact_line(code, exact[code], size)}")
            for name in wanted:
                for code, st in stacks:
                    endpoint = next(e for e in endpoints[code] if e.name == name)
                    why = endpoint.probe()
                    if why is not None:
                        if why not in notes:
                            notes.append(f"{code}: {why}")
                        continue
                    limits = f"≤ {args.queries} questions, ≤ {args.budget_s} s"
                    h.log(f"  {name} ({code}) at {size:,}: {limits}")
                    phase = measure(
                        st, endpoint, size, questions, args.queries, args.budget_s, code
                    )
                    phases.append(phase)
                    h.log(
                        f"  n={len(phase.latencies_ms)} p50 {h.ms(phase.p(0.5))} ms "
                        f"p95 {h.ms(phase.p(0.95))} ms"
                    )
        if args.explain and any(p.endpoint == "search" for p in phases):
            last = [
                p
                for p in phases
                if p.endpoint == "search" and p.size == sizes[-1] and p.code == "new"
            ][0]
            slowest = max(range(len(last.latencies_ms)), key=lambda i: last.latencies_ms[i])
            h.log(f"EXPLAIN of the slowest search at {sizes[-1]:,}: {questions[slowest]!r}")
            explain = explain_search(stack, questions[slowest], questions[: args.profile_n])
        facts = stack.facts
    wall = time.perf_counter() - started
    search_phases = [p for p in phases if p.endpoint == "search"]
    for ph in search_phases:
        if len(ph.latencies_ms) < min(args.queries, len(questions)):
            notes.append(
                f"search at {ph.size:,}: stopped after {len(ph.latencies_ms):,} questions "
                f"(--budget-s {args.budget_s})"
            )
    notes.append(
        "machine busy %: all CPU use on the 2 cores during the phase, other people's processes "
        "included; (ours) = gunicorn workers + the bench database's PostgreSQL backends + this "
        "client. When busy is well above ours, the latencies include waiting for a core; the "
        "CPU per query does not."
    )
    for code, share in exact.items():
        notes.append(exact_line(code, share, sizes[-1]))
    notes.append(f"whole run {wall / 60:,.1f} min")
    print(render(facts, phases, ingests, sizes_info, notes))
    if explain:
        print()
        print(explain)
    if args.json:
        out = {
            "machine": facts,
            "sizes": sizes_info,
            "phases": [
                {
                    **{k: v for k, v in asdict(p).items() if k != "latencies_ms"},
                    "n": len(p.latencies_ms),
                    "p50_ms": p.p(0.5),
                    "p95_ms": p.p(0.95),
                    "p99_ms": p.p(0.99),
                    "latencies_ms": [round(x, 3) for x in p.latencies_ms],
                }
                for p in phases
            ],
            "ingest": [
                {**asdict(i), "per_s": i.per_s, "batch_ms": [round(x, 1) for x in i.batch_ms]}
                for i in ingests
            ],
            "notes": notes,
            "exactness": exact,
            "explain": explain,
        }
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument(
        "--server",
        choices=sorted(h.SERVERS),
        default="asgi",
        help="gunicorn with uvicorn workers serving memoryhub.asgi (as `make run` and the "
        "Docker image), or with sync workers serving memoryhub.wsgi",
    )
    parser.add_argument(
        "--endpoints", default=",".join(ENDPOINTS), help="comma list of " + ",".join(ENDPOINTS)
    )
    parser.add_argument("--queries", type=int, default=1986, help="questions per size and endpoint")
    parser.add_argument(
        "--budget-s", type=float, default=90.0, help="seconds per size and endpoint"
    )
    parser.add_argument(
        "--explain", action="store_true", help="profile + EXPLAIN the slowest search"
    )
    parser.add_argument("--profile-n", type=int, default=200, help="questions for --explain")
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also run this checkout (e.g. a git worktree of an older commit) side by side: its "
        "own database and gunicorn, the same bank and questions, phases alternating",
    )
    parser.add_argument(
        "--exact-n",
        type=int,
        default=400,
        help="questions for the exactness check at the largest size (0: none)",
    )
    parser.add_argument(
        "--exact-budget-s",
        type=float,
        default=150.0,
        help="seconds for the exactness check per code; the share is over the questions checked",
    )
    parser.add_argument("--data", default=str(L.DATA), help="locomo10.json (default: %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers to FILE")
    args = parser.parse_args(argv)
    return h.run_bench("bench/recall_scale.py", run, args)


if __name__ == "__main__":
    sys.exit(main())
