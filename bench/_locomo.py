"""LoCoMo-R (../shared/reference/benchmarks.md §5): data, scorer and in-process rankers.

Shared by bench/locomo.py (the protocol through HTTP), bench/locomo_explore.py (in-process
variants on the dev split) and bench/dense_probe.py (the MiniLM hybrid). The data is read from
../shared/data/locomo10.json (never copied into the repo; --data overrides).

The scorer is Appendix A's, re-typed: evidence normalisation, hit/all/frac@k, MRR, NDCG@10
and the session metrics. The rankers are
- `Bm25`: BM25 over an inverted index with the knobs the anchors and MemoryHub differ in
  (Lucene idf, k1, b, whether query-term repeats weigh more, the stopword list);
- `ServerReplica`: memoryhub/recall/search.py's ranking re-done in Python (BM25 with the
  defaults of memoryhub/recall/conf.py, k1 0.3 b 0, query-term repeats, every match
  × meow's decay at strength 0.1 with its exemptions, ties by insertion order) over the app's
  own tokenizer and decay table, loaded from the app's files.
  bench/locomo.py checks it against the server's answers.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "locomo10.json"
DATA_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
DEV = ("conv-26", "conv-30")
SCORED_CATS = (1, 2, 3, 4)
CAT_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10, 20)
# Columns of the tables, in order (S-all@k and frac@1/20 go to the JSON only).
TABLE_METRICS = (
    "hit@1",
    "hit@5",
    "hit@10",
    "hit@20",
    "all@10",
    "frac@5",
    "frac@10",
    "mrr",
    "ndcg@10",
    "S-hit@1",
    "S-hit@3",
    "S-hit@5",
)
# Lucene's (and bm25s's) English stop set: the one Appendix A's "std" tokenization uses.
LUCENE_STOPWORDS = frozenset(
    """
    a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with
    """.split()  # noqa: SIM905 - a word list reads better as text
)


# --- The app's own pieces, without Django ------------------------------------------------------


def _app_module(relative: str, name: str) -> ModuleType:
    """Load one of the app's pure modules by path: importing `memoryhub` would pull in Celery
    and Django, which these modules do not need."""
    spec = importlib.util.spec_from_file_location(name, REPO / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


app_text = _app_module("memoryhub/memories/text.py", "_bench_app_text")
app_scoring = _app_module("memoryhub/recall/scoring.py", "_bench_app_scoring")
app_signals = _app_module("memoryhub/recall/signals.py", "_bench_app_signals")
# The app's stopwords plus the fragments [a-z0-9]+ makes of English contractions and
# possessives ("caroline's" → carolin, s; "don't" → don, t), as NLTK's English list has them.
CONTRACTION_FRAGMENTS = frozenset(
    "s t d ll m re ve don didn doesn isn wasn couldn".split()  # noqa: SIM905 - a word list
)
APP_STOPWORDS_PLUS = frozenset(app_text.STOPWORDS) | CONTRACTION_FRAGMENTS


# memoryhub/recall/conf.py's defaults for the context signals (bench/locomo.py checks the
# replica against the server, so a drift shows there).
SIGNAL_DEFAULTS = {"signal_session": 0.3, "signal_neighbour": 0.3, "signal_subject": 1.5}
SIGNAL_POOL = 20


# --- Data --------------------------------------------------------------------------------------


def parse_dt(value: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023", as UTC."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def norm_ids(raw: Iterable[Any], valid: set[str]) -> list[str]:
    """§5.1.7: split on [;,\\s]+, D:x:y → Dx:y, strip leading zeros, drop unknown ids."""
    out: list[str] = []
    for entry in raw:
        for part in re.split(r"[;,\s]+", str(entry)):
            part = part.strip().rstrip(".")
            if not part:
                continue
            part = re.sub(r"^D:(\d+):", r"D\1:", part)
            match = re.fullmatch(r"D(\d+):(\d+)", part)
            if not match:
                continue
            part = f"D{int(match.group(1))}:{int(match.group(2))}"
            if part in valid and part not in out:
                out.append(part)
    return out


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    order: int  # insertion order within the conversation
    created_at: datetime  # session time + turn-index seconds (§5.1.3)
    speaker: str
    text: str  # with " [shares a photo: …]" when captioned

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    conv: str
    index: int  # position in the conversation's qa list
    text: str
    cat: int
    evidence: tuple[str, ...]

    @property
    def scored(self) -> bool:
        return bool(self.evidence)


@dataclass
class Conversation:
    id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    now: datetime  # the last session's time: "now" for recency (§5.1.5)
    sessions: int = 0


def load(path: Path = DATA) -> list[Conversation]:
    convs = []
    for sample in json.loads(path.read_text()):
        c = sample["conversation"]
        numbers = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k))
        turns: list[Turn] = []
        for n in numbers:
            start = parse_dt(c[f"session_{n}_date_time"])
            for i, t in enumerate(c[f"session_{n}"]):
                caption = t.get("blip_caption")
                text = t["text"] + (f" [shares a photo: {caption}]" if caption else "")
                turns.append(
                    Turn(
                        t["dia_id"], n, len(turns), start + timedelta(seconds=i), t["speaker"], text
                    )
                )
        valid = {t.dia_id for t in turns}
        questions = [
            Question(
                sample["sample_id"],
                i,
                q["question"],
                q["category"],
                tuple(norm_ids(q.get("evidence", []), valid)),
            )
            for i, q in enumerate(sample["qa"])
        ]
        now = max(parse_dt(c[f"session_{n}_date_time"]) for n in numbers)
        convs.append(
            Conversation(
                sample["sample_id"],
                (c["speaker_a"], c["speaker_b"]),
                turns,
                questions,
                now,
                len(numbers),
            )
        )
    return convs


def session_of(dia_id: str) -> int:
    return int(dia_id.split(":")[0][1:])


# --- Scorer ------------------------------------------------------------------------------------


def _dcg(rels: Sequence[float]) -> float:
    return sum(r / math.log2(i + 2) for i, r in enumerate(rels))


def question_metrics(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """Appendix A's turn + session metrics for one question. `ranked`: the dialog id of each
    returned memory, best first (one id per memory in variant T)."""
    gold_set = set(gold)
    m: dict[str, float] = {}
    first = next((r for r, d in enumerate(ranked) if d in gold_set), None)
    m["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    for k in KS:
        hit = gold_set & set(ranked[:k])
        m[f"hit@{k}"] = float(bool(hit))
        m[f"all@{k}"] = float(hit == gold_set)
        m[f"frac@{k}"] = len(hit) / len(gold_set)
    rels = [1.0 if d in gold_set else 0.0 for d in ranked[:10]]
    m["ndcg@10"] = _dcg(rels) / _dcg([1.0] * min(10, len(gold_set)))
    sessions: list[int] = []
    for d in ranked:
        s = session_of(d)
        if s not in sessions:
            sessions.append(s)
    gold_sessions = {session_of(d) for d in gold_set}
    for k in (1, 3, 5):
        m[f"S-hit@{k}"] = float(bool(gold_sessions & set(sessions[:k])))
        m[f"S-all@{k}"] = float(gold_sessions <= set(sessions[:k]))
    return m


@dataclass
class Scored:
    question: Question
    metrics: dict[str, float]


def summarize(rows: Sequence[Scored]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    keys = rows[0].metrics.keys()
    return {"n": len(rows), **{k: 100 * sum(r.metrics[k] for r in rows) / len(rows) for k in keys}}


def groups(rows: Sequence[Scored]) -> dict[str, list[Scored]]:
    """The report's rows: all of categories 1–4, each category, cat 5 apart, and the splits."""
    main = [r for r in rows if r.question.cat in SCORED_CATS]
    out: dict[str, list[Scored]] = {"all 1–4": main}
    for cat in (4, 1, 2, 3):
        out[f"{cat} {CAT_NAMES[cat]}"] = [r for r in main if r.question.cat == cat]
    out["5 adversarial (separate)"] = [r for r in rows if r.question.cat == 5]
    out["dev 1–4 (conv-26, conv-30)"] = [r for r in main if r.question.conv in DEV]
    out["test 1–4 (8 conversations)"] = [r for r in main if r.question.conv not in DEV]
    return {k: v for k, v in out.items() if v}


