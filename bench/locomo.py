"""LoCoMo-R, variant T (../shared/reference/benchmarks.md §5.1), through the real HTTP API.

    bench/pg.sh                                       # a throwaway PostgreSQL (as root)
    export BENCH_DATABASE_URL=$(bench/pg.sh url)
    .venv/bin/python bench/locomo.py [--json FILE] [--dump-k100 FILE] [--data PATH]

A fresh database memoryhub_bench_<random> (dropped at the end), `gunicorn memoryhub.wsgi` with
2 sync workers, one project per conversation (locomo-<sample_id>), every dialog turn one memory
by bulk import (content "{speaker}: {text}" + " [shares a photo: {caption}]", created_at = the
session's time + turn-index seconds, provenance source.session "session_<n>" and
source.record_start = the turn's index in its session, metadata {dia_id}, importance 1, kind
fact, no date in the text), and every question through
GET /api/v1/projects/locomo-<id>/memories/search/?q=…&k=20&as_of=<last session time>.

Rankings side by side in one run (RANKINGS): every question is asked once per ranking, the
projects' recall settings switched between passes (PATCH …/projects/<slug>/): "today" is the
ranking before the context signals (signals off: signal_session 0, signal_neighbour 0,
signal_subject 1), "default" the server's defaults. The report adds, per ranking against
today's, McNemar's paired test on hit@5 and the mean paired difference of MRR.

Scored as §5.1 (Appendix A's scorer, bench/_locomo.py): categories 1–4 (n = 1,536) overall and
per category, category 5 apart, the dev (conv-26, conv-30) and test (8 conversations) splits.
Latency: wall time of each search request at the client, over all 1,986 questions after a
warm-up. The run also re-ranks every question in-process with bench/_locomo.ServerReplica and
reports how often the replica's top 20 equals the server's, which is what makes the in-process
explorations (bench/locomo_explore.py, bench/dense_probe.py) stand for the server.

--dump-k100 FILE: a second pass with k=100 (not timed into the protocol's latency) whose
rankings bench/dense_probe.py fuses with dense scores.

--embeddings: the server runs with EMBEDDINGS_PROVIDER=local (needs `make install-embeddings`);
after the import `manage.py embeddings_backfill` embeds every turn (timed: the worker's cost per
memory written, encode + store), the other rankings run with embedding_weight 0 (lexical, as
without embeddings) and a last ranking "embeddings" runs the defaults with the re-scorer on.
The in-process replica knows no embeddings: its agreement with that ranking is not expected.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import _harness as h
import _locomo as L

PREFIX = "locomo-"
K = 20
WARM_UP = 60
SIGNALS_OFF = {"signal_session": 0, "signal_neighbour": 0, "signal_subject": 1}
# name → the projects' "recall" settings for that pass ({} = the server's defaults).
RANKINGS: dict[str, dict[str, Any]] = {"today": SIGNALS_OFF, "default": {}}


@dataclass
class Answer:
    question: L.Question
    ranked: list[str]  # dia ids, best first
    scores: list[float]
    latency_ms: float


def memories_body(conv: L.Conversation) -> bytes:
    first: dict[int, int] = {}  # session → order of its first turn
    for t in conv.turns:
        first.setdefault(t.session, t.order)
    items = [
        {
            "content": t.content,
            "kind": "fact",
            "importance": 1,
            "created_at": t.created_at.isoformat(),
            "updated_at": t.created_at.isoformat(),
            "source": {"session": L.source_session(t), "record_start": t.order - first[t.session]},
            "metadata": {"dia_id": t.dia_id},
        }
        for t in conv.turns
    ]
    return json.dumps({"items": items}).encode()


def ranked_by(ranked_of: dict[tuple[str, int], list[str]], q: L.Question) -> list[str]:
    return ranked_of[(q.conv, q.index)]


def use_ranking(api: h.Api, convs: Sequence[L.Conversation], recall: dict[str, Any]) -> None:
    for conv in convs:
        api.call(
            "PATCH", f"projects/{PREFIX}{conv.id}/", 200, json={"settings": {"recall": recall}}
        )


def ingest(api: h.Api, convs: Sequence[L.Conversation]) -> dict[str, Any]:
    """One project per conversation, its turns in one bulk request (at most 689 < 1,000)."""
    seconds = 0.0
    for i, conv in enumerate(convs):
        if i > 0:  # bench_stack made the first one
            api.create_project(PREFIX + conv.id)
        body = memories_body(conv)
        response, elapsed = api.post_json(f"projects/{PREFIX}{conv.id}/memories/bulk/", body, 201)
        seconds += elapsed
        if len(response.json()["ids"]) != len(conv.turns):
            raise h.BenchError(f"{conv.id}: bulk import created a different number of memories")
    turns = sum(len(c.turns) for c in convs)
    return {"memories": turns, "seconds": round(seconds, 2), "per_s": round(turns / seconds, 1)}


def search(api: h.Api, conv: L.Conversation, text: str, k: int) -> tuple[list[Any], float]:
    params = {"q": text, "k": str(k), "as_of": conv.now.isoformat()}
    response, elapsed = api.call(
        "GET", f"projects/{PREFIX}{conv.id}/memories/search/", 200, params=params
    )
    results: list[Any] = response.json()["results"]
    return results, elapsed * 1000


def ask_all(api: h.Api, convs: Sequence[L.Conversation], k: int, warm_up: int) -> list[Answer]:
    everything = [(c, q) for c in convs for q in c.questions]
    # Warm-up: questions spread over the conversations, not timed (workers load views, caches
    # fill, the database's pages come in).
    for conv, q in everything[:: max(1, len(everything) // max(1, warm_up))][:warm_up]:
        search(api, conv, q.text, k)
    answers = []
    for n, (conv, q) in enumerate(everything, 1):
        results, latency = search(api, conv, q.text, k)
        answers.append(
            Answer(
                q,
                [r["metadata"]["dia_id"] for r in results],
                [float(r["score"]) for r in results],
                latency,
            )
        )
        if n % 500 == 0:
            h.log(f"  {n:,} / {len(everything):,} questions")
    return answers


def embed_all(stack: h.Stack) -> dict[str, Any]:
    """manage.py embeddings_backfill over every project: what the worker does per memory
    written (encode + store), in one process, timed."""
    started = time.perf_counter()
    summary = h.run_manage(stack.env, "embeddings_backfill", app_dir=stack.app_dir).strip()
    seconds = time.perf_counter() - started
    embedded = int(summary.split()[0])
    return {
        "summary": summary,
        "seconds": round(seconds, 1),
        "per_memory_ms": round(1000 * seconds / max(1, embedded), 2),
    }


def replica_agreement(
    convs: Sequence[L.Conversation], answers: Sequence[Answer], k: int, recall: dict[str, Any]
) -> dict[str, Any]:
    """How often bench/_locomo.ServerReplica (with the same recall settings) returns the
    server's exact top k."""
    by_conv = {c.id: c for c in convs}
    replicas: dict[str, L.ServerReplica] = {}
    knobs = {"search_k1": "k1", "search_b": "b", "search_decay": "decay"}
    settings = {
        knobs.get(name, name): value
        for name, value in recall.items()
        if name != "embedding_weight"  # the replica has no embeddings
    }
    same = same5 = 0
    differing: list[str] = []
    for a in answers:
        conv = by_conv[a.question.conv]
        if conv.id not in replicas:
            replicas[conv.id] = L.ServerReplica(conv, **settings)
        replica = replicas[conv.id]
        mine = [conv.turns[i].dia_id for i, _ in replica.search(a.question.text, k)]
        same += mine == a.ranked
        same5 += mine[:5] == a.ranked[:5]
        if mine != a.ranked and len(differing) < 5:
            differing.append(f"{conv.id}#{a.question.index}")
    n = len(answers)
    return {
        "questions": n,
        "identical_top_k_pct": round(100 * same / n, 2),
        "identical_top5_pct": round(100 * same5 / n, 2),
        "examples_differing": differing,
    }


