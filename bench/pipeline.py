"""Benchmark of the long-term memory pipeline: stage 1 (per session) and stage 2 (per project)
through real Celery workers, on PostgreSQL and Redis.

    bench/pg.sh                                  # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/pipeline.py [--quick] [--json FILE]

What it does: creates a fresh database memoryhub_bench_<random> on BENCH_DATABASE_URL (or
DATABASE_URL), migrates it, and starts a throwaway `redis-server --save ''` on a free loopback
port (when redis-server is not installed it falls back to kombu's filesystem broker and says
so). Then, for each provider (offline: LLM_PROVIDER unset; fake: an OpenAI-compatible server
in this process answering every request after a fixed latency, 300 ms by default) and each
worker count (1 and 8 prefork processes of `celery -A memoryhub worker`, on a queue of their
own), it:

1. starts `gunicorn memoryhub.wsgi --workers 2` whose tasks go to that queue, and a new project;
2. pushes N sessions through the HTTP API (create, append the records, POST …/end/) whose
   transcripts cycle through tests/pipeline/corpus/*.jsonl with new external ids. Ended
   sessions are due at once (the 12 h idle rule does not apply to them);
3. starts the workers, POSTs …/bank/enqueue/ as the project's owner (the same scan as Celery
   beat's) and polls the database until every stage-1 job is done or failed: the stage-1 wall
   time is from the POST to the last stage-1 job's finished_at;
4. waits until the broker queue is empty and no job runs, and notes whether the consolidation
   job was left dirty with nothing queued to run it (it would then wait for beat's next scan);
5. POSTs …/bank/enqueue/ again and times one consolidation over all of the project's stage-1
   outputs: that is the stage-2 time.

While stage 1 runs it samples pg_stat_activity of its database (busy backends, wait events,
which statements wait on locks) and the CPU time of the workers, of their PostgreSQL
backends, of gunicorn, of this process and of the whole machine (the rest is "others": other
programs competing for the CPUs). It also prints the offline extractor's precision and recall
on the dev corpus (bench/extractor_quality.py).

The database, Redis, gunicorn, the workers and the temp dirs are removed at the end, also on
failure, Ctrl-C or SIGTERM. Inherited LLM_*, CELERY_*, REDIS_*, DATABASE_* and DEBUG variables
are dropped (bench/_harness.py) so that a developer's shell cannot change what is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import _harness as h
import extractor_quality as eq
import psycopg
import redis

sys.path.insert(0, str(h.REPO))  # tests/ is not an installed package
from tests.fake_llm import FakeLlm, _chat_completion, _Script, _send  # noqa: E402

SCRIPT = "bench/pipeline.py"
CORPUS = h.REPO / "tests" / "pipeline" / "corpus"
POLL_S = 0.25
STAGE1_TIMEOUT_S = 600
SETTLE_TIMEOUT_S = 180
STAGE2_TIMEOUT_S = 300
WORKER_READY_TIMEOUT_S = 90
# Above this share of the machine's CPU time used by other programs, a row gets a warning.
CONTENDED_SHARE = 0.10
TICKS = os.sysconf("SC_CLK_TCK")
# memoryhub.pipeline.conf's stage1_max_sessions_per_scan: one scan (beat's, every
# PIPELINE_SCAN_SECONDS = 60 s, or an enqueue) dispatches at most this many stage-1 jobs per
# project. Measured projects with more sessions get it raised, so that the workers, not the
# scan, set the pace.
DEFAULT_SESSIONS_PER_SCAN = 64


# --- The fake LLM --------------------------------------------------------------------------


def _json_strings(pattern: str, text: str) -> list[str]:
    """The decoded JSON string literals captured by `pattern` (group 1) in `text`."""
    out = []
    for match in re.finditer(pattern, text):
        with contextlib.suppress(json.JSONDecodeError):
            out.append(str(json.loads(f'"{match.group(1)}"')))
    return out


_STRING = r'"((?:[^"\\]|\\.)*)"'
_TYPED_USER_ITEM = r'\{"index": (?:\d+), "role": "user", "content": ' + _STRING
_TYPED_USER_INDEX = r'\{"index": (\d+), "role": "user"'
_ROLLOUT_USER_ITEM = r'\{"role": "user", "content": ' + _STRING
_WORD = re.compile(r"\w{4,}")


def _one_line(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _keywords(text: str) -> list[str]:
    seen: dict[str, str] = {}
    for word in _WORD.findall(text):
        seen.setdefault(word.casefold(), word[:40])
    return list(seen.values())[:10] or ["session"]


def typed_reply(user: str) -> dict[str, Any]:
    """Up to three memories, one per user message: what a model would keep is not the point,
    only that the answer is valid, sized like a real one, and deterministic per transcript (so
    a transcript seen again merges into the memories it made before, as with the offline
    extractor)."""
    texts = _json_strings(_TYPED_USER_ITEM, user)
    indexes = [int(i) for i in re.findall(_TYPED_USER_INDEX, user)]
    kinds = [("project", "decisions"), ("fact", ""), ("lesson", "")]
    memories = []
    for (kind, subcategory), text, index in zip(kinds, texts, indexes, strict=False):
        content = _one_line(text, 300)
        if len(content) < 20:
            continue
        memory: dict[str, Any] = {
            "kind": kind,
            "content": content,
            "title": content[:60],
            "keywords": _keywords(content),
            "importance": 2,
            "record_start": index,
            "record_end": index,
        }
        if subcategory:
            memory["subcategory"] = subcategory
        memories.append(memory)
    return {"memories": memories}


def stage1_output_reply(user: str) -> dict[str, Any]:
    thread = re.search(r"^thread_id: (.*)$", user, re.MULTILINE)
    thread_id = thread.group(1).strip() if thread else "session"
    texts = [_one_line(t, 200) for t in _json_strings(_ROLLOUT_USER_ITEM, user)]
    bullets = "\n".join(f"- {t}" for t in texts[:8]) or "- none"
    first = texts[0][:80] if texts else "a coding session"
    return {
        "rollout_summary": _one_line(" ".join(texts), 900) or f"Session {thread_id}.",
        "rollout_slug": re.sub(r"[^a-z0-9_]+", "_", thread_id.lower())[:64],
        "raw_memory": (
            f"# {first}\nMemory context: {thread_id}\nUser preferences: none observed\n"
            f"## Task: {first}\nOutcome: success\nKey steps:\n{bullets}\n"
            f"Things that did not work / things that can be improved:\n- none\n"
            f"Reusable knowledge:\n{bullets}\nPointers and references:\n- none\n"
        ),
    }


def stage2_reply(user: str) -> dict[str, Any]:
    bullets = list(dict.fromkeys(re.findall(r"^- (.+)$", user, re.MULTILINE)))
    sessions = re.findall(r"^## (\S+)$", user, re.MULTILINE)
    body = "\n".join(f"- {b}" for b in bullets[:150])
    return {
        "memory_md": f"# Project memory\n\nFrom {len(sessions)} sessions.\n\n{body}\n",
        "memory_summary": "Most important:\n" + "\n".join(f"- {b}" for b in bullets[:5]) + "\n",
        "skills": [],
    }


def purpose_of(messages: Sequence[Any]) -> str:
    """Which of the pipeline's three prompts this is, from its system message."""
    system = next(
        (
            str(m.get("content", ""))
            for m in messages
            if isinstance(m, dict) and m["role"] == "system"
        ),
        "",
    )
    if '{"memories": [...]}' in system:
        return "stage1_memories"
    if "rollout_summary" in system:
        return "stage1_output"
    if "memory_md" in system:
        return "stage2"
    return "unknown"


