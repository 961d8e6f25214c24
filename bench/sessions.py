"""Benchmark of the sessions API on PostgreSQL, through real HTTP.

    bench/pg.sh                                       # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/sessions.py [--quick] [--import-only] [--json FILE]

What it does: creates a fresh database memoryhub_bench_<random> on the server named by
BENCH_DATABASE_URL (or DATABASE_URL), migrates it, starts `gunicorn memoryhub.wsgi --workers 2`
on a free loopback port and one Celery worker, and measures append (1 and 100 records per
request), resume of a 10,000-record session with compact boundaries, and the imports of a 50 MB
and of a max-size (255 MB, the limit being 256) Claude Code transcript: both above
SESSION_IMPORT_SYNC_MAX_BYTES, so each is an upload (202) and a job on the worker, polled until
it succeeds; the time is upload to success. It prints a Markdown table; the database, the
server, the worker and the temp dirs are removed at the end, also on failure or Ctrl-C.

The server runs with production defaults (DEBUG off, sync workers, DATABASE_CONN_MAX_AGE 60);
inherited LLM_*, SESSION_*, API_*, broker and DEBUG variables are dropped so that a developer's
shell cannot change what is measured, and compaction uses the offline summariser.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _harness
import psycopg
from _harness import (  # shared with the other benchmarks
    GUNICORN_TIMEOUT_S,
    OWNER,
    WORKERS,
    Api,
    BenchError,
    MiB,
    Server,
    _scalar,
    cpu_seconds,
    git,
    log,
    ms,
    percentile,
    reset_peak_rss,
    run_manage,
    status_kib,
)

PROJECT = "bench"
# The import of a large transcript is one long request; gunicorn's default (30 s, which
# `make run` and the Docker image use) would kill the worker mid-import. The harness raises it
# (GUNICORN_TIMEOUT_S) so the number exists; requests that the default would kill are flagged.
DEFAULT_GUNICORN_TIMEOUT_S = 30
CONTEXT_WINDOW = 200_000
# Above this share of the CPUs busy with other processes, a phase's numbers get a warning.
CONTENDED_SHARE = 0.10

# --- Scale -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    single_appends: int = 500
    batch_appends: int = 100
    batch_size: int = 100
    resume_records: int = 10_000
    build_batch: int = 250  # records per append while building the resume session
    compactions: int = 3
    resume_calls: int = 30
    import_bytes: int = 50 * MiB
    # A max-size import (SESSION_IMPORT_MAX_BYTES, 256 MiB) less one turn's headroom: the
    # generator stops after the turn that crosses its target.
    max_import_bytes: int = 255 * MiB

    def quick(self) -> Scale:
        """10× smaller: checks the script, measures nothing worth quoting."""
        return Scale(
            single_appends=self.single_appends // 10,
            batch_appends=self.batch_appends // 10,
            batch_size=self.batch_size,
            resume_records=self.resume_records // 10,
            build_batch=self.build_batch,
            compactions=self.compactions,  # still ≥ 3 boundaries: that code path is the point
            resume_calls=max(3, self.resume_calls // 10),
            import_bytes=self.import_bytes // 10,
            max_import_bytes=self.max_import_bytes // 10,
        )


# --- Synthetic transcripts ---------------------------------------------------------------------

_WORD_LIST = (
    "stock item expiry prune batch order invoice warehouse shelf supplier report cache queue "
    "retry index ledger audit quota sync export parcel route carrier label manifest"
)
_WORDS = tuple(_WORD_LIST.split())
_CODE_TEMPLATES = (
    "from {a}.models import {A}{B}",
    "class {A}{B}(models.Model):",
    "    {a}_{b} = models.CharField(max_length={n}, blank=True)",
    "    {a}_count = models.PositiveIntegerField(default={n})",
    "def {a}_{b}(queryset, *, dry_run: bool = False) -> int:",
    "    count = queryset.filter({a}__lt={n}).count()",
    "    if dry_run:",
    "        return count",
    "    return {A}{B}.objects.filter(pk__in=ids).update({b}={n})",
    '    """Return the {a} rows whose {b} has passed."""',
    "tests/test_{a}.py::test_{b}_{n} PASSED                                   [ {p}%]",
    "FAILED tests/test_{a}.py::test_{b} - AssertionError: assert {n} == {p}",
    '  File "/home/dev/src/{a}-api/{b}/services.py", line {n}, in {a}_{b}',
    "2026-02-18 09:12:{p:02d},402 INFO {a}.tasks processed {n} {b} rows in 0.0{p}s",
    "diff --git a/{a}/{b}.py b/{a}/{b}.py",
    '+        parser.add_argument("--{a}-{b}", action="store_true")',
    "-        {A}.objects.{b}().delete()",
    "drwxr-xr-x  5 dev dev  {n} Feb 18 09:10 {a}_{b}",
    "{a}/{b}.py:{n}:{p}: E501 line too long ({n} > 100 characters)",
    "    assert response.status_code == 200, response.content  # {a} {b}",
    "",
)
_USER_PROMPTS = (
    "Add a --dry-run flag to `manage.py prune_{a}` that lists what would be deleted.",
    "The {a} export is slow for big warehouses; find out why and fix it.",
    "Run the {b} tests and fix whatever fails.",
    "Rename {A}{B} to {B}{A} everywhere, including the migrations and the docs.",
    "Why does `{a}_{b}` return {n} rows when I expect {p}? Check the query.",
    "Add pagination to the {a} list endpoint (page size {p}) and a test for it.",
)
_TOOLS = ("Read", "Bash", "Grep", "Edit")


class Corpus:
    """A megabyte or so of varied code/log lines; tool outputs are slices of it.

    Slices, not fresh text per output, keep generating 50 MB fast; random identifiers and
    numbers keep each output about as compressible as real code (PostgreSQL TOAST-compresses
    large values, so repetitive filler would flatter the database).
    """

    def __init__(self, rng: random.Random, size: int = MiB) -> None:
        lines: list[str] = []
        total = 0
        while total < size:
            line = _fill(rng.choice(_CODE_TEMPLATES), rng)
            lines.append(line)
            total += len(line) + 1
        self.plain = "\n".join(lines)
        # Read output: Claude Code's "   12→line" numbering.
        self.numbered = "\n".join(f"{i:6}\u2192{line}" for i, line in enumerate(lines, 1))

    def slice(self, rng: random.Random, chars: int, numbered: bool) -> str:
        text = self.numbered if numbered else self.plain
        chars = min(chars, len(text) - 1)
        start = rng.randrange(len(text) - chars)
        return text[start : start + chars]


def _fill(template: str, rng: random.Random) -> str:
    a, b = rng.choice(_WORDS), rng.choice(_WORDS)
    return template.format(
        a=a, b=b, A=a.capitalize(), B=b.capitalize(), n=rng.randint(1, 9999), p=rng.randint(0, 99)
    )


@dataclass
class TranscriptFactory:
    """Turns of a coding-agent session as MewCode records (the append API's wire shape):
    a user prompt, 1–4 assistant tool calls each answered by a tool_result of a few KB (every
    `big_every`-th a 60 KB output, which resume trimming persists), then an assistant answer.
    """

    rng: random.Random
    corpus: Corpus
    big_every: int = 150
    big_chars: int = 60_000
    seq: int = 0
    tool_results: int = 0
    clock: datetime = field(default_factory=lambda: datetime(2026, 2, 18, 9, 0, tzinfo=UTC))

    def turn(self) -> list[dict[str, Any]]:
        rng = self.rng
        records = [self._record("user", _fill(rng.choice(_USER_PROMPTS), rng))]
        for _ in range(rng.randint(1, 4)):
            tool_id = f"toolu_{rng.getrandbits(80):020x}"
            name, tool_input = self._tool_call()
            blocks = [
                {"type": "text", "text": _fill("Let me look at {a}/{b}.py first.", rng)},
                {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input},
            ]
            records.append(self._record("assistant", blocks))
            is_error = rng.random() < 0.05
            output = self._output(numbered=name == "Read", is_error=is_error)
            records.append(
                self._record("tool_result", output, tool_use_id=tool_id, is_error=is_error)
            )
        answer = _fill("Done: {a}_{b} now handles {n} rows; the {b} tests pass.", rng)
        records.append(self._record("assistant", answer))
        return records

    def records(self, count: int) -> list[dict[str, Any]]:
        """At least `count` records of whole turns, cut to exactly `count`."""
        out: list[dict[str, Any]] = []
        while len(out) < count:
            out.extend(self.turn())
        return out[:count]

    def _tool_call(self) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        name = rng.choice(_TOOLS)
        path = _fill("/home/dev/src/{a}-api/{b}/services.py", rng)
        if name == "Bash":
            return name, {"command": _fill("python -m pytest tests/test_{a}.py -x -q", rng)}
        if name == "Grep":
            return name, {"pattern": _fill("def {a}_", rng), "path": path}
        if name == "Edit":
            old, new = _fill("{a}_{b}", rng), _fill("{b}_{a}", rng)
            return name, {"file_path": path, "old_string": old, "new_string": new}
        return name, {"file_path": path}

    def _output(self, *, numbered: bool, is_error: bool) -> str:
        self.tool_results += 1
        if is_error:
            return "Exit code 1\n" + self.corpus.slice(self.rng, self.rng.randint(200, 1500), False)
        big = self.tool_results % self.big_every == 0
        chars = self.big_chars if big else self.rng.randint(500, 6000)
        return self.corpus.slice(self.rng, chars, numbered)

    def _record(self, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
        self.seq += 1
        self.clock += timedelta(seconds=self.rng.randint(1, 20))
        return {
            "type": kind,
            "content": content,
            "timestamp": self.clock.isoformat(),
            "seq": self.seq,
            **extra,
        }


@dataclass
class GeneratedTranscript:
    path: Path
    bytes: int
    lines: int
    records: int  # what the importer must produce: the check on the import's answer
    seconds: float


def write_claude_code_transcript(
    path: Path, target_bytes: int, factory: TranscriptFactory
) -> GeneratedTranscript:
    """A Claude Code transcript of at least `target_bytes`, built from the factory's turns.

    Line shapes as Claude Code writes them (tests/sessions/fixtures/claude_code_session.jsonl):
    summary lines at the top, a file-history-snapshot before each prompt, one assistant line
    per content block sharing message.id, tool results as user lines with toolUseResult.
    Each turn record maps to exactly one imported record, so the expected count is known.
    """
    started = time.perf_counter()
    rng = factory.rng
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    writer = _ClaudeCodeWriter(rng, session_id)
    written = lines = records = 0
    with path.open("wb") as out:

        def emit(obj: dict[str, Any]) -> None:
            nonlocal written, lines
            data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            out.write(data)
            written += len(data)
            lines += 1

        for title in ("Prune command tweaks", "Add a dry-run flag to prune_stock"):
            emit({"type": "summary", "summary": title, "leafUuid": writer.new_uuid()})
        while written < target_bytes:
            turn = factory.turn()
            records += len(turn)
            for obj in writer.turn_lines(turn):
                emit(obj)
    return GeneratedTranscript(path, written, lines, records, time.perf_counter() - started)


class _ClaudeCodeWriter:
    def __init__(self, rng: random.Random, session_id: str) -> None:
        self.rng = rng
        self.session_id = session_id
        self.parent: str | None = None
        self.messages = 0

    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def turn_lines(self, turn: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        tool_inputs: dict[str, dict[str, Any]] = {}
        for record in turn:
            ts = record["timestamp"].replace("+00:00", "Z")
            if record["type"] == "user":
                message_id = self.new_uuid()
                yield {
                    "type": "file-history-snapshot",
                    "messageId": message_id,
                    "snapshot": {
                        "messageId": message_id,
                        "trackedFileBackups": {},
                        "timestamp": ts,
                    },
                    "isSnapshotUpdate": False,
                }
                yield self._line("user", {"role": "user", "content": record["content"]}, ts)
            elif record["type"] == "assistant":
                yield from self._assistant_lines(record, ts, tool_inputs)
            else:
                yield self._tool_result_line(record, ts, tool_inputs)

    def _assistant_lines(
        self, record: dict[str, Any], ts: str, tool_inputs: dict[str, dict[str, Any]]
    ) -> Iterator[dict[str, Any]]:
        content = record["content"]
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        if self.rng.random() < 0.3:  # a thinking block, on a line of its own like the others
            thought = _fill("The {a} query probably misses an index on {b}.", self.rng)
            thinking = {"type": "thinking", "thinking": thought, "signature": "EqQBCkYIBxgC"}
            blocks = [thinking, *blocks]
        self.messages += 1
        message_id = f"msg_{self.messages:08d}"
        request_id = f"req_{self.rng.getrandbits(64):016x}"
        for block in blocks:
            if block["type"] == "tool_use":
                tool_inputs[block["id"]] = {"name": block["name"], **block["input"]}
            message = {
                "model": "claude-sonnet-4-5-20250929",
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": "tool_use" if block["type"] == "tool_use" else None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 4,
                    "cache_creation_input_tokens": 2311,
                    "cache_read_input_tokens": 14022,
                    "output_tokens": self.rng.randint(9, 400),
                    "service_tier": "standard",
                },
            }
            line = self._line("assistant", message, ts)
            line["requestId"] = request_id
            yield line

    def _tool_result_line(
        self, record: dict[str, Any], ts: str, tool_inputs: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        tool_id = record["tool_use_id"]
        block = {
            "tool_use_id": tool_id,
            "type": "tool_result",
            "content": record["content"],
            "is_error": record["is_error"],
        }
        line = self._line("user", {"role": "user", "content": [block]}, ts)
        called = tool_inputs.get(tool_id, {})
        # Claude Code repeats the output in toolUseResult; the importer must read past it.
        if called.get("name") == "Read":
            line["toolUseResult"] = {
                "type": "text",
                "file": {
                    "filePath": called.get("file_path", ""),
                    "content": record["content"],
                    "numLines": record["content"].count("\n") + 1,
                    "startLine": 1,
                    "totalLines": record["content"].count("\n") + 1,
                },
            }
        else:
            line["toolUseResult"] = {
                "stdout": record["content"],
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            }
        return line

    def _line(self, kind: str, message: dict[str, Any], ts: str) -> dict[str, Any]:
        uid = self.new_uuid()
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/src/inventory-api",
            "sessionId": self.session_id,
            "version": "2.1.37",
            "gitBranch": "feature/dry-run",
            "type": kind,
            "message": message,
            "uuid": uid,
            "timestamp": ts,
        }
        self.parent = uid
        return line


# --- Measuring ---------------------------------------------------------------------------------


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all CPUs), from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class PhaseCost:
    """What one phase cost, besides its latencies. RSS in MiB; CPU in seconds."""

    wall_s: float = 0.0
    server_peak_rss_mib: float | None = None  # max VmHWM over the gunicorn workers
    server_rss_before_mib: float | None = None  # max VmRSS over the workers at the start
    server_growth_mib: float | None = None  # max over workers of peak − RSS at the start
    server_cpu_s: float | None = None  # gunicorn workers, user + system
    db_cpu_s: float | None = None  # the bench database's PostgreSQL backends (local server only)
    client_cpu_s: float = 0.0
    # Busy CPU of everything else on the machine (other jobs, PostgreSQL's background
    # processes): a large value means the numbers were taken on a shared, busy machine.
    other_cpu_s: float | None = None
    client_peak_rss_mib: float | None = None  # this process's VmHWM during the phase
    peak_reset: bool = False  # False: VmHWM could not be reset, so it is the lifetime peak
    workers_changed: bool = False  # a worker died or was replaced during the phase


# --- Server, database, client ------------------------------------------------------------------


class Database(_harness.Database):
    """The shared bench database, plus what the phases' cost accounting reads."""

    def now(self, conn: psycopg.Connection[Any]) -> datetime:
        when: datetime = _scalar(conn, "SELECT now()")
        return when

    def connections_since(self, conn: psycopg.Connection[Any], since: datetime) -> int:
        """Connections to the bench database opened at `since` or later (not `conn`)."""
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
            "AND pid <> pg_backend_pid() AND backend_start >= %s",
            (self.name, since),
        ).fetchone()
        return int(row[0]) if row else 0

    def backend_pids(self, conn: psycopg.Connection[Any]) -> list[int]:
        """PIDs of the PostgreSQL backends serving the bench database, when the server runs
        on this machine (pids of a remote server would name unrelated local processes)."""
        if self.host not in ("127.0.0.1", "localhost", "::1", ""):
            return []
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (self.name,),
        ).fetchall()
        return [pid for (pid,) in rows if _is_postgres(pid)]