def summary_table(rows: Sequence[Scored], metrics: Sequence[str] = TABLE_METRICS) -> str:
    head = "| rows | n | " + " | ".join(_label(m) for m in metrics) + " |"
    lines = [head, "|---|---:|" + "---:|" * len(metrics)]
    for name, members in groups(rows).items():
        s = summarize(members)
        cells = " | ".join(f"{s[m]:.1f}" for m in metrics)
        lines.append(f"| {name} | {s['n']:,} | {cells} |")
    return "\n".join(lines)


def _label(metric: str) -> str:
    return {"mrr": "MRR", "ndcg@10": "NDCG@10"}.get(metric, metric)


def score_all(
    questions: Iterable[Question], ranked: Callable[[Question], Sequence[str]]
) -> list[Scored]:
    return [Scored(q, question_metrics(ranked(q), q.evidence)) for q in questions if q.scored]


def mcnemar(base: Sequence[Scored], other: Sequence[Scored], metric: str) -> str:
    """Paired exact-ish McNemar (chi² with continuity) on a 0/1 metric: 'b/c, p'."""
    key = {(r.question.conv, r.question.index): r.metrics[metric] for r in base}
    gained = lost = 0
    for r in other:
        was = key[(r.question.conv, r.question.index)]
        gained += r.metrics[metric] > was
        lost += r.metrics[metric] < was
    if gained + lost == 0:
        return "+0/−0, p=1"
    chi2 = (abs(gained - lost) - 1) ** 2 / (gained + lost)
    p = math.erfc(math.sqrt(chi2 / 2))
    return f"+{gained}/−{lost}, p={p:.3g}"


