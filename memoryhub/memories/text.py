"""The bank's tokenizer: what search, keyword hits and the index agree a "term" is.

Latin text: lower-cased [a-z0-9]+ words, English stopwords removed, Snowball-stemmed (so
"deploying" and "deploys" meet). CJK text: every adjacent pair of Han characters in a run of two
or more (meow-memory's bigrams), so Chinese memories match without a segmenter.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import Stemmer

_TOKEN = re.compile(r"[\u3400-\u9fff]+|[a-z0-9]+")
MAX_TERM_CHARS = 64

# A standard English stopword list (the reference BM25 anchors of LoCoMo-R use the same kind).
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Terms of `text`, in order, with repeats (term frequencies matter for BM25)."""
    terms: list[str] = []
    for run in _TOKEN.findall(text.lower()):
        if "\u3400" <= run[0] <= "\u9fff":
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif run not in STOPWORDS:
            # Stemming changes only a word's end: cutting first keeps the stem cache small.
            terms.append(_stem(run[: MAX_TERM_CHARS + 16])[:MAX_TERM_CHARS])
    return terms


def term_counts(text: str) -> Counter[str]:
    return Counter(tokenize(text))