REPLIES = {
    "stage1_memories": typed_reply,
    "stage1_output": stage1_output_reply,
    "stage2": stage2_reply,
}


class PipelineFakeLlm(FakeLlm):
    """tests.fake_llm's server, answering every chat completion after `latency_s` with a valid
    JSON answer for the prompt's purpose instead of taking scripted replies."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.counts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        super().__init__()

    def reset_stats(self) -> None:
        with self._lock:
            self.counts.clear()
            self.max_in_flight = 0

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length) or b"null")
        except json.JSONDecodeError:
            body = None
        messages = body.get("messages") if isinstance(body, dict) else None
        path = handler.path.split("?")[0]
        if path != "/v1/chat/completions" or not isinstance(messages, list) or not messages:
            _send(handler, 400, json.dumps({"error": {"message": "bench fake: bad request"}}))
            return
        purpose = purpose_of(messages)
        user = str(messages[1].get("content", "")) if len(messages) > 1 else ""
        with self._lock:
            self.counts[purpose] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self._stopping.wait(self.latency_s):
                return  # shutting down
            if purpose not in REPLIES:
                error = {"error": {"message": f"bench fake: unknown prompt ({purpose})"}}
                _send(handler, 500, json.dumps(error), headers={"x-should-retry": "false"})
                return
            text = json.dumps(REPLIES[purpose](user), ensure_ascii=False)
            prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
            script = _Script(text=text, tokens_in=prompt_chars // 4, tokens_out=len(text) // 4)
            _send(handler, 200, json.dumps(_chat_completion(str(body["model"]), script)))
        finally:
            with self._lock:
                self.in_flight -= 1


# --- Broker, workers, CPU ------------------------------------------------------------------


@dataclass
class Broker:
    kind: str  # "redis" | "filesystem"
    env: dict[str, str]  # what the app needs to use it
    version: str
    client: redis.Redis | None = None
    folder: Path | None = None
    pid: int | None = None  # redis-server's, for its CPU time

    def depth(self, queue: str) -> int:
        """Messages waiting in `queue` (not those a worker has reserved)."""
        if self.client is not None:
            return int(self.client.llen(queue))
        assert self.folder is not None
        return sum(1 for p in self.folder.glob(f"*.{queue}.msg"))


@contextlib.contextmanager
def start_broker(tmp: Path, var_dir: Path) -> Iterator[Broker]:
    binary = shutil.which("redis-server")
    if binary is None:
        h.log("redis-server not found: falling back to kombu's filesystem broker")
        yield Broker("filesystem", {}, "none (filesystem broker)", folder=var_dir / "broker/queue")
        return
    port = h.free_port()
    log_path = tmp / "redis.log"
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(tmp)]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(  # noqa: S603 — fixed argv, no shell
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = log_path.read_text()
                    raise h.BenchError(f"redis-server did not start:\n{log}") from None
                time.sleep(0.1)
        version = str(client.info("server")["redis_version"])
        h.log(f"started redis-server {version} on 127.0.0.1:{port}")
        url = f"redis://127.0.0.1:{port}/0"
        yield Broker("redis", {"REDIS_URL": url}, f"Redis {version}", client=client, pid=proc.pid)
    finally:
        client.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Workers:
    """`celery -A memoryhub worker --concurrency=N` (prefork) on one queue, in its own process
    group so that stopping it ends the pool too."""

    def __init__(self, env: dict[str, str], queue: str, concurrency: int, log_path: Path) -> None:
        self.env = env
        self.queue = queue
        self.concurrency = concurrency
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryhub",
            "worker",
            "-Q",
            self.queue,
            f"--concurrency={self.concurrency}",
            "--pool=prefork",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            f"--hostname={self.queue}@%h",
            "--loglevel=INFO",
        ]
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(  # noqa: S603 — fixed argv, no shell
                command,
                cwd=h.REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise h.BenchError(f"the worker exited {self.proc.returncode}:\n{self.log_tail()}")
            ready = " ready." in self.log_path.read_text(errors="replace")
            if ready and len(self.pids()) > self.concurrency:  # the pool is up too
                return
            time.sleep(0.2)
        raise h.BenchError(f"the worker was not ready in time:\n{self.log_tail()}")

    def pids(self) -> list[int]:
        return [self.proc.pid, *h.child_pids(self.proc.pid)] if self.proc else []

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def errors(self) -> list[str]:
        """Lines of the worker log that report an error or a traceback."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)  # warm shutdown
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


