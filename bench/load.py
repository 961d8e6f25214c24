"""Load benchmark: N concurrent agents against gunicorn + PostgreSQL + Redis + a Celery worker.

    bench/pg.sh                                  # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/load.py [--agents 50] [--seconds 60] [--gunicorn-workers 4]

Each agent is an asyncio task with its own session in one project. Until the time is up it
loops over a weighted mix of what a coding agent does: append transcript records (1–5 per
request, by seq), fetch its injection payload, recall for a prompt, search, and write a memory.
At the end every agent ends its session, so extraction runs on the worker while the checks are
made. It reports, per operation, the count, errors, p50/p95/p99 and throughput, and then checks
in the database that records stored == records acknowledged and memories stored == memories
acknowledged (each write carries a unique marker). A run with any error or mismatch exits 1.

The request loop is bounded by --seconds and every request by a timeout; everything it starts
(a fresh database, redis-server, gunicorn, the worker) is removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _harness as h
import httpx
import psycopg
from pipeline import Workers, start_broker

SCRIPT = "bench/load.py"
SLUG = "load"
REQUEST_TIMEOUT_S = 30.0
# (operation, weight): appends dominate, as in a real session; reads block the agent's turn.
MIX = (("append", 40), ("injection", 10), ("recall", 20), ("search", 20), ("memory_write", 10))
WORDS = [
    "deploy",
    "staging",
    "migration",
    "postgres",
    "redis",
    "celery",
    "worker",
    "retry",
    "timeout",
    "cache",
    "index",
    "query",
    "docker",
    "compose",
    "lint",
    "format",
    "test",
    "fixture",
    "makefile",
    "branch",
    "review",
    "token",
    "budget",
    "schema",
]


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    records_acked: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    memory_markers: list[str] = field(default_factory=list)


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


async def timed(
    stats: Stats, op: str, client: httpx.AsyncClient, method: str, url: str, **kw: Any
) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = await client.request(method, url, **kw)
    except httpx.HTTPError as exc:
        stats.errors[op].append(f"{type(exc).__name__}: {exc}")
        return None
    stats.latencies[op].append(time.perf_counter() - started)
    if response.status_code >= 400:
        stats.errors[op].append(f"HTTP {response.status_code}: {response.text[:200]}")
        return None
    return response


async def agent(
    index: int, base: str, token: str, deadline: float, stats: Stats, seed: int
) -> None:
    rng = random.Random(seed + index)  # noqa: S311 — reproducible traffic, not secrets
    external_id = f"load-{index}-{uuid.uuid4().hex[:8]}"
    prefix = f"{base}/api/v1/projects/{SLUG}/"
    ops = [op for op, _ in MIX]
    weights = [w for _, w in MIX]
    # Each agent has a token of its own, as on a team (the per-token rate limit applies).
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S) as client:
        minted = await client.post(
            f"{base}/api/v1/tokens/",
            json={"name": f"agent {index}", "project": SLUG},
            headers={"Authorization": f"Bearer {token}"},
        )
        if minted.status_code != 201:
            stats.errors["token_create"].append(f"HTTP {minted.status_code}: {minted.text[:200]}")
            return
        client.headers["Authorization"] = f"Bearer {minted.json()['token']}"
        if (
            await timed(
                stats,
                "session_create",
                client,
                "POST",
                prefix + "sessions/",
                json={"external_id": external_id},
            )
            is None
        ):
            return
        seq = 0
        while time.monotonic() < deadline:
            op = rng.choices(ops, weights)[0]
            if op == "append":
                batch = []
                for _ in range(rng.randint(1, 5)):
                    seq += 1
                    role = "user" if seq % 2 else "assistant"
                    batch.append({"type": role, "content": sentence(rng), "seq": seq})
                url = f"{prefix}sessions/{external_id}/records/"
                if await timed(stats, op, client, "POST", url, json=batch) is not None:
                    stats.records_acked[external_id] += len(batch)
            elif op == "injection":
                await timed(
                    stats,
                    op,
                    client,
                    "GET",
                    prefix + "injection/",
                    params={"profile": "mewcode", "session_id": external_id},
                )
            elif op == "recall":
                await timed(
                    stats,
                    op,
                    client,
                    "POST",
                    prefix + "recall/",
                    json={"query": sentence(rng, 8), "session_id": external_id},
                )
            elif op == "search":
                await timed(
                    stats,
                    op,
                    client,
                    "GET",
                    prefix + "memories/search/",
                    params={"q": sentence(rng, 4), "k": 10},
                )
            else:
                marker = f"loadmark{uuid.uuid4().hex}"
                body = {
                    "kind": "project",
                    "content": f"{sentence(rng)} {marker}",
                    "keywords": rng.sample(WORDS, 3),
                }
                if (
                    await timed(stats, op, client, "POST", prefix + "memories/", json=body)
                    is not None
                ):
                    stats.memory_markers.append(marker)
        await timed(
            stats, "session_end", client, "POST", f"{prefix}sessions/{external_id}/end/", json={}
        )


def verify(db_url: str, stats: Stats) -> list[str]:
    """Mismatches between what the server acknowledged and what the database holds."""
    problems: list[str] = []
    with psycopg.connect(db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.external_id, count(r.id) FROM agent_sessions_agentsession s "
            "LEFT JOIN agent_sessions_sessionrecord r ON r.session_id = s.id "
            "WHERE s.external_id LIKE 'load-%%' GROUP BY s.external_id"
        ).fetchall()
        stored = {external_id: count for external_id, count in rows}
        for external_id, acked in stats.records_acked.items():
            if stored.get(external_id, 0) != acked:
                problems.append(f"{external_id}: {acked} records acked, {stored.get(external_id)}")
        found = conn.execute(
            "SELECT count(*) FROM memories_memory WHERE content LIKE '%%loadmark%%'"
        ).fetchone()
        n_found = found[0] if found else 0
        if n_found != len(stats.memory_markers):
            problems.append(f"{len(stats.memory_markers)} memories acked, {n_found} stored")
    return problems


def pct(values: Sequence[float], q: float) -> str:
    return h.ms(None if not values else h.percentile([v * 1000 for v in values], q))


def report(stats: Stats, seconds: float, args: argparse.Namespace, facts: dict[str, Any]) -> None:
    print(f"\n{h.facts_line(facts)}")
    print(
        f"{args.agents} agents for {seconds:.0f} s, gunicorn {args.gunicorn_workers} workers, "
        f"1 Celery worker (concurrency {args.celery_concurrency})\n"
    )
    print("| operation | requests | errors | p50 ms | p95 ms | p99 ms | per s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    total = 0
    for op in (
        "append",
        "injection",
        "recall",
        "search",
        "memory_write",
        "session_create",
        "session_end",
    ):
        values = stats.latencies.get(op, [])
        n_err = len(stats.errors.get(op, []))
        total += len(values)
        print(
            f"| {op} | {len(values)} | {n_err} | {pct(values, 0.50)} | {pct(values, 0.95)} | "
            f"{pct(values, 0.99)} | {len(values) / seconds:.1f} |"
        )
    records = sum(stats.records_acked.values())
    print(
        f"\n{total} requests ({total / seconds:.0f}/s); {records} records "
        f"({records / seconds:.0f}/s) and {len(stats.memory_markers)} memories acknowledged"
    )
    for op, errs in stats.errors.items():
        for line in errs[:3]:
            print(f"  error in {op}: {line}")


async def drive(base: str, token: str, args: argparse.Namespace) -> tuple[Stats, float]:
    stats = Stats()
    started = time.monotonic()
    deadline = started + args.seconds
    await asyncio.gather(
        *(agent(i, base, token, deadline, stats, args.seed) for i in range(args.agents))
    )
    return stats, time.monotonic() - started


def run(args: argparse.Namespace, admin_url: str) -> int:
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryhub-load-")))
        facts = h.machine_facts({}, args.gunicorn_workers)
        db = h.Database(admin_url)
        h.log(f"creating database {db.name}")
        db.create()
        stack.callback(db.drop)
        broker = stack.enter_context(start_broker(tmp, tmp / "var"))
        env = h.server_env(db.url, tmp / "var") | broker.env
        queue = f"load-{uuid.uuid4().hex[:6]}"
        env["CELERY_TASK_DEFAULT_QUEUE"] = queue
        # Every agent is one person's: the per-person limit would throttle the team of 50.
        env["API_USER_RATE_LIMIT"] = "off"
        h.run_manage(env, "migrate", "--noinput", "--verbosity", "0")
        h.run_manage(env, "project_create", SLUG, "--owner", h.OWNER)
        token = h.run_manage(env, "token_create", "--user", h.OWNER).strip()
        db_facts = db.facts()
        facts["postgresql"] = db_facts["version"].split(" on ")[0]
        facts["pg_settings"] = {k: v for k, v in db_facts.items() if k != "version"}
        server = h.Server(env, tmp / "gunicorn.log", args.gunicorn_workers)
        stack.callback(server.stop)
        server.start()
        workers = Workers(env, queue, args.celery_concurrency, tmp / "worker.log")
        stack.callback(workers.stop)
        workers.start()
        h.log(f"{args.agents} agents for {args.seconds} s against {server.base_url}")
        stats, seconds = asyncio.run(drive(server.base_url, token, args))
        problems = verify(db.url, stats)
        report(stats, seconds, args, facts)
        worker_errors = workers.errors()
        if worker_errors:
            problems.append(f"{len(worker_errors)} error lines in the worker log")
        errors = sum(len(v) for v in stats.errors.values())
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {
                        "agents": args.agents,
                        "seconds": seconds,
                        "errors": errors,
                        "problems": problems,
                        "latency_ms": {
                            op: [v * 1000 for v in vals] for op, vals in stats.latencies.items()
                        },
                    }
                )
            )
        for problem in problems:
            print(f"MISMATCH: {problem}")
        print("OK: stored == acknowledged" if not problems else "FAILED")
        return 0 if not problems and not errors else 1
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--celery-concurrency", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write raw latencies to this file")
    args = parser.parse_args(argv)
    return h.run_bench(SCRIPT, run, args)


if __name__ == "__main__":
    sys.exit(main())
