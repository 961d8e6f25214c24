"""meow-memory's surface similarity: its raw tokenizer (CJK bigrams + lower-cased ASCII words,
no stemming, no stopwords), bigram-set Jaccard for merging and term-frequency cosine for
find-similar. Deliberately not the bank tokenizer: these thresholds (0.8) were tuned on it."""

from __future__ import annotations

import math
import re
from collections import Counter

_RUN = re.compile(r"[\u3400-\u9fff]+|[A-Za-z0-9]+")

MERGE_THRESHOLD = 0.8  # meow-memory DEDUP_THRESHOLD


def meow_tokens(text: str) -> list[str]:
    """meow-memory's tokenize (§5.2): every adjacent pair in a run of two or more Han
    characters, each ASCII [a-zA-Z0-9]+ run lower-cased; everything else separates."""
    tokens: list[str] = []
    for run in _RUN.findall(text):
        if "\u3400" <= run[0] <= "\u9fff":
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            tokens.append(run.lower())
    return tokens


def jaccard(a: str, b: str) -> float:
    sa, sb = set(meow_tokens(a)), set(meow_tokens(b))
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def vector_cosine(a: Counter[str], b: Counter[str]) -> float:
    """Cosine of two term-frequency vectors (0 when either is empty)."""
    dot = sum(a[t] * b[t] for t in a.keys() & b.keys())
    if not dot:
        return 0.0
    return dot / (
        math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    )


def cosine(a: str, b: str) -> float:
    """meow's find-similar score of two texts."""
    return vector_cosine(Counter(meow_tokens(a)), Counter(meow_tokens(b)))
