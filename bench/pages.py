"""Dashboard page times at 100,000 memories in one project, on PostgreSQL, through real HTTP.

    bench/pg.sh                                  # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/pages.py [--memories 100000] [--requests 40] [--json FILE]

One fresh database (dropped at the end), `gunicorn memoryhub.wsgi` with 2 sync workers, one
project filled by the bulk API in 1,000-item batches: synthetic sentences over a 4,000-word
Zipf vocabulary (so search terms range from rare to very common), kinds mixed, created_at
spread over a year, 2 % proposed, 3 % stale, 1 % user-scope. Then ANALYZE, fresh workers, one
warm-up round, and --requests requests per page, one at a time, signed in as the owner through
the sign-in form (a browser's session cookie, not a token):

- browser:        /p/<slug>/memories/                    (first page, newest first)
- browser-filter: …?kind=fact&status=all&sort=importance (a filter and another sort)
- browser-page-3: the third page, through the keyset cursors
- search:         …?q=<two or three vocabulary words>    (the recall ranking; varied queries)
- review:         /p/<slug>/review/                      (2,000 proposed memories waiting)
- memory:         a memory's page with its history
- dashboard:      /p/<slug>/                             (counts, jobs, LLM, 30-day charts)
- projects:       /                                      (the projects list with counts)

Latency is the client's wall time per request (a new TCP connection each, as gunicorn's sync
workers close it). The machine's load average is printed: this machine is shared.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _harness as h
import httpx
import psycopg

PROJECT = "pages"
BATCH = 1000
SEED = 20261201
PASSWORD = "bench pages password 2026"
KINDS = ["fact", "fact", "fact", "project", "lesson", "rule", "reference", "topic"]
PAGES = [
    "browser",
    "browser-filter",
    "browser-page-3",
    "search",
    "review",
    "memory",
    "dashboard",
    "projects",
]


def vocabulary(rng: random.Random, n: int = 4000) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < n:
        length = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length)))
    return sorted(words)


def zipf_words(rng: random.Random, words: list[str], k: int) -> list[str]:
    # Rank r is drawn with weight 1/r: a few words are everywhere, most are rare.
    return rng.choices(words, weights=WEIGHTS, k=k)


WEIGHTS: list[float] = []


def memory_item(rng: random.Random, words: list[str], i: int, now: datetime) -> dict[str, Any]:
    roll = rng.random()
    status = "proposed" if roll < 0.02 else "active"
    kind = "user" if roll > 0.99 else rng.choice(KINDS)
    created = now - timedelta(seconds=rng.randint(0, 365 * 86400))
    sentence = " ".join(zipf_words(rng, words, rng.randint(8, 24)))
    return {
        "content": f"{sentence.capitalize()}. Note {i}.",
        "kind": kind,
        "title": " ".join(zipf_words(rng, words, 3)).capitalize() if rng.random() < 0.3 else "",
        "keywords": zipf_words(rng, words, rng.randint(2, 6)),
        "importance": rng.choice([1, 1, 1, 2, 2, 3]),
        "status": status,
        "created_at": created.isoformat(),
        "updated_at": (created + timedelta(seconds=rng.randint(0, 86400 * 30))).isoformat(),
    }


def sign_in(base_url: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=120, follow_redirects=False)
    form = client.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    if token is None:
        raise h.BenchError("no CSRF token on the sign-in form")
    done = client.post(
        "/accounts/login/",
        data={"username": h.OWNER, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": base_url + "/accounts/login/"},
    )
    if done.status_code != 302:
        raise h.BenchError(f"sign-in failed: HTTP {done.status_code}")
    return client


def timed(client: httpx.Client, url: str) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise h.BenchError(f"GET {url}: HTTP {response.status_code}\n{response.text[:2000]}")
    return response, elapsed


def next_link(html: str) -> str:
    match = re.search(r'<a href="([^"]+)" rel="next">', html)
    if match is None:
        raise h.BenchError("no next page link")
    return match.group(1).replace("&amp;", "&")


def run(args: argparse.Namespace, admin_url: str) -> int:
    rng = random.Random(SEED)  # noqa: S311 — reproducible test data, not secrets
    words = vocabulary(rng)
    WEIGHTS[:] = [1 / (rank + 1) for rank in range(len(words))]
    now = datetime.now(UTC)
    with h.bench_stack(admin_url, PROJECT) as stack:
        # Pages link hashed static files, as under `make run`; workers are recycled below.
        h.run_manage(stack.env, "collectstatic", "--noinput", "-v0", app_dir=stack.app_dir)
        h.run_manage(
            stack.env,
            "shell",
            "-c",
            "from accounts.models import User; u = User.objects.get(username='bench'); "
            f"u.set_password({PASSWORD!r}); u.save()",
            app_dir=stack.app_dir,
        )
        h.log(f"loading {args.memories:,} memories")
        started = time.perf_counter()
        for offset in range(0, args.memories, BATCH):
            items = [
                memory_item(rng, words, i, now)
                for i in range(offset, min(offset + BATCH, args.memories))
            ]
            body = json.dumps({"items": items}).encode()
            stack.api.post_json(f"projects/{PROJECT}/memories/bulk/", body, 201)
        load_s = time.perf_counter() - started
        h.log(f"loaded in {load_s:.0f} s; marking 3 % stale, ANALYZE")
        with psycopg.connect(stack.db.url, autocommit=True) as conn:
            conn.execute(
                "UPDATE memories_memory SET status = 'stale', status_reason = 'bench' "
                "WHERE id % 33 = 0 AND status = 'active'"
            )
            conn.execute("ANALYZE")
        stack.server.recycle_workers()
        client = sign_in(stack.server.base_url)
        base = f"/p/{PROJECT}/"
        listing, _ = timed(client, base + "memories/")
        memory_url = re.findall(rf'href="({base}memories/[0-9a-f-]{{36}}/)"', listing.text)[0]
        page2 = next_link(listing.text)
        second, _ = timed(client, base + "memories/" + page2)
        page3 = base + "memories/" + next_link(second.text)
        queries = [
            " ".join(rng.sample(words[50:2000], rng.randint(2, 3))) for _ in range(args.requests)
        ]
        urls: dict[str, list[str]] = {
            "browser": [base + "memories/"],
            "browser-filter": [base + "memories/?kind=fact&status=all&sort=importance"],
            "browser-page-3": [page3],
            "search": [base + "memories/?q=" + q.replace(" ", "+") for q in queries],
            "review": [base + "review/"],
            "memory": [memory_url],
            "dashboard": [base],
            "projects": ["/"],
        }
        for page in PAGES:  # warm-up: both workers, every page
            for _ in range(2):
                timed(client, urls[page][0])
        results: dict[str, list[float]] = {}
        load_avg = Path("/proc/loadavg").read_text().split()[0]
        for page in PAGES:
            times = []
            for n in range(args.requests):
                variants = urls[page]
                _, elapsed = timed(client, variants[n % len(variants)])
                times.append(elapsed * 1000)
            results[page] = times
        load_end = Path("/proc/loadavg").read_text().split()[0]
        client.close()
        facts = stack.facts

    print(f"\nDashboard pages at {args.memories:,} memories — {h.facts_line(facts)}")
    print(f"load average {load_avg} at the start of the timed runs, {load_end} at the end\n")
    print("| page | requests | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for page in PAGES:
        times = results[page]
        print(
            f"| {page} | {len(times)} | {h.ms(h.percentile(times, 0.5))} | "
            f"{h.ms(h.percentile(times, 0.95))} | {h.ms(max(times))} |"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "memories": args.memories,
                    "facts": facts,
                    "load_s": load_s,
                    "pages": results,
                    "loadavg": [load_avg, load_end],
                },
                indent=1,
            )
            + "\n"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40, help="timed requests per page")
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers to FILE")
    return h.run_bench("bench/pages.py", run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