def _is_postgres(pid: int) -> bool:
    try:
        return b"postgres" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class Meter:
    """Resets and reads peak RSS and CPU time of the server, the database and the client."""

    def __init__(self, server: Server, db: Database, api: Api) -> None:
        self.server = server
        self.db = db
        self.db_conn = psycopg.connect(db.url, autocommit=True)
        self.warm_up = warm_up(api, db, self.db_conn)

    @contextlib.contextmanager
    def phase(self) -> Iterator[PhaseCost]:
        """Fresh, warmed-up workers, then measure. Fresh because CPython rarely gives memory
        back: a worker's RSS after one phase would hide the next phase's own peak."""
        since = self.db.now(self.db_conn)
        self.server.recycle_workers()
        self.warm_up(since)
        cost = PhaseCost()
        workers = self.server.worker_pids()
        rss = {pid: status_kib(pid, "VmRSS") or 0 for pid in workers}
        cost.server_rss_before_mib = max(rss.values()) / 1024 if rss else None
        targets: list[int | str] = [*workers, "self"]
        cost.peak_reset = all([reset_peak_rss(pid) for pid in targets])  # all, not the first
        server_cpu = cpu_seconds(workers)
        db_pids = self.db.backend_pids(self.db_conn)
        db_cpu = cpu_seconds(db_pids)
        client_cpu = time.process_time()
        busy = machine_busy_seconds()
        started = time.perf_counter()
        yield cost
        cost.wall_s = time.perf_counter() - started
        cost.client_cpu_s = time.process_time() - client_cpu
        busy = machine_busy_seconds() - busy
        after = self.server.worker_pids()
        cost.workers_changed = after != workers
        peaks = {pid: status_kib(pid, "VmHWM") or 0 for pid in after}
        if any(peaks.values()):
            cost.server_peak_rss_mib = max(peaks.values()) / 1024
            growth = max(peak - rss.get(pid, 0) for pid, peak in peaks.items())
            cost.server_growth_mib = growth / 1024
        client_peak = status_kib("self", "VmHWM")
        cost.client_peak_rss_mib = client_peak / 1024 if client_peak else None
        cost.server_cpu_s = _cpu_delta(server_cpu, cpu_seconds(after))
        cost.db_cpu_s = _cpu_delta(db_cpu, cpu_seconds(self.db.backend_pids(self.db_conn)))
        ours = (cost.server_cpu_s or 0) + (cost.db_cpu_s or 0) + cost.client_cpu_s
        cost.other_cpu_s = max(0.0, busy - ours)

    def close(self) -> None:
        self.db_conn.close()


