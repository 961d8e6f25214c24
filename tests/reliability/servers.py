"""Real processes for fault tests: a TCP proxy that can cut a connection like a restarting
server, and gunicorn serving the test database."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class CuttableProxy:
    """Forwards 127.0.0.1:port to target. `cut()` closes the listener and resets every open
    connection (what clients see when the server behind restarts); `restore()` listens again."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.listener: socket.socket | None = None
        self.conns: set[socket.socket] = set()
        self.lock = threading.Lock()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            self.listener.close()
            self.listener = None
        with self.lock:
            for conn in self.conns:
                with contextlib.suppress(OSError):
                    # shutdown wakes the forwarding threads blocked in recv(); close alone won't.
                    conn.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    conn.close()
            self.conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.conns |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    # The other direction's thread is blocked in recv() on one of these: close
                    # alone neither wakes it nor ends the TCP connection (the database backend
                    # behind stayed open until the test run ended); shutdown does both.
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()


@contextlib.contextmanager
def proxied_test_database() -> Iterator[tuple[CuttableProxy, str]]:
    """A CuttableProxy in front of the test database and a DATABASE_URL through it. On exit
    the proxy is cut and this waits (at most 10 s) until the backends it served have ended,
    so that the test database can be dropped."""
    s = connection.settings_dict
    proxy = CuttableProxy(s["HOST"] or "127.0.0.1", int(s["PORT"] or 5432))
    proxy.restore()
    try:
        yield proxy, f"postgres://{s['USER']}:{s['PASSWORD']}@127.0.0.1:{proxy.port}/{s['NAME']}"
    finally:
        proxy.cut()
        with connection.cursor() as cursor:
            for _ in range(100):
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid()"
                )
                if cursor.fetchone()[0] == 0:
                    break
                time.sleep(0.1)


@contextlib.contextmanager
def gunicorn(env: dict[str, str], workers: int = 1) -> Iterator[str]:
    """gunicorn memoryhub.wsgi on a free port with `env`; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen(  # noqa: S603 — fixed argv
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "memoryhub.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--no-control-socket",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/healthz", timeout=5)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        stop_group(proc)


@contextlib.contextmanager
def asgi_gunicorn(
    env: dict[str, str],
    *,
    log: Path,
    ready: Callable[[str], bool],
    workers: int = 1,
    timeout: float = 90,
) -> Iterator[str]:
    """The server `make run` starts (gunicorn, uvicorn workers, memoryhub.asgi) on a free
    port with `env`, its output in `log`; yields its base URL once `ready(base)` holds."""
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(  # noqa: S603 — fixed argv
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "memoryhub.asgi:application",
                "--worker-class",
                "uvicorn_worker.UvicornWorker",
                "--workers",
                str(workers),
                "--bind",
                f"127.0.0.1:{port}",
                "--graceful-timeout",
                "5",
                "--no-control-socket",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.TransportError):
                if ready(base):
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        yield base
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen[Any], timeout: float = 20) -> None:
    """SIGTERM a process started with start_new_session and its children; SIGKILL if slow."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
