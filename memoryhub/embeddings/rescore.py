"""The embedding re-scorer of search: the lexical top RESCORE_DEPTH, re-scored as
(1 − w) × score / max score + w × min-max(cosine to the query), w = the project's recall
setting embedding_weight (0.5: issue 14's research, LoCoMo-R dev split).

Search calls rescore_depth() before it collects candidates (0: no re-scoring, so the lexical
pool stays as deep as it was) and rescore() on its ranked candidates. Any failure — the
endpoint down, the model missing — logs a warning and leaves the lexical order: embeddings
never break search.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memoryhub.embeddings import providers, selectors

if TYPE_CHECKING:
    from projects.models import Project

logger = logging.getLogger(__name__)

RESCORE_DEPTH = 200


def rescore_depth(*, project_id: int, weight: float) -> int:
    """How many lexical candidates search should hand to rescore(): RESCORE_DEPTH when a
    provider is configured, the weight is above 0 and the project's memories have vectors."""
    encoder = providers.encoder()
    if encoder is None or weight <= 0:
        return 0
    return (
        RESCORE_DEPTH
        if selectors.project_has_vectors(project_id=project_id, model=encoder.key)
        else 0
    )


def rescore(
    *,
    query_text: str,
    scored: Sequence[tuple[int, float]],
    weight: float,
    project: Project | None = None,
) -> list[tuple[int, float]]:
    """(memory id, score) best first → the same ids re-scored, best first (ties keep the input
    order). Only the first RESCORE_DEPTH take part; the rest follow, below them, unchanged.
    A candidate without a current vector (written a moment ago) gets the pool's mean cosine."""
    encoder = providers.encoder()
    head, tail = list(scored[:RESCORE_DEPTH]), list(scored[RESCORE_DEPTH:])
    if encoder is None or not head or not query_text.strip():
        return list(scored)
    try:
        import numpy as np

        stored = selectors.memory_vectors(memory_ids=[i for i, _ in head], model=encoder.key)
        if not stored:
            return list(scored)
        query = encoder.encode([query_text], project=project, purpose="embed_query")[0]
        cos: dict[int, float] = {}
        for memory_id, blob in stored.items():
            vector = np.frombuffer(blob, dtype="<f4")
            if vector.shape == query.shape:  # a model swap mid-flight: skip, never crash
                cos[memory_id] = float(vector @ query)
    except Exception as exc:  # an endpoint down or a broken install: lexical order stands
        logger.warning("Embedding re-scoring skipped (%s): %s", type(exc).__name__, exc)
        return list(scored)
    if not cos:
        return list(scored)
    low, high = min(cos.values()), max(cos.values())
    span = high - low
    normalised = {i: (c - low) / span if span > 0 else 0.0 for i, c in cos.items()}
    neutral = sum(normalised.values()) / len(normalised)
    top = max((s for _, s in head), default=0.0) or 1.0
    fused = [(i, (1 - weight) * s / top + weight * normalised.get(i, neutral)) for i, s in head]
    order = sorted(range(len(fused)), key=lambda n: (-round(fused[n][1], 9), n))
    floor = min((s for _, s in fused), default=0.0)
    # The tail scored below every re-scored candidate, so it stays below them.
    return [fused[n] for n in order] + [(i, min(s, floor)) for i, s in tail]