def _cpu_delta(before: dict[int, float], after: dict[int, float]) -> float | None:
    """CPU used between two samples; a process new since `before` counts from zero."""
    if not after:
        return None
    return sum(value - before.get(pid, 0.0) for pid, value in after.items())


# --- Phases ------------------------------------------------------------------------------------


@dataclass
class Result:
    what: str
    n: int
    latencies_ms: list[float]
    throughput: str
    cost: PhaseCost | None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def p50(self) -> float | None:
        return percentile(self.latencies_ms, 0.50)

    @property
    def p95(self) -> float | None:
        return percentile(self.latencies_ms, 0.95) if len(self.latencies_ms) > 1 else None


def warm_up(api: Api, db: Database, conn: psycopg.Connection[Any]) -> Callable[[datetime], None]:
    """Requests that make fresh workers load the app (Django imports every view on the first
    request) and open their database connection, so a phase does not time a cold start.

    Sequential requests may all land on one sync worker, so they go out concurrently (a busy
    worker leaves the next to the other), until every worker has opened its connection.
    """
    session = create_session(api, "bench-warm-up")
    body = json.dumps([{"type": "user", "content": "warm-up"}]).encode()

    def touch(kind: int) -> None:
        if kind % 3 == 0:
            api.call("GET", "sessions/", 200)
        elif kind % 3 == 1:
            api.post_json(f"sessions/{session}/records/", body, 201)
        else:
            api.call("GET", f"sessions/{session}/resume/", 200)

    def run(since: datetime) -> None:
        with ThreadPoolExecutor(2 * WORKERS) as pool:
            for _ in range(50):
                list(pool.map(touch, range(6 * WORKERS)))
                if db.connections_since(conn, since) >= WORKERS:
                    return
        raise BenchError("the warm-up requests did not reach every fresh gunicorn worker")

    return run