def system_busy_s() -> float:
    """CPU seconds the whole machine spent busy (not idle, not waiting for I/O) since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / TICKS


def pg_server_cpu_s(postmaster: int) -> float:
    """CPU seconds of the whole PostgreSQL server: the postmaster, its live children and the
    children it has reaped (cutime/cstime). Backends live for one Celery task only (Celery's
    Django fixup closes the connection around every task), so sampling live backends would
    miss most of it. This includes other databases on the same server."""
    raw = Path(f"/proc/{postmaster}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    own = sum(int(x) for x in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
    return own + sum(h.cpu_seconds(h.child_pids(postmaster)).values())


def pg_sessions(conn: psycopg.Connection[Any]) -> int:
    """Connections ever opened to the benchmark database (pg_stat_database, PostgreSQL ≥ 14)."""
    row = conn.execute(
        "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


class Sampler:
    """Samples the benchmark database's backends: states, wait events, lock waiters."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.samples = 0
        self.busy = 0  # backends active or idle in transaction, summed over samples
        self.lock_waiters = 0  # backends waiting on a heavyweight lock, summed over samples
        self.waits: Counter[str] = Counter()  # "active" backends by wait event
        self.lock_queries: Counter[str] = Counter()
        self.states: Counter[str] = Counter()

    def sample(self) -> None:
        rows = self.conn.execute(
            "SELECT state, wait_event_type, wait_event, left(query, 200) "
            "FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchall()
        self.samples += 1
        for state, wait_type, wait_event, query in rows:
            self.states[state or "?"] += 1
            if state in ("active", "idle in transaction"):
                self.busy += 1
            if state == "active":
                self.waits[f"{wait_type}:{wait_event}" if wait_type else "running"] += 1
                if wait_type == "Lock":
                    self.lock_waiters += 1
                    self.lock_queries[" ".join(str(query).split())[:110]] += 1


# --- One configuration ---------------------------------------------------------------------


@dataclass
class RunResult:
    provider: str
    workers: int
    sessions: int
    stage1_jobs: int = 0
    stage1_wall_s: float | None = None
    sessions_per_min: float | None = None
    end_to_end_s: float | None = None  # enqueue → consolidation settled without a new scan
    left_for_beat: bool = False  # consolidation dirty with nothing queued after stage 1
    consolidations_during_stage1: int = 0
    stage2_s: float | None = None  # enqueue → consolidation done
    stage2_run_s: float | None = None  # the consolidation job's own started → finished
    stage2_inputs: int | None = None
    memories: int = 0
    memories_by_status: dict[str, int] = field(default_factory=dict)
    merged: int = 0
    artifacts: int = 0
    failures: int = 0
    failure_errors: list[str] = field(default_factory=list)
    worker_log_errors: list[str] = field(default_factory=list)
    llm_calls: dict[str, int] = field(default_factory=dict)  # purpose/outcome → count
    fake_llm_requests: dict[str, int] = field(default_factory=dict)
    fake_llm_max_in_flight: int = 0
    cpu_capacity_s: float = 0.0  # stage-1 wall × nproc
    cpu_workers_s: float = 0.0
    cpu_postgres_s: float = 0.0
    cpu_gunicorn_s: float = 0.0
    cpu_bench_s: float = 0.0  # this process: the fake LLM and the polling
    cpu_others_s: float = 0.0
    mean_busy_backends: float = 0.0
    mean_lock_waiters: float = 0.0
    wait_events: dict[str, float] = field(default_factory=dict)  # share of active samples
    lock_wait_statements: dict[str, int] = field(default_factory=dict)
    backend_states: dict[str, int] = field(default_factory=dict)
    machine_busy_before: float | None = None  # share, with --wait-idle
    stage1_job_p50_s: float | None = None  # a stage-1 job's own started → finished
    stage1_job_p95_s: float | None = None
    pg_connections_stage1: int = 0  # connections opened to the database during stage 1


@dataclass
class Context:
    tmp: Path
    db: h.Database
    conn: psycopg.Connection[Any]
    env: dict[str, str]
    token: str
    broker: Broker
    corpus: list[tuple[str, list[dict[str, Any]]]]
    fake: PipelineFakeLlm | None
    nproc: int
    postmaster: int


def load_transcripts() -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        raw = path.read_text(encoding="utf-8")
        rows = [json.loads(eq.fill_secrets(line)) for line in raw.splitlines() if line]
        out.append((path.stem, rows))
    if not out:
        raise h.BenchError(f"no transcripts in {CORPUS}")
    return out


def push_sessions(api: h.Api, slug: str, corpus: Sequence[tuple[str, list[Any]]], n: int) -> int:
    """Create, fill and end `n` sessions over HTTP; returns the number of records sent."""
    sent = 0
    for i in range(n):
        name, rows = corpus[i % len(corpus)]
        base = f"projects/{slug}/sessions/"
        body = {"external_id": f"{slug}-{i:03d}-{name}", "title": name}
        created, _ = api.call("POST", base, 201, json=body)
        ref = created.json()["id"]
        api.call("POST", f"{base}{ref}/records/", 201, json={"records": rows})
        api.call("POST", f"{base}{ref}/end/", 200)
        sent += len(rows)
    return sent


def _row(conn: psycopg.Connection[Any], query: str, *params: Any) -> tuple[Any, ...]:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return tuple(row)


def stage1_state(conn: psycopg.Connection[Any], project_id: int) -> tuple[int, int, float | None]:
    """(stage-1 jobs, those pending or running, epoch of the last finished_at)."""
    total, open_, last = _row(
        conn,
        "SELECT count(*), count(*) FILTER (WHERE status IN ('pending', 'running')), "
        "extract(epoch FROM max(finished_at)) FROM pipeline_job "
        "WHERE project_id = %s AND kind = 'stage1'",
        project_id,
    )
    return int(total), int(open_), float(last) if last is not None else None


def stage2_state(conn: psycopg.Connection[Any], project_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT status, input_watermark, success_watermark, extract(epoch FROM started_at), "
        "extract(epoch FROM finished_at), detail, last_error FROM pipeline_job "
        "WHERE project_id = %s AND kind = 'stage2'",
        (project_id,),
    ).fetchone()
    if row is None:
        return None
    keys = ("status", "input", "success", "started", "finished", "detail", "error")
    state = dict(zip(keys, row, strict=True))
    for key in ("started", "finished"):
        state[key] = float(state[key]) if state[key] is not None else None
    return state


def wait_until(
    what: str,
    timeout_s: float,
    predicate: Callable[[], bool],
    on_poll: Callable[[], None] | None = None,
) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if on_poll is not None:
            on_poll()
        if time.monotonic() > deadline:
            raise h.BenchError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(POLL_S)


def settle(ctx: Context, project_id: int, queue: str) -> None:
    """Until the queue is empty, no job of the project runs, and nothing changed for 2 s (so
    that messages a worker had reserved have started and finished too)."""
    last: list[Any] = [None, time.monotonic()]

    def quiet() -> bool:
        running = _row(
            ctx.conn,
            "SELECT count(*) FROM pipeline_job WHERE project_id = %s AND status = 'running'",
            project_id,
        )[0]
        key = (stage2_state(ctx.conn, project_id), running, ctx.broker.depth(queue))
        if key != last[0]:
            last[0], last[1] = key, time.monotonic()
            return False
        return running == 0 and key[2] == 0 and time.monotonic() - last[1] >= 2

    wait_until("the queue to drain", SETTLE_TIMEOUT_S, quiet)


def wait_for_quiet_machine(max_wait_s: float, threshold: float = 0.15) -> float:
    """Wait (up to max_wait_s) until the machine was less than `threshold` busy over 5 s;
    returns the last share measured."""
    deadline = time.monotonic() + max_wait_s
    while True:
        before, t = system_busy_s(), time.monotonic()
        time.sleep(5)
        share = (system_busy_s() - before) / ((time.monotonic() - t) * len(os.sched_getaffinity(0)))
        if share < threshold or time.monotonic() > deadline:
            return share
        h.log(f"the machine is {100 * share:.0f} % busy with other work; waiting")


def run_stage1(
    ctx: Context, api: h.Api, slug: str, project_id: int, expected: int, sampler: Sampler | None
) -> tuple[float, float]:
    """Enqueue through the API and wait until every stage-1 job is done or failed; returns
    (epoch of the POST, epoch of the last stage-1 finished_at)."""
    t0 = time.time()
    enqueued, _ = api.call("POST", f"projects/{slug}/bank/enqueue/", 202)
    if int(enqueued.json()["stage1"]) != expected:
        raise h.BenchError(
            f"the scan found {enqueued.json()['stage1']} due sessions, not {expected}"
        )
    wait_until(
        "stage 1",
        STAGE1_TIMEOUT_S,
        lambda: stage1_state(ctx.conn, project_id)[1] == 0,
        on_poll=sampler.sample if sampler else None,
    )
    last_finished = stage1_state(ctx.conn, project_id)[2]
    assert last_finished is not None
    return t0, last_finished


def new_project(ctx: Context, api: h.Api, slug: str, sessions: int) -> int:
    """A project whose one scan dispatches all `sessions` (default knobs otherwise)."""
    body: dict[str, Any] = {"slug": slug, "name": slug}
    if sessions > DEFAULT_SESSIONS_PER_SCAN:
        body["settings"] = {"pipeline": {"stage1_max_sessions_per_scan": sessions}}
    api.call("POST", "projects/", 201, json=body)
    (project_id,) = _row(ctx.conn, "SELECT id FROM projects_project WHERE slug = %s", slug)
    return int(project_id)


def bench_config(
    ctx: Context, provider: str, workers: int, n_sessions: int, wait_idle_s: float
) -> RunResult:
    result = RunResult(provider=provider, workers=workers, sessions=n_sessions)
    tag = f"{provider}-{workers}-{uuid.uuid4().hex[:6]}"
    slug = f"pipe-{tag}"
    queue = f"bench-{tag}"
    env = ctx.env | ctx.broker.env | {"CELERY_TASK_DEFAULT_QUEUE": queue}
    worker_env = dict(env)
    if provider == "fake":
        assert ctx.fake is not None
        worker_env |= {
            "LLM_PROVIDER": "openai",
            "LLM_BASE_URL": ctx.fake.url,
            "LLM_MODEL": "fake",
            "LLM_API_KEY": "x",
        }
    else:
        worker_env.pop("LLM_PROVIDER", None)  # unset: the default, offline
    with contextlib.ExitStack() as stack:
        server = h.Server(env, ctx.tmp / f"gunicorn-{tag}.log")
        stack.callback(server.stop)
        server.start()
        api = h.Api(server.base_url, ctx.token)
        stack.callback(api.close)
        project_id = new_project(ctx, api, slug, n_sessions)
        started = time.monotonic()
        records = push_sessions(api, slug, ctx.corpus, n_sessions)
        h.log(
            f"[{provider} × {workers}] {n_sessions} sessions ({records} records) pushed and "
            f"ended in {time.monotonic() - started:.1f} s; starting the workers"
        )
        pool = Workers(worker_env, queue, workers, ctx.tmp / f"worker-{tag}.log")
        stack.callback(pool.stop)
        pool.start()

        # Warm-up on a project of its own: every pool process connects to the database (and
        # to the LLM) once before anything is timed.
        warm_slug = f"warm-{tag}"
        warm_id = new_project(ctx, api, warm_slug, 2 * workers)
        push_sessions(api, warm_slug, ctx.corpus[::-1], 2 * workers)
        run_stage1(ctx, api, warm_slug, warm_id, 2 * workers, None)
        settle(ctx, warm_id, queue)
        if ctx.fake is not None:
            ctx.fake.reset_stats()
        if wait_idle_s > 0:
            result.machine_busy_before = wait_for_quiet_machine(wait_idle_s)

        # Stage 1: the scan, then every job to done or failed.
        worker_pids = pool.pids()
        ours_pids = [server.proc.pid, *server.worker_pids()] if server.proc else []
        if ctx.broker.pid is not None:
            ours_pids.append(ctx.broker.pid)  # counted with gunicorn: the request side
        sampler = Sampler(ctx.conn)
        cpu_before = h.cpu_seconds([*worker_pids, *ours_pids, os.getpid()])
        busy_before, pg_before = system_busy_s(), pg_server_cpu_s(ctx.postmaster)
        sessions_before = pg_sessions(ctx.conn)
        t0, last_finished = run_stage1(ctx, api, slug, project_id, n_sessions, sampler)
        busy_after, pg_after = system_busy_s(), pg_server_cpu_s(ctx.postmaster)
        cpu_after = h.cpu_seconds([*worker_pids, *ours_pids, os.getpid()])
        result.pg_connections_stage1 = pg_sessions(ctx.conn) - sessions_before
        window = time.time() - t0  # of the CPU figures: until the poll that saw stage 1 done
        result.stage1_jobs = n_sessions
        result.stage1_wall_s = last_finished - t0
        result.sessions_per_min = n_sessions / result.stage1_wall_s * 60
        result.consolidations_during_stage1 = int(
            _row(
                ctx.conn,
                "SELECT count(*) FROM llm_llmcall WHERE project_id = %s "
                "AND purpose = 'stage2' AND created_at <= to_timestamp(%s)",
                project_id,
                last_finished,
            )[0]
        )

        def spent(pids: Sequence[int]) -> float:
            return sum(cpu_after.get(p, 0.0) - cpu_before.get(p, 0.0) for p in pids)

        result.cpu_capacity_s = window * ctx.nproc
        result.cpu_workers_s = spent(worker_pids)
        result.cpu_gunicorn_s = spent(ours_pids)
        result.cpu_bench_s = spent([os.getpid()])
        result.cpu_postgres_s = pg_after - pg_before
        ours = (
            result.cpu_workers_s
            + result.cpu_gunicorn_s
            + result.cpu_bench_s
            + result.cpu_postgres_s
        )
        result.cpu_others_s = max(0.0, (busy_after - busy_before) - ours)
        samples = max(sampler.samples, 1)
        result.mean_busy_backends = sampler.busy / samples
        result.mean_lock_waiters = sampler.lock_waiters / samples
        active = sum(sampler.waits.values()) or 1
        result.wait_events = {k: v / active for k, v in sampler.waits.most_common(6)}
        result.lock_wait_statements = dict(sampler.lock_queries.most_common(4))
        result.backend_states = dict(sampler.states)

        # After stage 1: did the consolidation that the last stage-1 jobs asked for run?
        settle(ctx, project_id, queue)
        state = stage2_state(ctx.conn, project_id)
        assert state is not None
        result.left_for_beat = state["input"] > state["success"] and state["status"] != "failed"
        if not result.left_for_beat and state["finished"] is not None:
            result.end_to_end_s = state["finished"] - t0

        # Stage 2 on its own: one consolidation over all stage-1 outputs.
        t2 = time.time()
        enqueued, _ = api.call("POST", f"projects/{slug}/bank/enqueue/", 202)
        if enqueued.json()["stage2"] != 1:
            raise h.BenchError(f"the second enqueue sent no consolidation: {enqueued.text}")

        def consolidated() -> bool:
            s = stage2_state(ctx.conn, project_id)
            return bool(
                s
                and s["status"] in ("done", "error", "failed")
                and s["finished"] is not None
                and s["finished"] > t2
            )

        wait_until("stage 2", STAGE2_TIMEOUT_S, consolidated)
        state = stage2_state(ctx.conn, project_id)
        assert state is not None and state["finished"] is not None
        if state["status"] == "done":
            result.stage2_s = state["finished"] - t2
            if state["started"] is not None:
                result.stage2_run_s = state["finished"] - state["started"]
            result.stage2_inputs = (state["detail"] or {}).get("inputs")
        collect_outcome(ctx, result, project_id)
        result.worker_log_errors = pool.errors()[:10]
        if ctx.fake is not None and provider == "fake":
            result.fake_llm_requests = dict(ctx.fake.counts)
            result.fake_llm_max_in_flight = ctx.fake.max_in_flight
        settle(ctx, project_id, queue)  # so that stopping the workers interrupts nothing
    return result


def collect_outcome(ctx: Context, result: RunResult, project_id: int) -> None:
    conn = ctx.conn
    result.memories_by_status = {
        str(status): int(n)
        for status, n in conn.execute(
            "SELECT status, count(*) FROM memories_memory WHERE project_id = %s GROUP BY status",
            (project_id,),
        ).fetchall()
    }
    result.memories = sum(result.memories_by_status.values())
    durations = [
        float(d)
        for (d,) in conn.execute(
            "SELECT extract(epoch FROM finished_at - started_at) FROM pipeline_job "
            "WHERE project_id = %s AND kind = 'stage1' AND status = 'done'",
            (project_id,),
        ).fetchall()
    ]
    result.stage1_job_p50_s = h.percentile(durations, 0.5)
    result.stage1_job_p95_s = h.percentile(durations, 0.95)
    result.merged = int(
        _row(
            conn,
            "SELECT coalesce(sum((detail->>'merged')::int), 0) FROM pipeline_job "
            "WHERE project_id = %s AND kind = 'stage1'",
            project_id,
        )[0]
    )
    result.artifacts = int(
        _row(conn, "SELECT count(*) FROM memories_bankartifact WHERE project_id = %s", project_id)[
            0
        ]
    )
    failing = conn.execute(
        "SELECT kind, key, status, last_error FROM pipeline_job WHERE project_id = %s "
        "AND (status IN ('error', 'failed') OR retries_remaining < 3)",
        (project_id,),
    ).fetchall()
    result.failures = len(failing)
    result.failure_errors = [f"{k} {key} {s}: {str(e)[:300]}" for k, key, s, e in failing[:5]]
    result.llm_calls = {
        f"{purpose}/{outcome}": int(n)
        for purpose, outcome, n in conn.execute(
            "SELECT purpose, outcome, count(*) FROM llm_llmcall WHERE project_id = %s "
            "GROUP BY purpose, outcome ORDER BY purpose, outcome",
            (project_id,),
        ).fetchall()
    }


# --- Report --------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "–"


def render(
    facts: dict[str, Any], results: Sequence[RunResult], quality: eq.Report, args: Any
) -> str:
    commit = facts["commit"] + (" + uncommitted changes" if facts["uncommitted_changes"] else "")
    pg = facts["pg_settings"]
    out = [
        "## Pipeline throughput (bench/pipeline.py)",
        "",
        f"{facts['date']} · commit {commit} · nproc {facts['nproc']}, {facts['cpu']} · "
        f"{facts['postgresql']} (fsync {pg.get('fsync')}, synchronous_commit "
        f"{pg.get('synchronous_commit')}) · broker: {facts['broker']} · Celery prefork workers "
        f"on their own queue · gunicorn 2 sync workers · Python {facts['python']} · fake LLM "
        f"latency {args.llm_latency_ms} ms per reply" + (" · --quick" if args.quick else ""),
        "",
        "| provider | workers | sessions | stage-1 wall s | sessions/min | stage-2 s | memories "
        "| failures |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        out.append(
            f"| {r.provider} | {r.workers} | {r.sessions} | {_num(r.stage1_wall_s)} | "
            f"{_num(r.sessions_per_min)} | {_num(r.stage2_s, 2)} | {r.memories} | {r.failures} |"
        )
    out += [
        "",
        "Stage-1 wall: from POST …/bank/enqueue/ to the last stage-1 job's finished_at. Stage-2: "
        "a second enqueue after stage 1 settled, to the stage-2 job's finished_at (one "
        "run over every session's stage-1 output). Memories: rows in the project (active + "
        "stale…); failures: jobs in error/failed or that used a retry. Each configuration has "
        "fresh workers, warmed up on 2 × workers sessions of another project first. Projects "
        f"with more than {DEFAULT_SESSIONS_PER_SCAN} sessions get "
        "pipeline.stage1_max_sessions_per_scan "
        "raised to their session count so that one scan dispatches them all: with the default "
        f"({DEFAULT_SESSIONS_PER_SCAN} per scan, beat scanning every 60 s) a project's stage 1 "
        f"cannot exceed {DEFAULT_SESSIONS_PER_SCAN} sessions/min whatever the workers do.",
        "",
        "What the time went to during stage 1 (CPU seconds as a share of wall × nproc; Postgres: "
        "the whole server, reaped backends included; others: the rest of the machine; busy "
        "backends and lock waiters: mean per sample of pg_stat_activity every "
        f"{POLL_S} s; PG connections: opened to the database during stage 1):",
        "",
        "| provider | workers | workers CPU | Postgres CPU | gunicorn+Redis+bench CPU | "
        "others CPU | busy backends | lock waiters | PG connections | stage-1 job p50 / p95 s | "
        "consolidations during stage 1 | "
        "enqueue → stage 2 settled s | stage-2 run s | merged | LLM calls |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        cap = r.cpu_capacity_s
        settled = "left for beat" if r.left_for_beat else _num(r.end_to_end_s)
        calls = ", ".join(f"{k} {v}" for k, v in r.llm_calls.items())
        out.append(
            f"| {r.provider} | {r.workers} | {_pct(r.cpu_workers_s, cap)} | "
            f"{_pct(r.cpu_postgres_s, cap)} | {_pct(r.cpu_gunicorn_s + r.cpu_bench_s, cap)} | "
            f"{_pct(r.cpu_others_s, cap)} | {r.mean_busy_backends:.2f} | "
            f"{r.mean_lock_waiters:.2f} | {r.pg_connections_stage1} | "
            f"{_num(r.stage1_job_p50_s, 2)} / "
            f"{_num(r.stage1_job_p95_s, 2)} | {r.consolidations_during_stage1} | {settled} | "
            f"{_num(r.stage2_run_s, 2)} | {r.merged} | {calls} |"
        )
    out += ["", "Wait events of active backends during stage 1 (share of samples):", ""]
    for r in results:
        waits = ", ".join(f"{k} {100 * v:.0f} %" for k, v in r.wait_events.items()) or "–"
        out.append(f"- {r.provider} × {r.workers}: {waits}")
        for statement, n in r.lock_wait_statements.items():
            out.append(f"  - waiting on a lock ({n} samples): `{statement}`")
    notes = []
    for r in results:
        if r.cpu_capacity_s and r.cpu_others_s / r.cpu_capacity_s > CONTENDED_SHARE:
            notes.append(
                f"{r.provider} × {r.workers}: other programs used "
                f"{_pct(r.cpu_others_s, r.cpu_capacity_s)} of the CPUs during stage 1; "
                "its numbers are pessimistic."
            )
        if r.machine_busy_before is not None:
            notes.append(
                f"{r.provider} × {r.workers}: the machine was "
                f"{100 * r.machine_busy_before:.0f} % busy just before stage 1 (--wait-idle)."
            )
        if r.left_for_beat:
            notes.append(
                f"{r.provider} × {r.workers}: after stage 1 the consolidation job was still dirty "
                "with nothing queued (a stage-1 job finished while a consolidation ran, so "
                "after_stage1 sent none); without beat's next scan stage 2 would not run."
            )
        if r.fake_llm_requests:
            notes.append(
                f"{r.provider} × {r.workers}: fake LLM requests "
                f"{dict(sorted(r.fake_llm_requests.items()))}, at most {r.fake_llm_max_in_flight}"
                " in flight."
            )
        for error in r.failure_errors:
            notes.append(f"{r.provider} × {r.workers}: {error}")
        for line in r.worker_log_errors[:3]:
            notes.append(f"{r.provider} × {r.workers}: worker log: {line[:200]}")
    if notes:
        out += ["", "Notes:", "", *(f"- {n}" for n in notes)]
    o = quality.overall
    out += [
        "",
        "Offline extractor quality on the dev corpus (tests/pipeline/corpus, "
        "bench/extractor_quality.py):",
        "",
        "| scope | sessions | planted | predicted | true positives | precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| overall | {len(quality.sessions)} | {o.planted} | {o.predicted} | {o.tp} | "
        f"{100 * o.precision:.1f} % | {100 * o.recall:.1f} % |",
    ]
    for split, t in sorted(quality.by_split.items()):
        n = sum(1 for s in quality.sessions if s.split == split)
        out.append(
            f"| split: {split} | {n} | {t.planted} | {t.predicted} | {t.tp} | "
            f"{100 * t.precision:.1f} % | {100 * t.recall:.1f} % |"
        )
    return "\n".join(out)


def quality_json(report: eq.Report) -> dict[str, Any]:
    o = report.overall
    return {
        "sessions": len(report.sessions),
        "precision": o.precision,
        "recall": o.recall,
        "planted": o.planted,
        "predicted": o.predicted,
        "true_positives": o.tp,
        "by_split": {
            k: {"precision": t.precision, "recall": t.recall} for k, t in report.by_split.items()
        },
    }


# --- Main ----------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few sessions: a smoke run")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--providers", default="offline,fake", help="offline,fake")
    parser.add_argument("--workers", type=_ints, default=[1, 8], help="worker counts, e.g. 1,8")
    parser.add_argument("--sessions-offline", type=int, help="sessions per offline run (120)")
    parser.add_argument("--sessions-fake", type=int, help="sessions per fake-LLM run (48)")
    parser.add_argument("--llm-latency-ms", type=int, default=300, help="fake LLM latency")
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0,
        metavar="SECONDS",
        help="before each configuration, wait up to this long for the machine to be < 15 %% busy",
    )
    args = parser.parse_args(argv)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    if set(providers) - {"offline", "fake"}:
        parser.error("--providers takes offline and/or fake")
    sessions = {
        "offline": args.sessions_offline or (8 if args.quick else 120),
        "fake": args.sessions_fake or (6 if args.quick else 48),
    }
    admin_url = h.admin_url_or_help(SCRIPT)
    if not admin_url:
        return 2
    signal.signal(signal.SIGTERM, h.raise_on_sigterm)

    quality = eq.score(eq.load_corpus())
    corpus = load_transcripts()
    results: list[RunResult] = []
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryhub-pipe-")))
        broker = stack.enter_context(start_broker(tmp, tmp / "var"))
        db = h.Database(admin_url)
        h.log(f"creating database {db.name} and migrating it")
        db.create()
        stack.callback(db.drop)
        env = h.server_env(db.url, tmp / "var") | broker.env
        h.run_manage(env, "migrate", "--noinput", "--verbosity", "0")
        h.run_manage(env, "project_create", "bench-pipeline", "--owner", h.OWNER)
        token = h.run_manage(env, "token_create", "--user", h.OWNER).strip()
        facts = h.machine_facts(db.facts(), 2) | {"broker": broker.version}
        conn = stack.enter_context(psycopg.connect(db.url, autocommit=True))
        fake = None
        if "fake" in providers:
            fake = PipelineFakeLlm(args.llm_latency_ms / 1000)
            stack.callback(fake.stop)
        (backend,) = _row(conn, "SELECT pg_backend_pid()")
        postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
        ctx = Context(tmp, db, conn, env, token, broker, corpus, fake, facts["nproc"], postmaster)
        for provider in providers:
            for workers in args.workers:
                h.log(
                    f"--- {provider}, {workers} worker process(es), {sessions[provider]} sessions"
                )
                result = bench_config(ctx, provider, workers, sessions[provider], args.wait_idle)
                h.log(
                    f"stage 1 {_num(result.stage1_wall_s)} s "
                    f"({_num(result.sessions_per_min)} sessions/min), stage 2 "
                    f"{_num(result.stage2_s, 2)} s, {result.memories} memories, "
                    f"{result.failures} failures"
                )
                results.append(result)
        h.log("done; stopping everything and dropping the database")
    report = render(facts, results, quality, args)
    print(report)
    if args.json:
        data = {
            "facts": facts,
            "args": {"quick": args.quick, "llm_latency_ms": args.llm_latency_ms},
            "results": [asdict(r) for r in results],
            "extractor_quality": quality_json(quality),
        }
        args.json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
