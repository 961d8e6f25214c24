"""Ranking knobs of memory_search, overridable per project in project.settings["recall"].

meow-memory ranks with BM25 k1 1.5, b 0.75 × its full step decay (search_decay 1). The defaults
here were chosen on LoCoMo-R's dev split (bench/locomo_explore.py, README): memories are short,
so term-frequency saturation and length normalisation barely help (k1 0.3, b 0), and the full
decay buries an old memory that answers the question under newer near-misses (−8 points of
hit@5), so recency only nudges the order: score = raw × (1 − s + s × weight), weight from the
step table, s = search_decay. Setting {"search_k1": 1.5, "search_b": 0.75, "search_decay": 1}
and the signals off gives meow-memory's exact ranking. Per-message recall hits (keyword_hits)
are this same ranking's top two.

The context signals (memoryhub.recall.signals, issue 14) were chosen on the same dev split
(bench/locomo_explore.py --signals): session coherence 0.3, neighbour smoothing 0.3, subject
factor 1.5, inside a plateau (0.1–0.5, 0.1–0.5, 1.2–1.5 all gave 67–73 hit@5 on dev) and below
its edge, because heavier session and neighbour weights suit dialogue turns more than the
memories an agent extracts. {"signal_session": 0, "signal_neighbour": 0, "signal_subject": 1}
is the ranking before them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from memoryhub.core.exceptions import ApplicationError


@dataclass(frozen=True)
class RecallConfig:
    search_k1: float = 0.3
    search_b: float = 0.0
    search_decay: float = 0.1
    # Context signals: + signal_session × the best score × session BM25 / the best session's,
    # + signal_neighbour × the scores of the previous and next memory of the source session,
    # × signal_subject when the memory's subject is named in the query.
    signal_session: float = 0.3
    signal_neighbour: float = 0.3
    signal_subject: float = 1.5
    # oh-my-pi's summaryInjectionTokenLimit: memory_summary.md in the omp and default payloads
    # is cut to this many tokens (4 characters each); omp's lessons share the same cap.
    summary_injection_token_limit: int = 5_000
    # Share of the embedding cosine when EMBEDDINGS_PROVIDER re-scores search's lexical top 200
    # (memoryhub/embeddings/rescore.py); 0 turns the re-scorer off for the project.
    embedding_weight: float = 0.5

    @property
    def signals_on(self) -> bool:
        return bool(self.signal_session or self.signal_neighbour or self.signal_subject != 1)


_BOUNDS = {
    "search_k1": (0.0, 10.0),
    "search_b": (0.0, 1.0),
    "search_decay": (0.0, 1.0),
    "signal_session": (0.0, 5.0),
    "signal_neighbour": (0.0, 1.0),
    "signal_subject": (1.0, 5.0),
    "summary_injection_token_limit": (0, 1_000_000),
    "embedding_weight": (0.0, 1.0),
}
_INTEGERS = {"summary_injection_token_limit"}


def recall_config(project_settings: dict[str, Any]) -> RecallConfig:
    overrides = project_settings.get("recall", {})
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise ApplicationError("project settings 'recall' must be an object.")
    known = {f.name for f in fields(RecallConfig)}
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in known:
            raise ApplicationError(f"Unknown recall setting {name!r}.")
        low, high = _BOUNDS[name]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
            or (name in _INTEGERS and value != int(value))
        ):
            what = "an integer" if name in _INTEGERS else "a number"
            raise ApplicationError(f"recall.{name} must be {what} from {low:g} to {high:g}.")
        values[name] = int(value) if name in _INTEGERS else float(value)
    return RecallConfig(**values)