def create_session(api: Api, external_id: str) -> str:
    response, _ = api.post_json("sessions/", json.dumps({"external_id": external_id}).encode(), 201)
    session_id: str = response.json()["id"]
    return session_id


def append_batches(
    api: Api, session: str, batches: Sequence[bytes], sizes: Sequence[int]
) -> list[float]:
    """POST each pre-encoded batch; checks that every record was created. Seconds each."""
    latencies = []
    for body, size in zip(batches, sizes, strict=True):
        response, elapsed = api.post_json(f"sessions/{session}/records/", body, 201)
        created = response.json()["created"]
        if created != size:
            raise BenchError(f"append created {created} records, expected {size}")
        latencies.append(elapsed)
    return latencies


def bench_append(
    api: Api, meter: Meter, factory: TranscriptFactory, requests: int, per_request: int
) -> Result:
    records = factory.records(requests * per_request)
    chunks = [records[i : i + per_request] for i in range(0, len(records), per_request)]
    bodies = [json.dumps(chunk).encode() for chunk in chunks]
    session = create_session(api, f"bench-append-{per_request}")
    with meter.phase() as cost:
        latencies = append_batches(api, session, bodies, [len(c) for c in chunks])
    noun = "record" if per_request == 1 else "records"
    return Result(
        what=f"append, {per_request} {noun}/request",
        n=requests,
        latencies_ms=[s * 1000 for s in latencies],
        throughput=f"{len(records) / cost.wall_s:,.0f} records/s",
        cost=cost,
        extra={"records": len(records), "body_bytes": sum(map(len, bodies))},
    )


