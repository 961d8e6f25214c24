"""What the memoryhub-agent hooks cost a Claude Code session: wall time of each hook command,
run as Claude Code runs it (a new process, the hook JSON on stdin), against gunicorn on
PostgreSQL through real HTTP.

    bench/pg.sh                                       # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/agent_cli.py [--runs 50]

The bank holds 200 memories (rules and facts with keywords). Each run is one Claude Code turn:
`prompt` (recall), two transcript lines appended, `push` (Stop). Separately: `--version` (the
interpreter's start-up and the import, no network), `session-start`, the first `push` of a
5,000-line transcript, `pre-compact` and `end`. The database, server and temp dirs are removed
at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _harness
from _harness import ms, percentile

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.agent_cli.claude_code import ClaudeCodeTranscript  # noqa: E402

CLI = str(Path(sys.executable).parent / "memoryhub-agent")
PROJECT = "agents"
TOPICS = ["deploy", "migration", "invoice", "warehouse", "pricing", "search", "login", "cache"]


def run(env: dict[str, str], *args: str, payload: dict[str, object] | None = None) -> float:
    """Milliseconds from spawning the command to its exit."""
    started = time.perf_counter()
    result = subprocess.run(  # noqa: S603 - our own CLI, fixed arguments
        [CLI, *args],
        input=json.dumps(payload) if payload else "",
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = (time.perf_counter() - started) * 1000  # ms
    if result.returncode != 0 or result.stderr:
        raise _harness.BenchError(f"{args}: rc {result.returncode} {result.stderr}")
    return elapsed


def hook(event: str, sid: str, path: Path, **fields: object) -> dict[str, object]:
    return {
        "session_id": sid,
        "transcript_path": str(path),
        "cwd": "/home/dev/app",
        "hook_event_name": event,
        **fields,
    }


def row(name: str, values: list[float]) -> str:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return f"| {name} | {len(values)} | {ms(p50)} | {ms(p95) if len(values) > 1 else '–'} |"


def bench(args: argparse.Namespace, admin_url: str) -> int:
    with (
        _harness.bench_stack(admin_url, PROJECT) as stack,
        tempfile.TemporaryDirectory() as tmp,
    ):
        memories = [
            {
                "kind": "rule" if i % 2 else "fact",
                "content": f"Rule {i} about {TOPICS[i % len(TOPICS)]}: keep step {i} documented.",
                "keywords": [TOPICS[i % len(TOPICS)], f"step{i}"],
            }
            for i in range(200)
        ]
        stack.api.post_json(
            f"/projects/{PROJECT}/memories/bulk/",
            json.dumps({"items": memories}).encode(),
            expect=201,
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYHUB_")}
        env |= {
            "HOME": tmp,
            "XDG_STATE_HOME": f"{tmp}/state",
            "XDG_CONFIG_HOME": f"{tmp}/config",
            "MEMORYHUB_URL": stack.server.base_url,
            "MEMORYHUB_TOKEN": stack.api.client.headers["Authorization"].removeprefix("Bearer "),
            "MEMORYHUB_PROJECT": PROJECT,
            "MEMORYHUB_TIMEOUT": "30",
        }
        rows = [row("`--version` (start-up only)", [run(env, "--version") for _ in range(20)])]

        sid = "bench-turns"
        t = ClaudeCodeTranscript(Path(tmp) / f"{sid}.jsonl", sid)
        start = [run(env, "session-start", payload=hook("SessionStart", sid, t.path))]
        prompts, pushes = [], []
        for turn in range(args.runs):
            text = f"How do we handle the {TOPICS[turn % len(TOPICS)]} step {turn}?"
            prompts.append(
                run(env, "prompt", payload=hook("UserPromptSubmit", sid, t.path, prompt=text))
            )
            t.user(text)
            t.say(f"Answer {turn}.")
            pushes.append(
                run(env, "push", payload=hook("Stop", sid, t.path, stop_hook_active=False))
            )
        rows += [
            row("session-start (payload)", start),
            row("prompt (recall)", prompts),
            row("push after one turn (Stop)", pushes),
            row("pre-compact", [run(env, "pre-compact", payload=hook("PreCompact", sid, t.path))]),
            row(
                "end (push rest, end, extract)",
                [run(env, "end", payload=hook("SessionEnd", sid, t.path))],
            ),
        ]

        big = ClaudeCodeTranscript(Path(tmp) / "big.jsonl", "bench-big")
        for turn in range(1_250):
            big.user(f"Turn {turn}: " + "please look at the warehouse code. " * 10)
            big.bash(f"pytest -k case{turn}", "1 passed in 0.01s")
        lines = big.line_count()
        size = big.path.stat().st_size / _harness.MiB
        first = run(env, "push", payload=hook("Stop", "bench-big", big.path))
        rows.append(row(f"first push, {lines:,} lines ({size:.1f} MiB)", [first]))
        rows.append(
            row(
                "push with nothing new",
                [run(env, "push", payload=hook("Stop", "bench-big", big.path))],
            )
        )

        print(
            f"\nmemoryhub-agent hooks, {stack.facts['date']}, commit {stack.facts['commit']}, "
            f"{stack.facts['nproc']} CPUs, load {os.getloadavg()[0]:.2f}\n"
        )
        print("| hook command | n | p50 ms | p95 ms |\n|---|---:|---:|---:|")
        print("\n".join(rows))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="turns (default 50)")
    return _harness.run_bench("bench/agent_cli.py", bench, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