def paired_difference(base: Sequence[Scored], other: Sequence[Scored], metric: str) -> str:
    """Mean per-question difference other − base in points, with a normal 95 % interval."""
    key = {(r.question.conv, r.question.index): r.metrics[metric] for r in base}
    diffs = [100 * (r.metrics[metric] - key[(r.question.conv, r.question.index)]) for r in other]
    n = len(diffs)
    if n < 2:
        return "–"
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    return f"{mean:+.1f} ± {1.96 * sd / math.sqrt(n):.1f}"


# --- Tokenizers and rankers ----------------------------------------------------------------------


def tokenizer(stopwords: frozenset[str] | None) -> Callable[[str], list[str]]:
    """The app's tokenizer (memoryhub.memories.text.tokenize), or the same regex + stemmer with
    another stopword list (Appendix A's "std" is LUCENE_STOPWORDS)."""
    if stopwords is None:
        tokenize: Callable[[str], list[str]] = app_text.tokenize
        return tokenize
    pattern = re.compile(r"[\u3400-\u9fff]+|[a-z0-9]+")
    stem: Callable[[str], str] = app_text._stem

    def tok(text: str) -> list[str]:
        out: list[str] = []
        for run in pattern.findall(text.lower()):
            if "\u3400" <= run[0] <= "\u9fff":
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
            elif run not in stopwords:
                out.append(stem(run)[:64])
        return out

    return tok


def index_text(turn: Turn) -> str:
    """What the app indexes of a memory: title + content + keywords (services.index_text)."""
    return "\n".join(["", turn.content, ""])