@dataclass
class BuiltSession:
    id: str
    boundaries: list[int]
    compact_ms: list[float]
    summary_chars: list[int]
    build_s: float
    record_count: int


def build_resume_session(api: Api, factory: TranscriptFactory, scale: Scale) -> BuiltSession:
    """A session of exactly `resume_records` records (boundaries included), appended in
    batches, compacted manually at evenly spaced turn ends so the last boundary leaves about
    1/(compactions+1) of the session to replay."""
    started = time.perf_counter()
    session = create_session(api, "bench-resume")
    regular = scale.resume_records - scale.compactions
    turns: list[list[dict[str, Any]]] = []
    total = 0
    while total < regular:
        turns.append(factory.turn())
        total += len(turns[-1])
    turns[-1] = turns[-1][: len(turns[-1]) - (total - regular)]  # cut to the exact count
    # Compact after the turn whose end is nearest each k/(compactions+1) of the session.
    ends = list(_cumulative(len(t) for t in turns))
    step = regular / (scale.compactions + 1)
    marks = {_nearest(ends, k * step) for k in range(1, scale.compactions + 1)}
    if len(marks) < scale.compactions:
        raise BenchError("the resume session is too short for that many compactions")
    boundaries, compact_ms, summary_chars = [], [], []
    pending: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        pending.extend(turn)
        if index in marks or index == len(turns) - 1:
            _append_all(api, session, pending, scale.build_batch)  # compaction sees it all
            pending = []
        elif len(pending) >= scale.build_batch:
            _append_all(api, session, pending[: scale.build_batch], scale.build_batch)
            pending = pending[scale.build_batch :]
        if index in marks:
            body = json.dumps({"context_window": CONTEXT_WINDOW, "mode": "manual"}).encode()
            response, elapsed = api.post_json(f"sessions/{session}/compact/", body, 201)
            outcome = response.json()
            if not outcome["compacted"]:
                raise BenchError(f"manual compaction did not compact: {outcome}")
            boundaries.append(outcome["boundary_index"])
            compact_ms.append(elapsed * 1000)
            summary_chars.append(len(outcome["summary"]))
    response, _ = api.call("GET", f"sessions/{session}/", 200)
    count = response.json()["record_count"]
    if count != scale.resume_records:
        raise BenchError(f"the resume session has {count} records, expected {scale.resume_records}")
    return BuiltSession(
        session, boundaries, compact_ms, summary_chars, time.perf_counter() - started, count
    )


def _nearest(values: Sequence[int], target: float) -> int:
    """Index of the value nearest `target`."""
    return min(range(len(values)), key=lambda i: abs(values[i] - target))


def _cumulative(values: Iterable[int]) -> Iterator[int]:
    total = 0
    for value in values:
        total += value
        yield total


