"""Precision and recall of the offline extractor on the dev corpus (tests/pipeline/corpus/).

    .venv/bin/python bench/extractor_quality.py [--corpus DIR] [--details] [--json FILE]

--corpus DIR scores another directory of sessions in the same format (default: the corpus
below); every split label found in the sessions' expected.json gets its own row.

Other extractors, same labels and scoring:

    --llm DIR            send each session's typed-memories request (the product's own, as
                         stage 1 sends it) to the LLM configured as for the server (LLM_PROVIDER,
                         LLM_MODEL, LLM_BASE_URL, LLM_API_KEY[_FILE]…), through the product's
                         provider call, with its one repair request; answers are kept in DIR
    --llm-prompts DIR    write those requests to DIR/<name>.prompt.json, for any model to answer
    --predictions DIR    score DIR/<name>.memories.json answers in that typed shape, checked by
                         the product's validator (an answer that stays invalid counts as none)
    --reviewed DIR       score DIR/<name>.memories.json holding {"memories": [{kind, content}]},
                         a person's (or a reviewing model's) picks
    --by-scope           a match needs the planted scope instead of the planted kind

Each session of the corpus is a MewCode record file `<name>.jsonl` with a sidecar
`<name>.expected.json` that lists the planted memories ({kind, must_contain, scope}) and the
distractors, which must not become memories ({must_not_contain}).

Secrets: the corpus files hold `{{secret:NAME}}` placeholders, never a secret-shaped string,
so that secret scanners have nothing to flag (as in tests/secrets_corpus.py). The loader puts
deterministic fake values in their place (`FAKE_SECRETS`, prefixes split in the source).

    .venv/bin/python bench/extractor_quality.py --compare DIR   # DIR holds another memoryhub/

Scoring: a predicted memory is a true positive when its kind is the planted kind (or one of its
`also_kinds`: a few held-out statements are both a fact about the team and a rule of it, and
either kind gives the same project scope) and every `must_contain` substring occurs in its
content (case-insensitive). Each planted memory is
matched at most once, and each prediction too (a maximum bipartite matching, so the order of
the predictions does not matter). Everything predicted and unmatched is a false positive, even
if it looks harmless: the corpus labels what a careful reviewer would keep. A distractor hit is
a prediction whose content contains all of a distractor's substrings; such a hit is also a
false positive. A project memory that matches also has its subcategory compared with the
planted one, which is reported but does not count towards precision. With --by-scope a match
needs the planted scope instead of the planted kind (user and feedback are the user's scope,
the other kinds the project's): independent reviewers agree on scope far more often than on
rule vs project knowledge vs lesson.

Prints Markdown tables: overall, per kind (precision over predictions of that kind, recall over
planted memories of that kind), per rule (precision only: rules have no planted counterpart)
and per language. With --details, also every miss, false positive and distractor hit.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import string
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import memoryhub.pipeline.extractor as extractor_package
from memoryhub.memories.kinds import DEFAULT_SCOPE, Kind
from memoryhub.pipeline import prompts
from memoryhub.pipeline.extractor import ExtractedMemory, SourceRecord, extract, source_records
from memoryhub.sessions.records import record_from_dict

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "pipeline" / "corpus"
_ALNUM = string.ascii_letters + string.digits
_SECRET_PLACEHOLDER = re.compile(r"\{\{secret:(\w+)\}\}")


def _fake(seed: str, alphabet: str, length: int) -> str:
    rng = random.Random(f"extractor-corpus:{seed}")  # noqa: S311 - fake data, not a secret
    return "".join(rng.choice(alphabet) for _ in range(length))


# Fake values, each in the shape of its kind; the prefixes are split so that the source holds
# no secret-shaped string either.
FAKE_SECRETS = {
    "github_token": "gh" + "p_" + _fake("github", _ALNUM, 36),
    "aws_key_id": "AK" + "IA" + _fake("aws", string.ascii_uppercase + string.digits, 16),
    "stripe_webhook_secret": "wh" + "sec_" + _fake("stripe", _ALNUM, 32),
    "aliyun_access_key": "LT" + "AI5t" + _fake("aliyun", _ALNUM, 20),
    "redis_password": "Rds#" + _fake("redis", _ALNUM, 10) + "!",
    "db_password": "hunter2-" + _fake("db", _ALNUM, 10),
}


def fill_secrets(text: str) -> str:
    """`text` with every {{secret:NAME}} placeholder replaced by its fake value."""
    return _SECRET_PLACEHOLDER.sub(lambda m: FAKE_SECRETS[m.group(1)], text)


def secrets_of(text: str) -> list[str]:
    """The fake values that the placeholders in `text` stand for."""
    return [FAKE_SECRETS[name] for name in dict.fromkeys(_SECRET_PLACEHOLDER.findall(text))]


@dataclass
class Session:
    name: str
    language: str
    split: str  # "dev" (written alongside the rules) or "holdout" (written after, never tuned on)
    records: list[SourceRecord]
    planted: list[dict[str, Any]]
    distractors: list[dict[str, Any]]
    secrets: list[str]  # the fake secret values the session contains


@dataclass
class SessionScore:
    name: str
    language: str
    split: str
    predicted: list[ExtractedMemory]
    planted: list[dict[str, Any]]
    matches: dict[int, int]  # predicted index → planted index
    distractor_hits: list[tuple[int, dict[str, Any]]]  # (predicted index, distractor)

    @property
    def misses(self) -> list[dict[str, Any]]:
        matched = set(self.matches.values())
        return [p for i, p in enumerate(self.planted) if i not in matched]

    @property
    def false_positives(self) -> list[ExtractedMemory]:
        return [m for i, m in enumerate(self.predicted) if i not in self.matches]


@dataclass
class Tally:
    tp: int = 0
    predicted: int = 0
    planted: int = 0

    @property
    def precision(self) -> float:
        return self.tp / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.tp_planted / self.planted if self.planted else 1.0

    tp_planted: int = 0


@dataclass
class Report:
    sessions: list[SessionScore]
    overall: Tally = field(default_factory=Tally)
    by_kind: dict[str, Tally] = field(default_factory=dict)
    by_rule: dict[str, Tally] = field(default_factory=dict)
    by_language: dict[str, Tally] = field(default_factory=dict)
    by_split: dict[str, Tally] = field(default_factory=dict)
    distractor_hits: int = 0
    subcategory_agree: int = 0
    subcategory_compared: int = 0


def load_corpus(directory: Path = CORPUS) -> list[Session]:
    sessions = []
    for path in sorted(directory.glob("*.jsonl")):
        raw = path.read_text(encoding="utf-8")
        rows = [json.loads(fill_secrets(line)) for line in raw.splitlines() if line]
        for row in rows:
            record_from_dict(row)  # the corpus must be valid MewCode records
        sidecar = path.with_suffix(".expected.json").read_text(encoding="utf-8")
        expected = json.loads(fill_secrets(sidecar))
        sessions.append(
            Session(
                name=path.stem,
                language=expected.get("language", "unknown"),
                split=expected.get("split", "dev"),
                records=source_records(rows),
                planted=expected["planted"],
                distractors=expected.get("distractors", []),
                secrets=secrets_of(raw),
            )
        )
    return sessions


def _matches(memory: ExtractedMemory, planted: dict[str, Any], *, by_scope: bool = False) -> bool:
    content = memory.content.lower()
    kinds = {planted["kind"], *planted.get("also_kinds", ())}
    if by_scope:  # the right statement in the right scope, whatever the kind within it
        right = DEFAULT_SCOPE[memory.kind] == planted.get("scope", DEFAULT_SCOPE[planted["kind"]])
    else:
        right = memory.kind in kinds
    return right and all(s.lower() in content for s in planted["must_contain"])


def _max_matching(
    predicted: Sequence[ExtractedMemory],
    planted: Sequence[dict[str, Any]],
    *,
    by_scope: bool = False,
) -> dict[int, int]:
    """Maximum bipartite matching (Kuhn's algorithm): predicted index → planted index."""
    edges = {
        i: [j for j, p in enumerate(planted) if _matches(m, p, by_scope=by_scope)]
        for i, m in enumerate(predicted)
    }
    owner: dict[int, int] = {}  # planted index → predicted index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(predicted)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


Predict = Callable[[Session], list[ExtractedMemory]]


def offline(session: Session) -> list[ExtractedMemory]:
    return extract(session.records)


def record_range(session: Session) -> tuple[int, int]:
    return session.records[0].index, session.records[-1].index


def typed_prompt(session: Session) -> list[Any]:
    """The messages the product sends an LLM to extract `session` (no existing memories)."""
    return list(prompts.typed_memories_messages(session.records, []))


def _answers(directory: Path, session: Session) -> Any:
    path = directory / f"{session.name}.memories.json"
    if not path.exists():
        raise SystemExit(f"{path} is missing")
    return json.loads(path.read_text(encoding="utf-8"))


def read_predictions(directory: Path) -> Predict:
    """An LLM's answers in the product's typed shape, read as the pipeline reads them: its JSON
    extraction and validator. An answer that is still invalid after the repair request counts
    as no memories (the pipeline would fail that job and retry it later)."""

    def predict(session: Session) -> list[ExtractedMemory]:
        answer = _answers(directory, session)
        try:
            return prompts.validate_typed(answer, record_range=record_range(session))
        except (ValueError, TypeError, KeyError) as error:
            print(f"{session.name}: invalid answer ({error}); counted as none", file=sys.stderr)
            return []

    return predict


def read_reviewed(directory: Path) -> Predict:
    """A reviewer's picks: {"memories": [{"kind": …, "content": …}, …]}."""

    def predict(session: Session) -> list[ExtractedMemory]:
        answer = _answers(directory, session)
        items = answer.get("memories") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not all(
            isinstance(i, dict)
            and isinstance(i.get("kind"), str)
            and isinstance(i.get("content"), str)
            for i in items
        ):
            raise SystemExit(
                f"{directory / session.name}.memories.json: expected "
                '{"memories": [{"kind": "…", "content": "…"}, …]}'
            )
        return [
            ExtractedMemory(
                kind=i["kind"],
                content=i["content"],
                title="",
                keywords=(),
                importance=1,
                record_start=0,
                record_end=0,
                rule="reviewed",
            )
            for i in items
            if i["kind"] in Kind.values and i["content"].strip()
        ]

    return predict


def ask_llm(sessions: Sequence[Session], directory: Path) -> None:
    """Each session's typed-memories request to the configured LLM through the product's own
    provider call (its endpoint, key, model, token limit and retries), and one repair request
    when the answer is invalid, as the pipeline does; the answers go to DIR/<name>.memories.json."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    django.setup()
    from memoryhub.llm import client, providers
    from memoryhub.llm.config import OFFLINE, resolve_config

    config = resolve_config(None)
    if config.provider == OFFLINE:
        raise SystemExit(
            "--llm needs an LLM: set LLM_PROVIDER, LLM_MODEL and LLM_BASE_URL/LLM_API_KEY"
        )

    def ask(messages: list[Any]) -> str:
        reply = providers.complete(
            config,
            messages=messages,
            max_tokens=client.LlmRequest.max_tokens,  # the stage-1 request's limit
            offline=lambda: "",  # not reached: the provider is not offline
        )
        return reply.text

    directory.mkdir(parents=True, exist_ok=True)
    for session in sessions:
        messages = typed_prompt(session)
        text = ask(messages)
        validate = partial(prompts.validate_typed, record_range=record_range(session))
        _, problem = client.check_answer(text, validate)
        if problem is not None:
            text = ask(client.repair_messages(messages, text, problem))
        try:
            answer = client.extract_json(text)
        except json.JSONDecodeError:
            answer = {"unparsed": text}  # invalid: scored as no memories
        path = directory / f"{session.name}.memories.json"
        path.write_text(json.dumps(answer, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def score_session(
    session: Session, predict: Predict = offline, *, by_scope: bool = False
) -> SessionScore:
    predicted = predict(session)
    hits = []
    for i, memory in enumerate(predicted):
        content = memory.content.lower()
        for distractor in session.distractors:
            if all(s.lower() in content for s in distractor["must_not_contain"]):
                hits.append((i, distractor))
    return SessionScore(
        name=session.name,
        language=session.language,
        split=session.split,
        predicted=predicted,
        planted=session.planted,
        matches=_max_matching(predicted, session.planted, by_scope=by_scope),
        distractor_hits=hits,
    )


def score(
    sessions: Sequence[Session], predict: Predict = offline, *, by_scope: bool = False
) -> Report:
    report = Report(sessions=[score_session(s, predict, by_scope=by_scope) for s in sessions])
    for result in report.sessions:
        buckets = [
            report.overall,
            report.by_language.setdefault(result.language, Tally()),
            report.by_split.setdefault(result.split, Tally()),
        ]
        for bucket in buckets:
            bucket.predicted += len(result.predicted)
            bucket.planted += len(result.planted)
            bucket.tp += len(result.matches)
            bucket.tp_planted += len(result.matches)
        for i, memory in enumerate(result.predicted):
            kind = report.by_kind.setdefault(memory.kind, Tally())
            rule = report.by_rule.setdefault(memory.rule or "?", Tally())
            kind.predicted += 1
            rule.predicted += 1
            if i in result.matches:
                kind.tp += 1
                rule.tp += 1
                planted = result.planted[result.matches[i]]
                if memory.kind == "project" and planted.get("subcategory"):
                    report.subcategory_compared += 1
                    report.subcategory_agree += memory.subcategory == planted["subcategory"]
        for j, planted in enumerate(result.planted):
            kind = report.by_kind.setdefault(planted["kind"], Tally())
            kind.planted += 1
            kind.tp_planted += j in result.matches.values()
        report.distractor_hits += len(result.distractor_hits)
    return report


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def render(report: Report, *, details: bool = False, label: str = "Offline extractor") -> str:
    o = report.overall
    langs: Counter[str] = Counter(s.language for s in report.sessions)
    out = [
        f"{label} on the corpus: {len(report.sessions)} sessions "
        f"({', '.join(f'{n} {lang}' for lang, n in sorted(langs.items()))}), "
        f"{sum(len(s.planted) for s in report.sessions)} planted memories; "
        f"{sum(1 for s in report.sessions if s.split == 'holdout')} sessions are a held-out split "
        "written after the rules and never tuned on.",
        "",
        "| scope | predicted | planted | true positives | precision | recall |",
        "|---|---:|---:|---:|---:|---:|",
        f"| overall | {o.predicted} | {o.planted} | {o.tp} | {_pct(o.precision)} | "
        f"{_pct(o.recall)} |",
    ]
    for split, t in sorted(report.by_split.items()):
        out.append(
            f"| split: {split} | {t.predicted} | {t.planted} | {t.tp} | "
            f"{_pct(t.precision)} | {_pct(t.recall)} |"
        )
    for lang, t in sorted(report.by_language.items()):
        out.append(
            f"| language: {lang} | {t.predicted} | {t.planted} | {t.tp} | "
            f"{_pct(t.precision)} | {_pct(t.recall)} |"
        )
    out += [
        "",
        f"Distractor hits: {report.distractor_hits}. Project subcategory agreement on matches: "
        f"{report.subcategory_agree}/{report.subcategory_compared}.",
        "",
        "| kind | predicted | true positives | precision | planted | found | recall |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, t in sorted(report.by_kind.items()):
        precision = _pct(t.precision) if t.predicted else "–"
        recall = _pct(t.recall) if t.planted else "–"
        out.append(
            f"| {kind} | {t.predicted} | {t.tp} | {precision} | {t.planted} | {t.tp_planted} | "
            f"{recall} |"
        )
    out += ["", "| rule | predicted | true positives | precision |", "|---|---:|---:|---:|"]
    for rule, t in sorted(report.by_rule.items()):
        out.append(f"| {rule} | {t.predicted} | {t.tp} | {_pct(t.precision)} |")
    if details:
        out += ["", "Misses:", ""]
        for result in report.sessions:
            for planted in result.misses:
                note = f" — {planted['note']}" if planted.get("note") else ""
                out.append(f"- {result.name}: {planted['kind']} {planted['must_contain']}{note}")
        out += ["", "False positives:", ""]
        for result in report.sessions:
            for memory in result.false_positives:
                out.append(f"- {result.name}: [{memory.kind}/{memory.rule}] {memory.content}")
        out += ["", "Distractor hits:", ""]
        for result in report.sessions:
            for i, distractor in result.distractor_hits:
                out.append(
                    f"- {result.name}: {distractor['must_not_contain']} in "
                    f"{result.predicted[i].content!r}"
                )
    return "\n".join(out)


def _tally_json(t: Tally) -> dict[str, Any]:
    return {
        "precision": t.precision,
        "recall": t.recall,
        "predicted": t.predicted,
        "planted": t.planted,
        "true_positives": t.tp,
    }


def _other_extractor(
    directory: Path, corpus: Path = CORPUS, *, by_scope: bool = False
) -> dict[str, Any]:
    """The numbers of the extractor in `directory` (e.g. an export of main) on this corpus:
    this script again in a child process whose `memoryhub` package is imported from there."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{directory.resolve()}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "other.json"
        command = [sys.executable, __file__, "--json", str(out), "--quiet", "--corpus", str(corpus)]
        subprocess.run(  # noqa: S603 - our own script and interpreter
            command + (["--by-scope"] if by_scope else []),
            env=env,
            check=True,
        )
        data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    package = data.get("package", "")
    if not package.startswith(str(directory.resolve())):
        raise SystemExit(f"--compare: the child imported memoryhub from {package}, not {directory}")
    return data


def render_comparison(before: dict[str, Any], after: Report, label: str) -> str:
    """Side by side: the other extractor's numbers and this one's, per split and language."""
    rows = [("overall", before, after.overall)]
    rows += [
        (f"split: {k}", before["by_split"].get(k), t) for k, t in sorted(after.by_split.items())
    ]
    rows += [
        (f"language: {k}", before["by_language"].get(k), t)
        for k, t in sorted(after.by_language.items())
    ]
    out = [
        f"Side by side, one run, same corpus and labels ({label} → this checkout):",
        "",
        "| scope | planted | before: predicted | precision | recall | after: predicted | "
        "precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, old, new in rows:
        if old is None:
            continue
        out.append(
            f"| {name} | {new.planted} | {old['predicted']} | {_pct(old['precision'])} | "
            f"{_pct(old['recall'])} | {new.predicted} | {_pct(new.precision)} | "
            f"{_pct(new.recall)} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--details", action="store_true", help="list misses and false positives")
    parser.add_argument("--json", type=Path, help="also write the numbers as JSON")
    parser.add_argument(
        "--compare", type=Path, metavar="DIR", help="also score the extractor of DIR/memoryhub"
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        metavar="DIR",
        help="a directory of <name>.jsonl + <name>.expected.json sessions (default: %(default)s)",
    )
    others = parser.add_mutually_exclusive_group()
    others.add_argument("--llm", type=Path, metavar="DIR", help="ask the LLM, keep answers in DIR")
    others.add_argument("--llm-prompts", type=Path, metavar="DIR", help="write the LLM requests")
    others.add_argument("--predictions", type=Path, metavar="DIR", help="score DIR's LLM answers")
    others.add_argument("--reviewed", type=Path, metavar="DIR", help="score DIR's {kind, content}")
    parser.add_argument(
        "--by-scope",
        action="store_true",
        help="a match needs the planted scope (user or project), not the planted kind",
    )
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    given = args.llm or args.predictions or args.reviewed
    if args.compare and (given or args.llm_prompts):
        parser.error("--compare compares offline extractors: not with --llm, --predictions, …")
    if args.llm_prompts and (args.json or args.by_scope or args.details):
        parser.error("--llm-prompts only writes the requests")
    sessions = load_corpus(args.corpus)
    if not sessions:
        parser.error(f"--corpus: no <name>.jsonl sessions in {args.corpus}")
    if args.llm_prompts:
        args.llm_prompts.mkdir(parents=True, exist_ok=True)
        for session in sessions:
            path = args.llm_prompts / f"{session.name}.prompt.json"
            messages = typed_prompt(session)
            path.write_text(json.dumps(messages, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"{len(sessions)} requests written to {args.llm_prompts}")
        return 0
    if args.llm:
        ask_llm(sessions, args.llm)
    if args.reviewed:
        predict = read_reviewed(args.reviewed)
    else:
        answers = args.llm or args.predictions
        predict = read_predictions(answers) if answers else offline
    report = score(sessions, predict, by_scope=args.by_scope)
    if not args.quiet:
        label = f"Memories in {given}" if given else "Offline extractor"
        print(render(report, details=args.details, label=label))
    if args.compare:
        print()
        before = _other_extractor(args.compare, args.corpus, by_scope=args.by_scope)
        print(render_comparison(before, report, str(args.compare)))
    if args.json:
        data = {
            "package": str(Path(extractor_package.__file__).resolve().parent),
            "precision": report.overall.precision,
            "recall": report.overall.recall,
            "predicted": report.overall.predicted,
            "planted": report.overall.planted,
            "true_positives": report.overall.tp,
            "distractor_hits": report.distractor_hits,
            "by_split": {k: _tally_json(t) for k, t in report.by_split.items()},
            "by_language": {k: _tally_json(t) for k, t in report.by_language.items()},
            "by_kind": {
                k: {
                    "precision": t.precision,
                    "recall": t.recall,
                    "predicted": t.predicted,
                    "planted": t.planted,
                }
                for k, t in report.by_kind.items()
            },
            "by_rule": {
                r: {"precision": t.precision, "predicted": t.predicted}
                for r, t in report.by_rule.items()
            },
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