@dataclass
class Bm25:
    """Lucene BM25 (idf = ln(1 + (N − df + .5)/(df + .5))) over an inverted index."""

    docs: list[list[str]]
    k1: float = 1.2
    b: float = 0.75
    query_repeats: bool = True  # a repeated query word weighs qtf times (Appendix A and the app)
    postings: dict[str, list[tuple[int, int]]] = field(init=False)
    lengths: list[int] = field(init=False)
    avgdl: float = field(init=False)

    def __post_init__(self) -> None:
        self.postings = defaultdict(list)
        for i, doc in enumerate(self.docs):
            for term, tf in Counter(doc).items():
                self.postings[term].append((i, tf))
        self.lengths = [len(d) for d in self.docs]
        self.avgdl = sum(self.lengths) / max(1, len(self.docs))

    def idf(self, term: str) -> float:
        n, df = len(self.docs), len(self.postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """Score of every document sharing a term with the query (others score 0)."""
        qtf = Counter(query)
        out: dict[int, float] = defaultdict(float)
        k1, b = self.k1, self.b
        norm_a, norm_b = k1 * (1 - b), k1 * b / max(self.avgdl, 1e-9)
        for term, count in qtf.items():
            plist = self.postings.get(term)
            if not plist:
                continue
            w = self.idf(term) * (count if self.query_repeats else 1)
            for doc, tf in plist:
                out[doc] += w * tf * (k1 + 1) / (tf + norm_a + norm_b * self.lengths[doc])
        return out

    def rank(self, query: Sequence[str], fill: bool = True) -> list[int]:
        """Best first; ties (and the zero-score tail when `fill`) in insertion order."""
        sc = self.scores(query)
        ranked = sorted(sc, key=lambda i: (-sc[i], i))
        if fill:
            matched = set(sc)
            ranked += [i for i in range(len(self.docs)) if i not in matched]
        return ranked


@dataclass
class ServerReplica:
    """memory_search of memoryhub/recall/search.py, in Python, for one conversation's bank.

    `decay` is the strength of meow's decay: 1 = the app's (raw × weight, with its exemptions),
    0 = raw BM25, s in between = raw × (1 − s + s·weight), a penalty of at most s. `k1`, `b`,
    `stopwords` and `query_repeats` try variants the app does not have (defaults = the app's).
    """

    conv: Conversation
    # memoryhub/recall/conf.py's defaults; bench/locomo.py checks the replica against the server.
    k1: float = 0.3
    b: float = 0.0
    decay: float = 0.1
    stopwords: frozenset[str] | None = None  # None: the app's tokenizer
    query_repeats: bool = True
    # The context signals (memoryhub/recall/signals.py) with conf.py's defaults; 0, 0, 1 = off.
    signal_session: float = SIGNAL_DEFAULTS["signal_session"]
    signal_neighbour: float = SIGNAL_DEFAULTS["signal_neighbour"]
    signal_subject: float = SIGNAL_DEFAULTS["signal_subject"]
    pool: int = SIGNAL_POOL  # search.py's candidate depth when a signal is on
    index: Bm25 = field(init=False)
    tok: Callable[[str], list[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.tok = tokenizer(self.stopwords)
        docs = [self.tok(index_text(t)) for t in self.conv.turns]
        self.index = Bm25(docs, self.k1, self.b, self.query_repeats)
        turns = self.conv.turns
        self.keys = [session_key(t) for t in turns]
        self.subjects = [
            frozenset(self.tok(app_signals.subject_text(title="", content=t.content, metadata={})))
            for t in turns
        ]
        members: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
        for i, t in enumerate(turns):
            members[self.keys[i]].append((i, t.order))
        self.adjacent: dict[int, tuple[int | None, int | None]] = {}
        for group in members.values():
            self.adjacent |= app_signals.neighbour_ids(group, [i for i, _ in group])
        self.session_tf: dict[str, Counter[str]] = defaultdict(Counter)
        self.session_len: Counter[str] = Counter()
        for i, doc in enumerate(docs):
            self.session_tf[self.keys[i]].update(doc)
            self.session_len[self.keys[i]] += len(doc)
        self.session_df: Counter[str] = Counter()
        for counts in self.session_tf.values():
            self.session_df.update(counts.keys())

    @property
    def signals_on(self) -> bool:
        return bool(self.signal_session or self.signal_neighbour or self.signal_subject != 1)

    def raw(self, text: str) -> dict[int, float]:
        terms = self.tok(text)
        # search.py keeps the 64 most frequent query terms.
        keep = {t for t, _ in Counter(terms).most_common(64)}
        return self.index.scores([t for t in terms if t in keep])

    def search(self, text: str, k: int = 20) -> list[tuple[int, float]]:
        """(turn order, score) of the best k, best first."""
        raw = self.raw(text)
        # The server's ranking is exact: every memory that shares a term is a candidate.
        pool = sorted(raw, key=lambda i: (-raw[i], i))
        if not pool:
            return []
        if self.signals_on:
            return self._with_signals(text, raw, pool, k)
        best = raw[pool[0]]
        turns = self.conv.turns
        now = self.conv.now

        def final(i: int) -> float:
            if self.decay == 0:
                return raw[i]
            full = float(
                app_scoring.decayed(
                    raw[i], best_raw=best, importance=1, updated_at=turns[i].created_at, now=now
                )
            )
            if self.decay == 1:
                return full
            weight = full / raw[i]  # 1 when exempt
            return raw[i] * (1 - self.decay + self.decay * weight)

        scored = [(i, final(i)) for i in pool]
        # Like the server: scores equal to 9 decimals are ties (sums in another order).
        scored.sort(key=lambda p: (-round(p[1], 9), turns[p[0]].created_at, p[0]))
        return scored[:k]

    def base(self, raw: dict[int, float], best: float, i: int) -> float:
        """Today's score of turn i (BM25 × the softened decay), 0 when it matched no term."""
        if i not in raw:
            return 0.0
        turn = self.conv.turns[i]
        return float(
            app_scoring.decayed(
                raw[i],
                best_raw=best,
                importance=1,
                updated_at=turn.created_at,
                now=self.conv.now,
                strength=self.decay,
            )
        )

    def _with_signals(
        self, text: str, raw: dict[int, float], pool: list[int], k: int
    ) -> list[tuple[int, float]]:
        """search.py with the context signals: the pool as deep as the ranking returns it,
        its neighbours joined, signals.rerank."""
        depth = max(k, self.pool)
        if len(pool) >= depth:
            floor = app_scoring.decay_floor(self.decay)
            threshold = floor * raw[pool[depth - 1]]
            pool = [i for i in pool if raw[i] >= threshold]
        best = raw[pool[0]]
        ids = set(pool)
        for i in pool:
            ids.update(j for j in self.adjacent.get(i, (None, None)) if j is not None)
        terms = self.tok(text)
        qtf = Counter(dict(Counter(terms).most_common(64)))  # with repeats, as search.py
        sessions = {self.keys[i] for i in ids}
        n_sessions = len(self.session_tf)
        scores = app_signals.session_bm25(
            tf={s: {t: self.session_tf[s][t] for t in qtf} for s in sessions},
            lengths={s: self.session_len[s] for s in sessions},
            df={t: self.session_df[t] for t in qtf},
            n_sessions=n_sessions,
            qtf=qtf,
            k1=self.k1,
            b=self.b,
            avg_length=sum(self.session_len.values()) / max(1, n_sessions),
        )
        cands = [
            app_signals.Candidate(
                i, self.base(raw, best, i), self.keys[i], self.conv.turns[i].order, self.subjects[i]
            )
            for i in ids
        ]
        scored = app_signals.rerank(
            cands,
            adjacent=self.adjacent,
            session_scores=scores,
            query_terms=frozenset(qtf),
            weights=self,
        )
        turns = self.conv.turns
        out = [(s.id, s.score) for s in scored]
        out.sort(key=lambda p: (-round(p[1], 9), turns[p[0]].created_at, p[0]))
        return out[:k]


def session_key(turn: Turn) -> str:
    """The session key search.py gives the memory bench/locomo.py makes of `turn`."""
    return str(app_signals.session_key(source_session(turn), turn.order + 1))


def source_session(turn: Turn) -> str:
    """What bench/locomo.py sends as the memory's source session."""
    return f"session_{turn.session}"