def _append_all(api: Api, session: str, records: list[dict[str, Any]], batch: int) -> None:
    chunks = [records[i : i + batch] for i in range(0, len(records), batch)]
    append_batches(api, session, [json.dumps(c).encode() for c in chunks], list(map(len, chunks)))


def bench_resume(api: Api, meter: Meter, built: BuiltSession, calls: int) -> list[Result]:
    url = f"sessions/{built.id}/resume/"
    with meter.phase() as cold_cost:
        cold, cold_s = api.call("GET", url, 200)
    first = cold.json()
    if first["boundary_index"] != built.boundaries[-1]:
        raise BenchError(f"resume replayed from {first['boundary_index']}, not the last boundary")
    latencies, same = [], True
    with meter.phase() as warm_cost:
        for _ in range(calls):
            response, elapsed = api.call("GET", url, 200)
            latencies.append(elapsed * 1000)
            same = same and response.content == cold.content
    shape = {
        "records": built.record_count,
        "boundaries": built.boundaries,
        "replayed_from_index": first["replayed_from_index"],
        "dropped_records": first["dropped_records"],
        "messages": len(first["messages"]),
        "response_bytes": len(cold.content),
        "persisted_results": cold.text.count("<persisted-output>"),
        "snipped_results": cold.text.count("<snipped>"),
        "token_estimate": first["token_estimate"],
        "warm_bytes_identical_to_cold": same,
    }
    what = f"resume, {built.record_count:,} records, {len(built.boundaries)} boundaries"
    per_s = f"{len(cold.content) / MiB / cold_s:,.1f} MB/s out"
    return [
        Result(f"{what}: first (cold, writes decisions)", 1, [cold_s * 1000], per_s, cold_cost),
        Result(
            f"{what}: warm",
            calls,
            latencies,
            f"{calls / warm_cost.wall_s:,.1f} resumes/s",
            warm_cost,
            extra=shape,
        ),
    ]


class CeleryWorker:
    """`celery -A memoryhub worker` (thread pool, one thread, as `make run` starts it) on the
    server's environment: the same database and (filesystem) broker directory."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 90) -> None:
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(  # noqa: S603 — fixed argv, no shell
                [
                    *(sys.executable, "-m", "celery", "-A", "memoryhub", "worker"),
                    *("--pool=threads", "--concurrency=1", "--loglevel=INFO"),
                    *("--without-gossip", "--without-mingle"),
                ],
                cwd=_harness.REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"the Celery worker exited:\n{self.log_tail()}")
            if " ready." in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise BenchError(f"the Celery worker was not ready in time:\n{self.log_tail()}")

    def pids(self) -> list[int]:
        return [self.proc.pid, *_harness.child_pids(self.proc.pid)] if self.proc else []

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


IMPORT_JOB_TIMEOUT_S = 1800


def bench_import(
    api: Api, meter: Meter, worker: CeleryWorker, transcript: GeneratedTranscript
) -> Result:
    """The import as a client makes it: the upload (202 above SESSION_IMPORT_SYNC_MAX_BYTES),
    then polling the job's Location every 0.5 s until it has succeeded."""
    headers = {"Content-Type": "application/x-ndjson"}
    with transcript.path.open("rb") as body, meter.phase() as cost:
        workers = worker.pids()
        worker_cpu = cpu_seconds(workers)
        for pid in workers:
            reset_peak_rss(pid)
        started = time.perf_counter()
        # A file object: httpx sends Content-Length (from fstat) and streams 64 KiB reads.
        response, upload_s = api.call(
            "POST", "sessions/import/", (201, 202), content=body, headers=headers
        )
        job: dict[str, Any] = response.json()
        while response.status_code == 202 and job["status"] not in ("succeeded", "failed"):
            if time.perf_counter() - started > IMPORT_JOB_TIMEOUT_S:
                raise BenchError(f"the import job did not finish: {job}")
            time.sleep(0.5)
            job = api.client.get(response.headers["Location"]).json()
        total_s = time.perf_counter() - started
        worker_peak = max((status_kib(pid, "VmHWM") or 0 for pid in workers), default=0)
        worker_cpu_s = sum(cpu_seconds(workers).values()) - sum(worker_cpu.values())
    if response.status_code == 202 and job["status"] != "succeeded":
        raise BenchError(f"the import job failed: {job}")
    session = job["session"] if response.status_code == 202 else job
    if session["record_count"] != transcript.records:
        raise BenchError(
            f"import stored {session['record_count']} records, expected {transcript.records}"
        )
    mb = transcript.bytes / MiB
    how = "through the job" if response.status_code == 202 else "in the request"
    return Result(
        what=f"import {how}, Claude Code transcript {mb:,.1f} MB ({transcript.records:,} records)",
        n=1,
        latencies_ms=[total_s * 1000],
        throughput=f"{mb / total_s:,.2f} MB/s, {transcript.records / total_s:,.0f} records/s",
        cost=cost,
        extra={
            "bytes": transcript.bytes,
            "lines": transcript.lines,
            "records": transcript.records,
            "skipped_lines": session["metadata"].get("skipped_lines"),
            "generate_s": round(transcript.seconds, 2),
            "source": session["source"],
            "status": response.status_code,
            "upload_request_s": round(upload_s, 2),
            "job_s": round(total_s - upload_s, 2),
            "celery_worker_peak_rss_mib": round(worker_peak / 1024, 1),
            "celery_worker_cpu_s": round(worker_cpu_s, 1),
        },
    )


