"""memory_search over MCP's streamable HTTP: latency as an agent sees it, against REST search.

A fresh PostgreSQL database, `gunicorn memoryhub.asgi` with two uvicorn workers (as `make run`
serves Django and /mcp), one project holding --memories synthetic memories (bulk API), then
--calls memory_search tool calls through the official MCP SDK client over one connection, and
the same queries through GET …/memories/search/. Each query is timed end to end (the SDK's
JSON-RPC round trip, or the HTTP request), one at a time. Rate limits are off for the run.

    bench/pg.sh && export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/mcp_search.py [--memories 2000] [--calls 400]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (  # noqa: E402
    AsgiServer,
    BenchError,
    Database,
    log,
    machine_facts,
    ms,
    percentile,
    run_bench,
    run_manage,
    server_env,
    snapshot_app,
)

PROJECT = "bench-mcp"
OWNER = "bench"
WORDS = [
    "deploy",
    "staging",
    "database",
    "migration",
    "redis",
    "cache",
    "celery",
    "worker",
    "queue",
    "token",
    "secret",
    "vault",
    "frontend",
    "webpack",
    "esbuild",
    "pnpm",
    "docker",
    "compose",
    "nginx",
    "proxy",
    "tls",
    "certificate",
    "backup",
    "restore",
    "sunday",
    "payroll",
    "export",
    "invoice",
    "customer",
    "ticket",
    "incident",
    "outage",
    "rollback",
    "release",
    "branch",
    "review",
    "merge",
    "rebase",
    "pytest",
    "fixture",
    "flaky",
    "timeout",
    "retry",
    "lease",
    "heartbeat",
    "schema",
    "index",
    "postgres",
    "vacuum",
    "replica",
    "latency",
    "budget",
    "alert",
    "grafana",
    "dashboard",
    "oncall",
    "runbook",
    "kafka",
]


def sentence(rng: random.Random) -> tuple[str, list[str]]:
    words = rng.sample(WORDS, 9)
    return (
        f"The {words[0]} {words[1]} needs the {words[2]} {words[3]} before the {words[4]} "
        f"{words[5]}; check {words[6]} and {words[7]} with {words[8]} first.",
        words,
    )


def seed(base_url: str, token: str, count: int, rng: random.Random) -> None:
    url = f"{base_url}/api/v1/projects/{PROJECT}/memories/bulk/"
    headers = {"Authorization": f"Bearer {token}"}
    for start in range(0, count, 1000):
        items = []
        for _ in range(min(1000, count - start)):
            content, words = sentence(rng)
            items.append({"content": content, "kind": "fact", "keywords": words})
        response = httpx.post(url, json={"items": items}, headers=headers, timeout=300)
        if response.status_code != 201:
            raise BenchError(f"bulk import: HTTP {response.status_code}: {response.text[:500]}")


def timed_mcp(base_url: str, token: str, queries: list[str], mode: str) -> list[float]:
    async def main() -> list[float]:
        times = []
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as http:
            transport = streamable_http_client(f"{base_url}/mcp/p/{PROJECT}/", http_client=http)
            async with Client(transport, mode=mode, cache=None) as client:
                for query in queries:
                    started = time.perf_counter()
                    result = await client.call_tool("memory_search", {"query": query})
                    times.append(time.perf_counter() - started)
                    if result.is_error or not result.structured_content["results"]:
                        raise BenchError(f"memory_search {query!r}: {result.content}")
        return times

    return anyio.run(main)


def timed_rest(base_url: str, token: str, queries: list[str]) -> list[float]:
    times = []
    url = f"{base_url}/api/v1/projects/{PROJECT}/memories/search/"
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        for query in queries:
            started = time.perf_counter()
            response = http.get(url, params={"q": query, "k": 10})
            times.append(time.perf_counter() - started)
            if response.status_code != 200 or not response.json()["results"]:
                raise BenchError(f"REST search {query!r}: {response.status_code}")
    return times


def row(name: str, seconds: list[float]) -> str:
    values = [s * 1000 for s in seconds]
    return (
        f"| {name} | {len(values)} | {ms(percentile(values, 0.5))} | "
        f"{ms(percentile(values, 0.95))} | {ms(percentile(values, 0.99))} | "
        f"{ms(statistics.fmean(values))} |"
    )


def run(args: argparse.Namespace, admin_url: str) -> int:
    rng = random.Random(11)  # noqa: S311 — benchmark data, not secrets
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.calls)]
    warmup = [" ".join(rng.sample(WORDS, 3)) for _ in range(20)]
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryhub-bench-")))
        facts = machine_facts({}, 2)
        app_dir = snapshot_app(tmp / "app")
        db = Database(admin_url)
        log(f"creating database {db.name} and migrating it")
        db.create()
        stack.callback(db.drop)
        env = server_env(db.url, tmp / "var") | {
            "API_TOKEN_RATE_LIMIT": "off",
            "API_USER_RATE_LIMIT": "off",
        }
        run_manage(env, "migrate", "--noinput", "--verbosity", "0", app_dir=app_dir)
        run_manage(env, "project_create", PROJECT, "--owner", OWNER, app_dir=app_dir)
        token = run_manage(env, "token_create", "--user", OWNER, app_dir=app_dir).strip()
        server = AsgiServer(env, tmp / "gunicorn.log", 2, app_dir)
        log(f"starting gunicorn (2 uvicorn workers, memoryhub.asgi) on {server.base_url}")
        stack.callback(server.stop)
        server.start()
        log(f"importing {args.memories} memories")
        seed(server.base_url, token, args.memories, rng)
        timed_mcp(server.base_url, token, warmup, "auto")
        timed_rest(server.base_url, token, warmup)
        load_before = os.getloadavg()[0]
        results: dict[str, Callable[[], list[float]]] = {
            "MCP memory_search (2026-07-28 protocol)": lambda: timed_mcp(
                server.base_url, token, queries, "auto"
            ),
            "MCP memory_search (legacy initialize handshake)": lambda: timed_mcp(
                server.base_url, token, queries, "legacy"
            ),
            "REST GET …/memories/search/?k=10": lambda: timed_rest(server.base_url, token, queries),
        }
        lines = []
        for name, measure in results.items():
            log(f"measuring: {name}")
            lines.append(row(name, measure()))
        load_after = os.getloadavg()[0]
    print(f"\n{facts['date']} · commit {facts['commit']} · nproc {facts['nproc']} · {facts['cpu']}")
    print(
        f"{args.memories} memories in one project · {args.calls} queries of 3 words, one at a "
        f"time, k 10 · load average {load_before:.2f} before, {load_after:.2f} after\n"
    )
    print("| what | calls | p50 ms | p95 ms | p99 ms | mean ms |")
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(lines))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=400)
    return run_bench("bench/mcp_search.py", run, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
