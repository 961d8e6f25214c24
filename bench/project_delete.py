"""Benchmark of deleting a project (DELETE /api/v1/projects/{slug}/), through real HTTP.

    bench/pg.sh                                       # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/project_delete.py [--sizes 10000,100000] [--json FILE]

For each size: a fresh project gets that many memories through the bulk API (1,000 per
request) and 20 sessions of 500 records each; a neighbour project of 1,000 memories stays
beside it. Then the owner deletes the project, timed, with the peak RSS of the gunicorn
workers meanwhile (VmHWM after a reset). Afterwards it checks that the project answers 404,
that no row of it is left (memories, postings, history, sessions, records, bank bookkeeping)
and that the neighbour still finds its memories. It prints a Markdown table; the database and
the server are removed at the end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import _harness as h
import psycopg

BATCH = 1000
SESSIONS = 20
RECORDS = 500
NEIGHBOUR = "neighbour"
# Words of coding-agent memories, from which the synthetic sentences are drawn.
_TEXT = (
    "deploy release staging migration schema postgres redis celery worker queue token lint"
    " format test fixture coverage branch merge review pipeline cache index query latency"
    " budget memory session transcript recall inject archive stale owner member docker image"
    " build artifact rollback feature flag config secret vault monitor alert metric trace log"
)
WORDS = _TEXT.split()
LEFT_BEHIND = {
    "memories": "SELECT count(*) FROM memories_memory WHERE project_id = %s",
    "postings": "SELECT count(*) FROM memories_memoryterm WHERE project_id = %s",
    "history": "SELECT count(*) FROM memories_memoryevent WHERE project_id = %s",
    "sessions": "SELECT count(*) FROM agent_sessions_agentsession WHERE project_id = %s",
    "bank_changes": "SELECT count(*) FROM memories_bankchange WHERE project_id = %s",
    "bank_versions": "SELECT count(*) FROM memories_bankversion WHERE project_id = %s",
}


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))).capitalize() + "."


def fill(api: h.Api, slug: str, memories: int, sessions: int, rng: random.Random) -> None:
    done = 0
    while done < memories:
        size = min(BATCH, memories - done)
        items = [{"content": sentence(rng), "kind": "fact"} for _ in range(size)]
        body = json.dumps({"items": items}).encode()
        api.post_json(f"projects/{slug}/memories/bulk/", body, 201)
        done += size
    for n in range(sessions):
        sid = f"s{n}"
        api.call("POST", f"projects/{slug}/sessions/", 201, json={"external_id": sid})
        records = [
            {"type": "user" if i % 2 == 0 else "assistant", "content": sentence(rng)}
            for i in range(RECORDS)
        ]
        api.call("POST", f"projects/{slug}/sessions/{sid}/records/", 201, json=records)


def project_id(db_url: str, slug: str) -> int:
    with psycopg.connect(db_url) as conn:
        row = conn.execute("SELECT id FROM projects_project WHERE slug = %s", (slug,)).fetchone()
    if row is None:
        raise h.BenchError(f"no project {slug}")
    return int(row[0])


def left_behind(db_url: str, pid: int) -> dict[str, int]:
    counts = {}
    with psycopg.connect(db_url) as conn:
        for what, query in LEFT_BEHIND.items():
            row = conn.execute(query, (pid,)).fetchone()
            counts[what] = int(row[0]) if row else 0
    return counts


def run(args: argparse.Namespace, admin_url: str) -> int:
    rng = random.Random(7)  # noqa: S311 — synthetic data
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    with h.bench_stack(admin_url, NEIGHBOUR) as stack:
        fill(stack.api, NEIGHBOUR, 1000, 0, rng)
        for size in sizes:
            slug = f"p{size}"
            stack.api.create_project(slug)
            h.log(f"filling {slug}: {size} memories, {SESSIONS}×{RECORDS} records")
            fill(stack.api, slug, size, SESSIONS, rng)
            pid = project_id(stack.db.url, slug)
            workers = stack.server.worker_pids()
            for w in workers:
                h.reset_peak_rss(w)
            rss_before = max(h.status_kib(w, "VmRSS") or 0 for w in workers)
            started = time.perf_counter()
            response, _ = stack.api.call("DELETE", f"projects/{slug}/?confirm={slug}", 200)
            seconds = time.perf_counter() - started
            peak = max(h.status_kib(w, "VmHWM") or 0 for w in workers)
            deleted = response.json()["deleted"]
            if deleted["memories"] != size or deleted["records"] != SESSIONS * RECORDS:
                raise h.BenchError(f"deleted {deleted}, expected {size} memories")
            stack.api.call("GET", f"projects/{slug}/", 404)
            rest = left_behind(stack.db.url, pid)
            if any(rest.values()):
                raise h.BenchError(f"rows left behind: {rest}")
            found, _ = stack.api.call("GET", f"projects/{NEIGHBOUR}/memories/search/?q=deploy", 200)
            if not found.json()["results"]:
                raise h.BenchError("the neighbour project lost its memories")
            rows.append(
                {
                    "memories": size,
                    "records": SESSIONS * RECORDS,
                    "seconds": round(seconds, 2),
                    "worker_rss_growth_mib": round((peak - rss_before) / 1024, 1),
                }
            )
            h.log(f"{slug}: deleted in {seconds:.2f} s")
        facts = stack.facts
    print(f"Project deletion through HTTP — {h.facts_line(facts)}\n")
    print("| memories | records | DELETE seconds | worker peak RSS growth (MiB) |")
    print("|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['memories']:,} | {r['records']:,} | {r['seconds']} |"
            f" {r['worker_rss_growth_mib']} |"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"facts": facts, "rows": rows}, out, indent=2)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--json", help="also write the results as JSON")
    return h.run_bench("project_delete.py", run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
