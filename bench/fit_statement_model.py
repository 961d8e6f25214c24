"""Fit the offline extractor's statement model (memoryhub/pipeline/extractor/statements.py).

    .venv/bin/python bench/fit_statement_model.py [--cv] [--write]

Training data: every user sentence of the corpus sessions whose split is NOT "holdout" (the
holdout split is the validation set: it is never read here). A sentence is durable when one
planted memory's `must_contain` substrings all occur in it; its kind is that memory's kind.
An L2-regularised logistic regression over `statements.features`, fitted by Newton's method
(deterministic, numpy): durable sentences against every other user sentence. (Rule vs project
knowledge is the hand-written `statements.is_norm`; --cv reports its agreement with the labels.)

--cv prints leave-one-split-out numbers (each tuned split in turn is left out of the fit and
scored), which is how the threshold was chosen. --writers is the stricter check: for each
independent writer's split in turn, the model is fitted without that writer and the whole
extractor (rules + that model) is scored on the writer's sessions — how it does on someone whose
sessions it never saw. --write regenerates
memoryhub/pipeline/extractor/statement_weights.py.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extractor_quality import CORPUS, load_corpus, score  # noqa: E402

from memoryhub.pipeline.extractor import sentences as sentence_rules  # noqa: E402
from memoryhub.pipeline.extractor.records import (  # noqa: E402
    clean_user_text,
    expand_records,
    readable_text,
)
from memoryhub.pipeline.extractor.sentences import _TODO_EN, _TODO_ZH  # noqa: E402
from memoryhub.pipeline.extractor.statements import features, is_norm, one_off  # noqa: E402
from memoryhub.sessions.records import USER  # noqa: E402

WEIGHTS_FILE = (
    Path(__file__).resolve().parent.parent
    / "memoryhub"
    / "pipeline"
    / "extractor"
    / "statement_weights.py"
)
L2 = 1.0
VALIDATION_SPLIT = "holdout"


def examples(corpus: Path = CORPUS) -> list[dict[str, Any]]:
    """One row per user sentence of the tuned splits: text, split, durable, kind, caught (the
    trigger rules already take it)."""
    rows: list[dict[str, Any]] = []
    for session in load_corpus(corpus):
        if session.split == VALIDATION_SPLIT:
            continue
        for record in expand_records(session.records):
            if record.type != USER:
                continue
            raw = readable_text(record)
            if raw is None:
                continue
            first = len(rows)
            for sentence in sentence_rules.split_sentences(clean_user_text(raw)):
                s = sentence_rules._strip_fillers(sentence)
                if not s:
                    continue
                planted = [
                    p
                    for p in session.planted
                    if all(m.lower() in s.lower() for m in p["must_contain"])
                ]
                kinds = (
                    {planted[0]["kind"], *planted[0].get("also_kinds", ())} if planted else set()
                )
                rows.append(
                    {
                        "text": s,
                        "split": session.split,
                        "session": session.name,
                        "durable": bool(planted),
                        "kinds": kinds,
                        "caught": sentence_rules._classify(sentence, record.index, statements=False)
                        is not None,
                        "candidate": sentence_rules.statement_candidate(s) and not one_off(s),
                    }
                )
            # Independent writers label a memory by one phrase of a message that may state it
            # over several sentences ("Lock updates go in their own PR. In the spring we…"): the
            # other candidate sentences of such a message are unknown, not negatives.
            message = rows[first:]
            if "independent" in session.split and any(r["durable"] for r in message):
                for row in message:
                    row["unknown"] = not row["durable"] and row["candidate"]
    return rows


def training_rows(corpus: Path = CORPUS) -> list[dict[str, Any]]:
    """The rows the model is fitted on: every example but the unknown ones."""
    return [row for row in examples(corpus) if not row.get("unknown")]


def _matrix(rows: Sequence[dict[str, Any]], names: list[str]) -> np.ndarray:
    index = {n: i for i, n in enumerate(names)}
    x = np.zeros((len(rows), len(names)))
    for r, row in enumerate(rows):
        for name, value in features(row["text"]).items():
            if name in index:
                x[r, index[name]] = value
    return x


def fit(rows: Sequence[dict[str, Any]], target: str) -> dict[str, float]:
    """Logistic regression (L2 on every weight but the bias) by Newton's method. Every user
    sentence takes part, also those the hard filters keep from the model (questions…): they
    teach the weights of what they share with candidates ("please", "you", "the …")."""
    names = sorted({n for row in rows for n in features(row["text"])})
    x = _matrix(rows, names)
    y = np.array([1.0 if row[target] else 0.0 for row in rows])
    w = np.zeros(len(names))
    penalty = np.full(len(names), L2)
    penalty[names.index("bias")] = 1e-6
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty * w
        hessian = (x.T * (p * (1 - p))) @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return {n: round(float(v), 4) for n, v in zip(names, w, strict=True) if abs(v) >= 1e-4}


def _norm_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        kinds = row["kinds"]
        if _TODO_EN.search(row["text"]) or _TODO_ZH.search(row["text"]):
            continue  # a to-do is project knowledge by its own rule
        if row["durable"] and kinds & {"rule", "project"} and not {"rule", "project"} <= kinds:
            out.append({**row, "norm": "rule" in kinds})
    return out


def _prob(weights: dict[str, float], text: str) -> float:
    z = sum(weights.get(n, 0.0) * v for n, v in features(text).items())
    return float(1.0 / (1.0 + np.exp(-z)))


def cross_validate(rows: Sequence[dict[str, Any]]) -> None:
    splits = sorted({r["split"] for r in rows})
    by_threshold: dict[float, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for held in splits:
        train = [r for r in rows if r["split"] != held]
        test = [r for r in rows if r["split"] == held]
        durable = fit(train, "durable")
        for row in test:
            p = _prob(durable, row["text"])
            for t in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
                tally = by_threshold[t]
                if row["candidate"] and p >= t:
                    tally[0] += row["durable"]  # true positive (model alone)
                    tally[1] += 1  # predicted
                    if not row["caught"]:
                        tally[2] += row["durable"]  # added on top of the rules
                        tally[3] += not row["durable"]  # false positive added
    positives = sum(r["durable"] for r in rows)
    print(f"leave-one-split-out over {splits}: {len(rows)} sentences, {positives} durable")
    print("| threshold | model precision | model recall | added TP beyond rules | added FP |")
    print("|---:|---:|---:|---:|---:|")
    for t, (tp, predicted, added_tp, added_fp) in sorted(by_threshold.items()):
        precision = tp / predicted if predicted else 1.0
        print(f"| {t} | {precision:.3f} | {tp / positives:.3f} | {added_tp} | {added_fp} |")
    norm_rows = _norm_rows(rows)
    right = sum(is_norm(row["text"]) == row["norm"] for row in norm_rows)
    print(f"is_norm agrees with the rule/project label on {right}/{len(norm_rows)} sentences")


def leave_one_writer_out(rows: Sequence[dict[str, Any]]) -> None:
    """Fit without each independent writer in turn; score the whole extractor on that writer."""
    from memoryhub.pipeline.extractor import statement_weights

    sessions = load_corpus()
    writers = sorted({r["split"] for r in rows if "independent writer" in r["split"]})
    shipped = statement_weights.DURABLE
    print("| writer left out | planted | precision | recall | statement rule right/predicted |")
    print("|---|---:|---:|---:|---:|")
    try:
        for held in writers:
            statement_weights.DURABLE = fit([r for r in rows if r["split"] != held], "durable")
            report = score([s for s in sessions if s.split == held])
            rule = report.by_rule.get("statement")
            o = report.overall
            print(
                f"| {held} | {o.planted} | {100 * o.precision:.1f} % | {100 * o.recall:.1f} % | "
                f"{rule.tp if rule else 0}/{rule.predicted if rule else 0} |"
            )
    finally:
        statement_weights.DURABLE = shipped


def _render(durable: dict[str, float]) -> str:
    def block(weights: dict[str, float]) -> str:
        ordered = sorted(weights.items(), key=lambda item: (-abs(item[1]), item[0]))
        return "\n".join(f'    "{name}": {value},' for name, value in ordered)

    return (
        '"""Weights of the statement model (generated by bench/fit_statement_model.py --write;\n'
        'fitted on the tuned corpus splits, never on the validation split "holdout")."""\n\n'
        "DURABLE: dict[str, float] = {\n"
        f"{block(durable)}\n"
        "}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="leave-one-split-out numbers")
    parser.add_argument("--write", action="store_true", help="regenerate the weights file")
    parser.add_argument(
        "--writers", action="store_true", help="leave-one-writer-out scores of the whole extractor"
    )
    args = parser.parse_args(argv)
    rows = training_rows()
    if args.cv:
        cross_validate(rows)
    if args.writers:
        leave_one_writer_out(rows)
    durable = fit(rows, "durable")
    if args.write:
        WEIGHTS_FILE.write_text(_render(durable), encoding="utf-8")
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
