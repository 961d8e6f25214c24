"""LoCoMo-R in-process: checks the scorer against anchor A, then tries ranking variants.

    .venv/bin/python bench/locomo_explore.py [--json FILE] [--data PATH]

No server and no database: the app's tokenizer and decay table are loaded from its files
(bench/_locomo.py), and bench/locomo.py shows that bench/_locomo.ServerReplica returns the
server's own top 20 for > 99 % of questions. Variants are tuned on the dev split (conv-26,
conv-30) only, then the dev-chosen settings are reported on all ten and on the 8-conversation
test split (§5.1.10), with McNemar's paired test on hit@5 against the server's ranking.

1. Scorer check: Appendix A's config A (Lucene BM25 k1 1.2 b .75, [a-z0-9]+, Lucene's 33
   stopwords, Snowball, "Speaker: text", full ranking with zero-score tail) must give n = 1,536
   (282 / 321 / 92 / 841) and the §5.2 numbers (hit@5 52.7, MRR 40.6).
2. What the server's choices cost: stopword list, k1/b, meow decay (on/off), as a grid on dev,
   and a softened decay raw × (1 − s + s·weight) for strengths s between off (0) and the app (1).

--signals: the context signals instead (memoryhub/recall/signals.py): a grid of the three
weights on dev, then each signal alone and all three at the defaults on dev, all ten and test,
with McNemar on hit@5 against the ranking without them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _locomo as L

K = 20
ANCHOR_A = {"hit@1": 29.7, "hit@5": 52.7, "hit@10": 61.7, "hit@20": 69.6, "mrr": 40.6}
ANCHOR_COUNTS = {1: 282, 2: 321, 3: 92, 4: 841}
K1S = (0.3, 0.6, 0.9, 1.2, 1.5, 2.0)
BS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75)
STRENGTHS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
SHOWN = ("hit@1", "hit@5", "hit@10", "hit@20", "all@10", "mrr", "ndcg@10", "S-hit@3")


@dataclass(frozen=True)
class Variant:
    name: str
    k1: float = 1.5
    b: float = 0.75
    decay: float = 1.0  # strength of meow's decay: 1 = the app's, 0 = none
    stopwords: frozenset[str] | None = None  # None: the app's list
    # The context signals (memoryhub/recall/signals.py): off unless given, so the BM25 variants
    # compare with the ranking before them.
    signal_session: float = 0.0
    signal_neighbour: float = 0.0
    signal_subject: float = 1.0

    def ranker(self, conv: L.Conversation) -> Callable[[L.Question], list[str]]:
        replica = L.ServerReplica(
            conv,
            k1=self.k1,
            b=self.b,
            decay=self.decay,
            stopwords=self.stopwords,
            signal_session=self.signal_session,
            signal_neighbour=self.signal_neighbour,
            signal_subject=self.signal_subject,
        )
        return lambda q: [conv.turns[i].dia_id for i, _ in replica.search(q.text, K)]


def evaluate(variant: Variant, convs: Sequence[L.Conversation]) -> list[L.Scored]:
    rows: list[L.Scored] = []
    for conv in convs:
        rows += L.score_all(conv.questions, variant.ranker(conv))
    return rows


def main_rows(rows: Sequence[L.Scored]) -> list[L.Scored]:
    return [r for r in rows if r.question.cat in L.SCORED_CATS]


def check_scorer(convs: Sequence[L.Conversation]) -> tuple[str, dict[str, Any]]:
    tok = L.tokenizer(L.LUCENE_STOPWORDS)
    rows: list[L.Scored] = []
    for conv in convs:
        index = L.Bm25([tok(t.content) for t in conv.turns], k1=1.2, b=0.75)
        ids = [t.dia_id for t in conv.turns]

        def ranked(q: L.Question, index: L.Bm25 = index, ids: list[str] = ids) -> list[str]:
            return [ids[j] for j in index.rank(tok(q.text))]  # full ranking, zero-score tail

        rows += L.score_all(conv.questions, ranked)
    main = main_rows(rows)
    counts = {c: sum(1 for r in main if r.question.cat == c) for c in ANCHOR_COUNTS}
    got = L.summarize(main)
    ok = (
        len(main) == 1536
        and counts == ANCHOR_COUNTS
        and all(abs(got[m] - v) < 0.051 for m, v in ANCHOR_A.items())
    )
    text = (
        f"Scorer check (Appendix A config A, in-process): n = {len(main):,} "
        f"(cats 1/2/3/4: {counts[1]}/{counts[2]}/{counts[3]}/{counts[4]}); "
        + ", ".join(f"{m} {got[m]:.1f} (anchor {v})" for m, v in ANCHOR_A.items())
        + f" → {'REPRODUCED' if ok else 'MISMATCH'}\n\n"
        + L.summary_table(rows)
    )
    return text, {"ok": ok, "counts": counts, "summary": got}


def table(
    results: Sequence[tuple[str, Sequence[L.Scored]]], base: Sequence[L.Scored] | None
) -> str:
    head = "| variant | n | " + " | ".join(L._label(m) for m in SHOWN) + " |"
    head += " McNemar hit@5 vs server |" if base is not None else ""
    lines = [head, "|---|---:|" + "---:|" * len(SHOWN) + ("---|" if base is not None else "")]
    for name, rows in results:
        main = main_rows(rows)
        s = L.summarize(main)
        line = f"| {name} | {s['n']:,} | " + " | ".join(f"{s[m]:.1f}" for m in SHOWN) + " |"
        if base is not None:
            line += f" {L.mcnemar(main_rows(base), main, 'hit@5')} |"
        lines.append(line)
    return "\n".join(lines)


def grid_table(hits: dict[tuple[float, float], float], title: str) -> str:
    lines = [f"| {title} | " + " | ".join(f"b={b}" for b in BS) + " |"]
    lines.append("|---|" + "---:|" * len(BS))
    for k1 in K1S:
        lines.append(f"| k1={k1} | " + " | ".join(f"{hits[(k1, b)]:.1f}" for b in BS) + " |")
    return "\n".join(lines)


SESSIONS = (0.1, 0.2, 0.3, 0.5)
NEIGHBOURS = (0.1, 0.2, 0.3, 0.5)
SUBJECTS = (1.2, 1.3, 1.5)


def signals_run(convs: Sequence[L.Conversation], out: dict[str, Any]) -> None:
    dev = [c for c in convs if c.id in L.DEV]
    test = [c for c in convs if c.id not in L.DEV]
    today = Variant("today (no signals)", 0.3, 0.0, 0.1)
    grid = {}
    for s in SESSIONS:
        for n in NEIGHBOURS:
            for u in SUBJECTS:
                v = Variant("", 0.3, 0.0, 0.1, None, s, n, u)
                grid[(s, n, u)] = L.summarize(main_rows(evaluate(v, dev)))
    out["signals_dev_grid"] = {f"{s},{n},{u}": v for (s, n, u), v in grid.items()}
    print("Dev split: hit@5 / MRR over session × neighbour weights, per subject factor")
    for u in SUBJECTS:
        print()
        print(f"| subject {u} | " + " | ".join(f"neighbour {n}" for n in NEIGHBOURS) + " |")
        print("|---|" + "---:|" * len(NEIGHBOURS))
        for s in SESSIONS:
            cells = (grid[(s, n, u)] for n in NEIGHBOURS)
            print(
                f"| session {s} | "
                + " | ".join(f"{c['hit@5']:.1f} / {c['mrr']:.1f}" for c in cells)
                + " |"
            )
    d = L.SIGNAL_DEFAULTS
    s0, n0, u0 = d["signal_session"], d["signal_neighbour"], d["signal_subject"]
    chosen = [
        today,
        Variant(f"+ session coherence {s0}", 0.3, 0.0, 0.1, None, s0, 0.0, 1.0),
        Variant(f"+ neighbour smoothing {n0}", 0.3, 0.0, 0.1, None, 0.0, n0, 1.0),
        Variant(f"+ subject × {u0}", 0.3, 0.0, 0.1, None, 0.0, 0.0, u0),
        Variant("all three (the default)", 0.3, 0.0, 0.1, None, s0, n0, u0),
    ]
    for split_name, split in (("dev", dev), ("all ten", convs), ("test (8)", test)):
        results = [(v.name, evaluate(v, split)) for v in chosen]
        print()
        print(f"Signals on {split_name} (categories 1–4):")
        print()
        print(table(results, results[0][1]))
        out[f"signals_{split_name}"] = {n: L.summarize(main_rows(r)) for n, r in results}


def run(args: argparse.Namespace) -> int:
    convs = L.load(Path(args.data))
    dev = [c for c in convs if c.id in L.DEV]
    test = [c for c in convs if c.id not in L.DEV]
    out: dict[str, Any] = {}
    if args.signals:
        signals_run(convs, out)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n")
        return 0

    text, out["scorer_check"] = check_scorer(convs)
    print(text)
    print()

    # Grid on dev: k1 × b, decay on/off, the app's stopwords and Lucene's.
    grid: dict[str, dict[tuple[float, float], dict[str, float]]] = {}
    for decay in (1.0, 0.0):
        for sw_name, sw in (("app", None), ("lucene", L.LUCENE_STOPWORDS)):
            key = f"decay={'on' if decay else 'off'}, stopwords={sw_name}"
            grid[key] = {}
            for k1 in K1S:
                for b in BS:
                    v = Variant("", k1, b, decay, sw)
                    grid[key][(k1, b)] = L.summarize(main_rows(evaluate(v, dev)))
    out["dev_grid"] = {
        key: {f"k1={k1},b={b}": s for (k1, b), s in cells.items()} for key, cells in grid.items()
    }
    print("Dev split (conv-26, conv-30; n = 231): hit@5 over k1 × b")
    for key, cells in grid.items():
        if key == "decay=on, stopwords=lucene":
            continue  # in the JSON; the app's list wins with decay too
        print()
        print(grid_table({kb: s["hit@5"] for kb, s in cells.items()}, key))

    def best(key: str) -> tuple[float, float]:
        cells = grid[key]
        return max(cells, key=lambda kb: (cells[kb]["hit@5"], cells[kb]["mrr"]))

    on_k1, on_b = best("decay=on, stopwords=app")
    off_k1, off_b = best("decay=off, stopwords=app")
    lu_k1, lu_b = best("decay=off, stopwords=lucene")
    # Decay strength on dev, at the app's k1/b and at the dev-best (no decay) k1/b.
    sweep: dict[str, dict[float, dict[str, float]]] = {}
    for k1, b in ((1.5, 0.75), (off_k1, off_b)):
        key = f"k1 {k1} b {b}"
        sweep[key] = {
            st: L.summarize(main_rows(evaluate(Variant("", k1, b, st), dev))) for st in STRENGTHS
        }
    out["dev_decay_strength"] = sweep
    print()
    print(
        "Dev: decay strength s (score = raw × (1 − s + s·meow weight); s=1 is the app), hit@5 / MRR"
    )
    print()
    print("| k1, b | " + " | ".join(f"s={st}" for st in STRENGTHS) + " |")
    print("|---|" + "---:|" * len(STRENGTHS))
    for key, by_strength in sweep.items():
        row = " | ".join(
            f"{by_strength[st]['hit@5']:.1f} / {by_strength[st]['mrr']:.1f}" for st in STRENGTHS
        )
        print(f"| {key} | {row} |")
    soft = max(
        (st for st in STRENGTHS if st > 0),
        key=lambda st: (sweep[f"k1 {off_k1} b {off_b}"][st]["hit@5"], -st),
    )

    chosen: list[Variant] = [
        Variant("MemoryHub default (k1 0.3 b 0, decay strength 0.1)", 0.3, 0.0, 0.1),
        Variant("meow-memory exact (BM25 k1 1.5 b .75 × full decay)"),
        Variant("no decay", decay=0.0),
        Variant("Lucene stopwords, decay", stopwords=L.LUCENE_STOPWORDS),
        Variant(
            "anchor A: k1 1.2 b .75, no decay, Lucene stopwords", 1.2, 0.75, 0.0, L.LUCENE_STOPWORDS
        ),
        Variant("k1 0.9 b .4 (anchor G), decay", 0.9, 0.4),
        Variant("k1 0.9 b .4 (anchor G), no decay", 0.9, 0.4, 0.0),
        Variant(f"dev-best with decay: k1 {on_k1} b {on_b}, decay", on_k1, on_b),
        Variant(f"dev-best: k1 {off_k1} b {off_b}, no decay", off_k1, off_b, 0.0),
        Variant(f"k1 {off_k1} b {off_b}, decay strength {soft}", off_k1, off_b, soft),
        # Off the grid's corner: the middle of the dev plateau (b 0.2 ties for every k1).
        Variant("k1 0.9 b 0.2, no decay (plateau)", 0.9, 0.2, 0.0),
        Variant(f"k1 0.9 b 0.2, decay strength {soft}", 0.9, 0.2, soft),
        Variant("k1 1.5 b .75, no decay, Lucene stopwords", 1.5, 0.75, 0.0, L.LUCENE_STOPWORDS),
        # Contraction fragments ("caroline's" → carolin + s): 's' is in ~40 % of memories.
        Variant("meow exact + fragment stopwords", stopwords=L.APP_STOPWORDS_PLUS),
        Variant(
            f"k1 {off_k1} b {off_b}, no decay, + fragment stopwords",
            off_k1,
            off_b,
            0.0,
            L.APP_STOPWORDS_PLUS,
        ),
        Variant(
            f"dev-best Lucene stopwords: k1 {lu_k1} b {lu_b}, no decay",
            lu_k1,
            lu_b,
            0.0,
            L.LUCENE_STOPWORDS,
        ),
    ]

    for split_name, split in (("dev", dev), ("all ten", convs), ("test (8)", test)):
        results = [(v.name, evaluate(v, split)) for v in chosen]
        print()
        print(f"Variants on {split_name} (categories 1–4, top {K} as the server returns it):")
        print()
        print(table(results, results[0][1]))
        out[f"variants_{split_name}"] = {
            name: L.summarize(main_rows(rows)) for name, rows in results
        }
        if split_name == "all ten":
            print()
            print("Per category, all ten, hit@5 / MRR:")
            print()
            cats = (4, 1, 2, 3)
            print("| variant | " + " | ".join(L.CAT_NAMES[c] for c in cats) + " |")
            print("|---|" + "---:|" * len(cats))
            for name, rows in results:
                per_cat = []
                for c in cats:
                    s = L.summarize([r for r in rows if r.question.cat == c])
                    per_cat.append(f"{s['hit@5']:.1f} / {s['mrr']:.1f}")
                print(f"| {name} | " + " | ".join(per_cat) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", default=str(L.DATA), help="locomo10.json (default: %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    parser.add_argument("--signals", action="store_true", help="tune the context signals")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
