"""Shared plumbing of the recall benchmarks (bench/locomo.py, bench/recall_scale.py).

A fresh PostgreSQL database per run, `gunicorn memoryhub.wsgi` on a free loopback port, an
owner with an unrestricted API token, an httpx client, and /proc readers for the workers' peak
RSS. The pieces are copied from bench/sessions.py (which keeps its own; nothing here is
imported from it), with the project slug and the worker count made parameters.

    bench/pg.sh                                  # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's bin/: gunicorn lives next to its python
MiB = 1024 * 1024
OWNER = "bench"
WORKERS = 2
GUNICORN_TIMEOUT_S = 600
# Inherited variables that would change what is measured.
DROPPED_ENV_PREFIXES = ("LLM_", "SESSION_", "API_", "CELERY_", "REDIS_", "DATABASE_", "RECALL_")
DROPPED_ENV = {"DEBUG", "MEMORYHUB_VAR_DIR"}

NO_DATABASE_HELP = """\
This benchmark needs a PostgreSQL server on which it may CREATE DATABASE.
Start a throwaway one (as root; installs Debian's postgresql package if needed):

    bench/pg.sh
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python {script}
    bench/pg.sh stop

or point BENCH_DATABASE_URL (or DATABASE_URL) at any postgres://user:password@host:port/db
whose user has CREATEDB. A database memoryhub_bench_<random> is created there and dropped
at the end."""


class BenchError(RuntimeError):
    """Something the benchmark cannot measure around: a failed step or an unexpected answer."""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def admin_url_or_help(script: str) -> str | None:
    url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not url:
        print(NO_DATABASE_HELP.format(script=script), file=sys.stderr)
    return url


def run_bench(
    script: str, run: Callable[[argparse.Namespace, str], int], args: argparse.Namespace
) -> int:
    """A benchmark's exit code: 2 without a database, 1 on BenchError, 130 on Ctrl-C; SIGTERM
    unwinds like Ctrl-C, so the server stops and the database is dropped either way."""
    admin_url = admin_url_or_help(script)
    if not admin_url:
        return 2
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    try:
        return run(args, admin_url)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted; server stopped and database dropped", file=sys.stderr)
        return 130


def raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # SystemExit unwinds through the ExitStack, so the database is dropped on `kill` too.
    raise SystemExit(128 + signum)


# --- Statistics and /proc ----------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks; None when there is nothing to rank."""
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low = math.floor(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def _proc_stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def child_pids(parent: int) -> list[int]:
    """psutil is not installed: scan /proc for processes whose ppid is `parent`."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _proc_stat_fields(int(entry.name))
            if fields is not None and int(fields[1]) == parent:
                children.append(int(entry.name))
    return sorted(children)


def cpu_seconds(pids: Sequence[int]) -> dict[int, float]:
    """utime + stime of each live pid."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        fields = _proc_stat_fields(pid)
        if fields is not None:
            out[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def status_kib(pid: int | str, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak_rss(pid: int | str) -> bool:
    """Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0, as root/owner)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


# --- Database, server, client ------------------------------------------------------------------


def snapshot_app(dest: Path, source: Path = REPO) -> Path:
    """A copy of the app's code as it is now (committed or not), for the server to run.

    The work tree is shared with people who keep changing it, and gunicorn's fresh workers
    (SIGHUP) import the code anew: without a snapshot one run could measure two versions.
    The snapshot's directory comes first on sys.path (manage.py's own directory, gunicorn's
    --chdir), ahead of the venv's editable install of /work/main."""
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "var", "bench", "tests", "__pycache__", ".*_cache", ".hypothesis"
    )
    shutil.copytree(source, dest, ignore=ignore)
    return dest


def run_manage(env: dict[str, str], *args: str, app_dir: Path = REPO) -> str:
    """`manage.py ARGS` with the bench environment; its stdout, or BenchError with both streams."""
    command = [sys.executable, str(app_dir / "manage.py"), *args]
    done = subprocess.run(  # noqa: S603 — fixed argv, no shell
        command, cwd=app_dir, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BenchError(
            f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _scalar(conn: psycopg.Connection[Any], query: str) -> Any:
    row = conn.execute(query).fetchone()
    return row[0] if row else None


class Database:
    """The benchmark's own database on the given server: created fresh, dropped at the end."""

    def __init__(self, admin_url: str) -> None:
        parts = urlsplit(admin_url)
        if parts.scheme not in ("postgres", "postgresql"):
            raise BenchError(f"expected a postgres:// URL, got scheme {parts.scheme!r}")
        self.admin_url = admin_url
        self.name = f"memoryhub_bench_{uuid.uuid4().hex[:10]}"
        self.url = urlunsplit(parts._replace(path="/" + self.name))
        self.host = parts.hostname or ""
        self.created = False

    def create(self) -> None:
        try:
            with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        except psycopg.Error as exc:
            raise BenchError(f"cannot create a database on {self.host}: {exc}") from exc
        self.created = True

    def drop(self) -> None:
        if not self.created:
            return
        # FORCE ends connections gunicorn may still hold (PostgreSQL ≥ 13).
        statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
        try:
            with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
                conn.execute(statement.format(sql.Identifier(self.name)))
        except psycopg.Error as exc:
            # Do not mask the error that brought us here; say what is left behind instead.
            print(f"bench: could not drop {self.name} ({exc}); drop it by hand", file=sys.stderr)
            return
        self.created = False

    def facts(self) -> dict[str, str]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            facts = {"version": str(_scalar(conn, "SELECT version()"))}
            for setting in ("fsync", "synchronous_commit", "shared_buffers", "work_mem"):
                facts[setting] = str(_scalar(conn, f"SHOW {setting}"))
        return facts


def server_env(db_url: str, var_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(DROPPED_ENV_PREFIXES) and k not in DROPPED_ENV
    }
    env.update(
        DATABASE_URL=db_url,
        MEMORYHUB_VAR_DIR=str(var_dir),
        DEBUG="false",  # DEBUG keeps every SQL query in memory: it would skew RSS and time
        LLM_PROVIDER="offline",
        PYTHONUNBUFFERED="1",
    )
    return env


class Server:
    """gunicorn in its own process group, so that stopping it ends every worker."""

    def __init__(
        self, env: dict[str, str], log_path: Path, workers: int = WORKERS, app_dir: Path = REPO
    ) -> None:
        self.env = env
        self.app_dir = app_dir
        self.port = free_port()
        self.log_path = log_path
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """gunicorn's argv: this server's application, then the options every server shares."""
        return [
            str(BIN / "gunicorn"),
            "memoryhub.wsgi",
            "--timeout",
            str(GUNICORN_TIMEOUT_S),
            *self.common_options(),
        ]

    def common_options(self) -> list[str]:
        return [
            "--workers",
            str(self.workers),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--no-control-socket",  # else ~/.gunicorn/gunicorn.ctl, shared with `make run`
            "--chdir",
            str(self.app_dir),
        ]

    def start(self, timeout_s: float = 60) -> None:
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(  # noqa: S603 — fixed argv, no shell
                self.command(),
                cwd=self.app_dir,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._wait(set(), timeout_s)

    def _wait(self, old: set[int], timeout_s: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"gunicorn exited {self.proc.returncode}:\n{self.log_tail()}")
            pids = set(self.worker_pids())
            if len(pids) == self.workers and not pids & old and self._answers():
                return
            time.sleep(0.1)
        raise BenchError(f"gunicorn did not get {self.workers} fresh workers:\n{self.log_tail()}")

    def _answers(self) -> bool:
        try:
            httpx.get(self.base_url + "/healthz", timeout=5)
        except httpx.TransportError:
            return False
        return True  # any status: /healthz also checks the (absent) Celery worker

    def recycle_workers(self, timeout_s: float = 60) -> None:
        """Fresh workers (SIGHUP): they import the app anew, with empty in-process caches."""
        assert self.proc is not None
        old = set(self.worker_pids())
        os.kill(self.proc.pid, signal.SIGHUP)
        self._wait(old, timeout_s)

    def worker_pids(self) -> list[int]:
        return child_pids(self.proc.pid) if self.proc else []

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)  # pgid == pid: start_new_session
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


class AsgiServer(Server):
    """gunicorn serving memoryhub.asgi with uvicorn's worker class, as `make run` and the
    Docker image start it (Django and /mcp in one process; connections are kept alive)."""

    def command(self) -> list[str]:
        return [
            str(BIN / "gunicorn"),
            "memoryhub.asgi:application",
            "--worker-class",
            "uvicorn_worker.UvicornWorker",
            "--timeout",
            str(GUNICORN_TIMEOUT_S),
            *self.common_options(),
        ]

    def start(self, timeout_s: float = 90) -> None:
        super().start(timeout_s)


SERVERS: dict[str, type[Server]] = {"asgi": AsgiServer, "wsgi": Server}


class Api:
    """/api/v1/ over one httpx client, which keeps its connection alive where the server does
    (uvicorn workers; gunicorn's sync workers close it after each response)."""

    def __init__(self, base_url: str, token: str, prefix: str = "") -> None:
        """`prefix`: under /api/v1/, e.g. "projects/<slug>/" for one project's endpoints."""
        self.client = httpx.Client(
            base_url=f"{base_url}/api/v1/{prefix}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(GUNICORN_TIMEOUT_S + 60, connect=10),
        )
        self.slowest_s = 0.0

    def call(
        self, method: str, url: str, expect: int | tuple[int, ...], **kwargs: Any
    ) -> tuple[httpx.Response, float]:
        """One request; its response and seconds. Any other status raises with the body."""
        started = time.perf_counter()
        response = self.client.request(method, url, **kwargs)
        elapsed = time.perf_counter() - started
        self.slowest_s = max(self.slowest_s, elapsed)
        allowed = (expect,) if isinstance(expect, int) else expect
        if response.status_code not in allowed:
            raise BenchError(
                f"{method} {url}: HTTP {response.status_code}, expected {expect}:\n"
                f"{response.text[:3000]}"
            )
        return response, elapsed

    def post_json(self, url: str, body: bytes, expect: int) -> tuple[httpx.Response, float]:
        """POST a pre-encoded body, so latencies hold no client-side JSON work."""
        headers = {"Content-Type": "application/json"}
        return self.call("POST", url, expect, content=body, headers=headers)

    def create_project(self, slug: str) -> None:
        self.call("POST", "projects/", 201, json={"slug": slug, "name": slug})

    def close(self) -> None:
        self.client.close()


@dataclass
class Stack:
    db: Database
    server: Server
    api: Api
    env: dict[str, str]
    facts: dict[str, Any]
    app_dir: Path


@contextlib.contextmanager
def bench_stack(
    admin_url: str,
    first_project: str,
    workers: int = WORKERS,
    source: Path = REPO,
    server_class: type[Server] = Server,
) -> Iterator[Stack]:
    """A migrated fresh database, a project `first_project` owned by OWNER, an unrestricted
    token (so more projects can be made through the API) and a running gunicorn. Everything is
    removed on exit, also on failure, Ctrl-C or SIGTERM."""
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryhub-bench-")))
        facts = machine_facts({}, workers)  # the commit the snapshot is taken from
        app_dir = snapshot_app(tmp / "app", source)
        db = Database(admin_url)
        log(f"creating database {db.name} and migrating it")
        db.create()
        stack.callback(db.drop)
        env = server_env(db.url, tmp / "var")
        run_manage(env, "migrate", "--noinput", "--verbosity", "0", app_dir=app_dir)
        run_manage(env, "project_create", first_project, "--owner", OWNER, app_dir=app_dir)
        token = run_manage(env, "token_create", "--user", OWNER, app_dir=app_dir).strip()
        db_facts = db.facts()
        facts["postgresql"] = db_facts["version"].split(" on ")[0]
        facts["pg_settings"] = {k: v for k, v in db_facts.items() if k != "version"}
        server = server_class(env, tmp / "gunicorn.log", workers, app_dir)
        kind = "uvicorn" if server_class is AsgiServer else "sync"
        facts["gunicorn"] = f"{workers} {kind} workers"
        log(f"starting gunicorn ({facts['gunicorn']}) on {server.base_url}")
        stack.callback(server.stop)  # registered after db.drop, so it runs before it
        server.start()
        api = Api(server.base_url, token)
        stack.callback(api.close)
        try:
            yield Stack(db, server, api, env, facts, app_dir)
        except BaseException:
            print(f"--- gunicorn log (tail) ---\n{server.log_tail()}", file=sys.stderr)
            raise
        log("done; stopping gunicorn and dropping the database")


# --- Report ------------------------------------------------------------------------------------


def machine_facts(db_facts: dict[str, str], workers: int) -> dict[str, Any]:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(
            git(
                "status",
                "--porcelain",
                "--",
                "memoryhub",
                "accounts",
                "projects",
                "templates",
                "manage.py",
                "pyproject.toml",
            )
        ),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": model,
        "postgresql": db_facts.get("version", "?").split(" on ")[0],
        "pg_settings": {k: v for k, v in db_facts.items() if k != "version"},
        "python": sys.version.split()[0],
        "gunicorn": f"{workers} sync workers",
    }


def facts_line(facts: dict[str, Any]) -> str:
    pg = facts["pg_settings"]
    commit = facts["commit"] + (" + uncommitted changes" if facts["uncommitted_changes"] else "")
    return (
        f"{facts['date']} · commit {commit} · nproc {facts['nproc']}, {facts['cpu']} · "
        f"{facts['postgresql']} (fsync {pg.get('fsync')}, shared_buffers "
        f"{pg.get('shared_buffers')}) · gunicorn {facts['gunicorn']} · Python {facts['python']}"
    )


def git(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 — fixed argv, no shell
        ["git", *args],  # noqa: S607 — git from PATH, as a developer runs it
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else "?"


def ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"