def compact_result(built: BuiltSession) -> Result:
    return Result(
        what="compact, manual, offline summariser (while building the resume session)",
        n=len(built.compact_ms),
        latencies_ms=built.compact_ms,
        throughput="",
        cost=None,
        extra={"summary_chars": built.summary_chars, "build_s": round(built.build_s, 1)},
    )


# --- Report ------------------------------------------------------------------------------------


def machine_facts(db_facts: dict[str, str]) -> dict[str, Any]:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain")),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": model,
        "postgresql": db_facts.get("version", "?"),
        "pg_settings": {k: v for k, v in db_facts.items() if k != "version"},
        "python": sys.version.split()[0],
        "gunicorn": f"{WORKERS} sync workers, --timeout {GUNICORN_TIMEOUT_S}",
        "loadavg_at_start": Path("/proc/loadavg").read_text().split()[0],
    }


def _mib(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def render(facts: dict[str, Any], results: Sequence[Result], scale_name: str) -> str:
    pg = facts["pg_settings"]
    commit = facts["commit"] + (" + uncommitted changes" if facts["uncommitted_changes"] else "")
    lines = [
        f"Sessions API benchmark ({scale_name}) · {facts['date']} · commit {commit} · "
        f"nproc {facts['nproc']}, {facts['cpu']} · {facts['postgresql'].split(' on ')[0]} "
        f"(fsync {pg.get('fsync')}, synchronous_commit {pg.get('synchronous_commit')}) · "
        f"gunicorn {facts['gunicorn']} · Python {facts['python']} · "
        f"load average at start {facts['loadavg_at_start']}",
        "",
        "| what | n | p50 ms | p95 ms | throughput | server peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.what} | {r.n:,} | {ms(r.p50)} | {ms(r.p95)} | {r.throughput or '–'} "
            f"| {_peak_cell(r.cost)} |"
        )
    return "\n".join(lines)


def _peak_cell(cost: PhaseCost | None) -> str:
    """ "peak (+growth over the fresh worker)": the peak alone is mostly Django's baseline."""
    if cost is None or cost.server_peak_rss_mib is None:
        return "–"
    growth = "" if cost.server_growth_mib is None else f" (+{cost.server_growth_mib:,.0f})"
    return f"{cost.server_peak_rss_mib:,.0f}{growth}"


def notes(results: Sequence[Result], api_slowest_s: float) -> str:
    """What the table does not say: where the time went and what memory was measured."""
    out = [
        "",
        "Notes:",
        "- Latency: wall time of one HTTP request at the client (request sent → body read), "
        "bodies encoded beforehand. Throughput: records (or bytes) over the phase's wall time. "
        "MB = MiB.",
        "- Server peak RSS: max VmHWM over the 2 gunicorn workers during the phase; each phase "
        "starts on fresh workers (SIGHUP), warmed up by a few small requests, with VmHWM reset "
        "(clear_refs). In brackets: the largest growth of one worker over its RSS at the start "
        "(the rest is the resident Django app). Compaction ran while building the resume "
        "session, unmetered.",
        "- Client peak RSS (below): VmHWM of this bench process during the phase, reset likewise; "
        "it includes the phase's pre-encoded request bodies and the interpreter, not the server.",
        "- gunicorn's sync workers close the connection after every response, so each request "
        "opens a new TCP connection although the httpx client keeps connections alive.",
    ]
    for r in results:
        c = r.cost
        if c is None:
            continue
        out.append(
            f"- {r.what}: wall {_seconds(c.wall_s)}; CPU: gunicorn workers "
            f"{_seconds(c.server_cpu_s)}, PostgreSQL backends {_seconds(c.db_cpu_s)}, "
            f"bench client {_seconds(c.client_cpu_s)}, other processes "
            f"{_seconds(c.other_cpu_s)}; worker RSS before "
            f"{_mib(c.server_rss_before_mib)} MB; client peak RSS {_mib(c.client_peak_rss_mib)} MB"
            + ("" if c.peak_reset else " (peaks NOT reset: lifetime peaks)")
            + (" (a worker was replaced during this phase!)" if c.workers_changed else "")
        )
    for r in results:
        if r.extra:
            out.append(f"- {r.what}: {json.dumps(r.extra)}")
    for r in results:
        share = _other_share(r.cost)
        if share is not None and share > CONTENDED_SHARE:
            out.append(
                f"- WARNING: other processes kept {share:.0%} of the machine's CPUs busy during "
                f'"{r.what}": its numbers were taken on a shared, busy machine.'
            )
    if api_slowest_s > DEFAULT_GUNICORN_TIMEOUT_S:
        out.append(
            f"- The slowest request took {api_slowest_s:,.0f} s: longer than gunicorn's default "
            f"--timeout of {DEFAULT_GUNICORN_TIMEOUT_S} s (make run, Dockerfile), which would "
            "kill the worker; this run used --timeout "
            f"{GUNICORN_TIMEOUT_S}."
        )
    return "\n".join(out)


def _other_share(cost: PhaseCost | None) -> float | None:
    """Share of the machine's CPU capacity that processes outside the benchmark used."""
    if cost is None or cost.other_cpu_s is None or cost.wall_s <= 0:
        return None
    return cost.other_cpu_s / (cost.wall_s * len(os.sched_getaffinity(0)))


def _seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.1f} s" if value >= 10 else f"{value:.2f} s"