def latency_line(label: str, values: Sequence[float]) -> str:
    p50, p95, p99 = (h.percentile(values, q) for q in (0.5, 0.95, 0.99))
    return (
        f"| {label} | {len(values):,} | {h.ms(p50)} | {h.ms(p95)} | {h.ms(p99)} "
        f"| {h.ms(max(values))} |"
    )


def run(args: argparse.Namespace, admin_url: str) -> int:
    data = Path(args.data)
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    if digest != L.DATA_SHA256:
        h.log(f"warning: {data} has sha256 {digest}, not the protocol's {L.DATA_SHA256}")
    convs = L.load(data)
    rankings = {name: RANKINGS[name] for name in args.rankings.split(",")}
    embed_stats: dict[str, Any] = {}
    if args.embeddings:
        os.environ["EMBEDDINGS_PROVIDER"] = "local"  # bench_stack's server inherits it
        rankings = {name: {"embedding_weight": 0, **recall} for name, recall in rankings.items()}
        rankings["embeddings"] = {}  # the defaults, embedding_weight 0.5
    started = time.perf_counter()
    answers: dict[str, list[Answer]] = {}
    with h.bench_stack(admin_url, PREFIX + convs[0].id) as stack:
        h.log(f"bulk import of {sum(len(c.turns) for c in convs):,} turns into 10 projects")
        ingest_stats = ingest(stack.api, convs)
        if args.embeddings:
            h.log("embedding every turn (manage.py embeddings_backfill, local MiniLM)")
            embed_stats = embed_all(stack)
            h.log(f"  {embed_stats['summary']} in {embed_stats['seconds']} s")
        for name, recall in rankings.items():
            use_ranking(stack.api, convs, recall)
            h.log(f"ranking {name!r}: {sum(len(c.questions) for c in convs):,} questions, k={K}")
            answers[name] = ask_all(stack.api, convs, K, args.warm_up)
        dump: list[dict[str, Any]] = []
        if args.dump_k100:
            last = list(rankings)[-1]
            h.log(f"second pass, k=100, ranking {last!r}, for bench/dense_probe.py")
            for conv in convs:
                for q in conv.questions:
                    results, latency = search(stack.api, conv, q.text, 100)
                    dump.append(
                        {
                            "conv": conv.id,
                            "index": q.index,
                            "latency_ms": round(latency, 3),
                            "results": [[r["metadata"]["dia_id"], r["score"]] for r in results],
                        }
                    )
        facts = stack.facts
    wall = time.perf_counter() - started

    print(f"LoCoMo-R variant T through HTTP · {h.facts_line(facts)}")
    rows: dict[str, list[L.Scored]] = {}
    report: dict[str, Any] = {}
    for name, recall in rankings.items():
        ranked_of = {(a.question.conv, a.question.index): a.ranked for a in answers[name]}
        rows[name] = L.score_all((a.question for a in answers[name]), partial(ranked_by, ranked_of))
        agreement = replica_agreement(convs, answers[name], K, recall)
        lat_all = [a.latency_ms for a in answers[name]]
        empty = sum(1 for a in answers[name] if not a.ranked)
        report[name] = {
            "recall_settings": recall,
            "summary": {g: L.summarize(m) for g, m in L.groups(rows[name]).items()},
            "latency_ms": {
                "n": len(lat_all),
                **{f"p{q}": h.percentile(lat_all, q / 100) for q in (50, 95, 99)},
            },
            "replica_agreement": agreement,
            "questions_without_results": empty,
        }
        print()
        print(f"## ranking {name!r} (recall settings {json.dumps(recall)})")
        print()
        print(L.summary_table(rows[name]))
        print()
        print("| search latency (client wall, ms) | n | p50 | p95 | p99 | max |")
        print("|---|---:|---:|---:|---:|---:|")
        print(latency_line("all 1,986 questions", lat_all))
        print()
        print(
            f"- in-process replica vs server: identical top-{K} for "
            f"{agreement['identical_top_k_pct']} % of questions, identical top-5 for "
            f"{agreement['identical_top5_pct']} %; {empty} questions without a result."
        )
    print()
    print("## side by side (categories 1–4, n = 1,536; paired against the first ranking)")
    print()
    base_name = next(iter(rankings))
    base = [r for r in rows[base_name] if r.question.cat in L.SCORED_CATS]
    print(
        "| ranking | hit@1 | hit@5 | hit@10 | hit@20 | MRR | NDCG@10 | S-hit@1 | S-hit@3 "
        "| dev hit@5 | test hit@5 | search p50 / p95 ms | hit@5 McNemar | MRR Δ (95 %) |"
    )
    print("|---|" + "---:|" * 11 + "---|---|")
    for name in rankings:
        main = [r for r in rows[name] if r.question.cat in L.SCORED_CATS]
        s_ = L.summarize(main)
        groups = L.groups(rows[name])
        dev = L.summarize(groups["dev 1–4 (conv-26, conv-30)"])["hit@5"]
        test = L.summarize(groups["test 1–4 (8 conversations)"])["hit@5"]
        lat = report[name]["latency_ms"]
        cells = " | ".join(
            f"{s_[m]:.1f}"
            for m in ("hit@1", "hit@5", "hit@10", "hit@20", "mrr", "ndcg@10", "S-hit@1", "S-hit@3")
        )
        paired = (
            "– | –"
            if name == base_name
            else f"{L.mcnemar(base, main, 'hit@5')} | {L.paired_difference(base, main, 'mrr')}"
        )
        print(
            f"| {name} | {cells} | {dev:.1f} | {test:.1f} | {h.ms(lat['p50'])} / "
            f"{h.ms(lat['p95'])} | {paired} |"
        )
    print()
    print(
        f"- ingest: {ingest_stats['memories']:,} memories in 10 bulk requests, "
        f"{ingest_stats['seconds']} s ({ingest_stats['per_s']:,} memories/s); run wall "
        f"{wall:,.0f} s. k={K}: MRR is MRR@20."
    )
    if embed_stats:
        print(
            f"- embeddings: {embed_stats['summary']} in {embed_stats['seconds']} s "
            f"({embed_stats['per_memory_ms']} ms per memory, encode + store, one process)."
        )
    if args.json:
        out = {
            "machine": facts,
            "protocol": "LoCoMo-R v1 variant T (benchmarks.md §5.1), through HTTP",
            "data_sha256": digest,
            "k": K,
            "ingest": ingest_stats,
            "embeddings": embed_stats,
            "rankings": report,
            "per_question": {
                name: [
                    {
                        "conv": a.question.conv,
                        "index": a.question.index,
                        "cat": a.question.cat,
                        "ranked": a.ranked,
                        "latency_ms": round(a.latency_ms, 3),
                    }
                    for a in answers[name]
                ]
                for name in rankings
            },
        }
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    if args.dump_k100:
        Path(args.dump_k100).write_text(json.dumps(dump) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", default=str(L.DATA), help="locomo10.json (default: %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers to FILE")
    parser.add_argument("--dump-k100", metavar="FILE", help="k=100 rankings for dense_probe.py")
    parser.add_argument("--warm-up", type=int, default=WARM_UP, help="untimed searches first")
    parser.add_argument(
        "--rankings",
        default=",".join(RANKINGS),
        help=f"comma-separated, from {', '.join(RANKINGS)}; the first is the paired baseline",
    )
    parser.add_argument(
        "--embeddings",
        action="store_true",
        help="embed every turn with the local model; adds the ranking 'embeddings' (re-scorer)",
    )
    args = parser.parse_args(argv)
    return h.run_bench("bench/locomo.py", run, args)


if __name__ == "__main__":
    sys.exit(main())