# --- Main --------------------------------------------------------------------------------------


def server_env(db_url: str, var_dir: Path, import_bytes: int) -> dict[str, str]:
    env = _harness.server_env(db_url, var_dir)
    # The default limit (256 MiB): the max-size phase imports just under it.
    env["SESSION_IMPORT_MAX_BYTES"] = str(max(256 * MiB, 2 * import_bytes))
    return env


def run(args: argparse.Namespace, admin_url: str) -> int:
    scale = Scale().quick() if args.quick else Scale()
    rng = random.Random(20260218)  # noqa: S311 — synthetic data, not security
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryhub-bench-")))
        db = Database(admin_url)
        log(f"creating database {db.name} and migrating it")
        db.create()
        stack.callback(db.drop)
        env = server_env(db.url, tmp / "var", scale.import_bytes)
        run_manage(env, "migrate", "--noinput", "--verbosity", "0")
        run_manage(env, "project_create", PROJECT, "--owner", OWNER)
        token = run_manage(env, "token_create", "--user", OWNER, "--project", PROJECT).strip()
        facts = machine_facts(db.facts())

        server = Server(env, tmp / "gunicorn.log")
        log(f"starting gunicorn on {server.base_url}")
        stack.callback(server.stop)  # registered after db.drop, so it runs before it
        server.start()
        worker = CeleryWorker(env, tmp / "celery.log")
        log("starting a Celery worker (imports above 8 MiB run there)")
        stack.callback(worker.stop)
        worker.start()
        api = Api(server.base_url, token, prefix=f"projects/{PROJECT}/")
        stack.callback(api.close)
        meter = Meter(server, db, api)
        stack.callback(meter.close)

        corpus = Corpus(rng)
        results: list[Result] = []
        try:
            if not args.import_only:
                results += other_phases(api, meter, rng, corpus, scale)
            for size in (scale.import_bytes, scale.max_import_bytes):
                log(f"import: generating {size / MiB:.0f} MB of Claude Code transcript")
                path = tmp / "transcript.jsonl"
                transcript = write_claude_code_transcript(
                    path, size, TranscriptFactory(rng, corpus)
                )
                log(f"import: {transcript.lines:,} lines, {transcript.records:,} records")
                results.append(bench_import(api, meter, worker, transcript))
                path.unlink()
        except BaseException:
            print(f"--- gunicorn log (tail) ---\n{server.log_tail()}", file=sys.stderr)
            print(f"--- celery log (tail) ---\n{worker.log_tail()}", file=sys.stderr)
            raise
        log("done; stopping gunicorn and dropping the database")

    print(render(facts, results, "quick, 10× smaller" if args.quick else "full"))
    print(notes(results, api.slowest_s))
    if args.json:
        raw = {
            "machine": facts,
            "scale": asdict(scale),
            "results": [
                {
                    "what": r.what,
                    "n": r.n,
                    "p50_ms": r.p50,
                    "p95_ms": r.p95,
                    "throughput": r.throughput,
                    "latencies_ms": [round(v, 3) for v in r.latencies_ms],
                    "cost": asdict(r.cost) if r.cost else None,
                    "extra": r.extra,
                }
                for r in results
            ],
            "slowest_request_s": api.slowest_s,
        }
        Path(args.json).write_text(json.dumps(raw, indent=2) + "\n")
    return 0


def other_phases(
    api: Api, meter: Meter, rng: random.Random, corpus: Corpus, scale: Scale
) -> list[Result]:
    """Append and resume (everything but the imports)."""
    results = []
    log(f"append: {scale.single_appends} × 1 record")
    results.append(
        bench_append(api, meter, TranscriptFactory(rng, corpus), scale.single_appends, 1)
    )
    log(f"append: {scale.batch_appends} × {scale.batch_size} records")
    results.append(
        bench_append(
            api, meter, TranscriptFactory(rng, corpus), scale.batch_appends, scale.batch_size
        )
    )
    log(f"resume: building a {scale.resume_records:,}-record session")
    built = build_resume_session(api, TranscriptFactory(rng, corpus), scale)
    results.append(compact_result(built))
    log(f"resume: 1 cold + {scale.resume_calls} warm")
    results.extend(bench_resume(api, meter, built, scale.resume_calls))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="a 10× smaller run (checks the script)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers to FILE")
    parser.add_argument(
        "--import-only", action="store_true", help="only the two imports (50 MB and max size)"
    )
    args = parser.parse_args(argv)
    return _harness.run_bench("bench/sessions.py", run, args)


if __name__ == "__main__":
    sys.exit(main())
