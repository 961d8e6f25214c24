"""meow-memory's scoring pieces (seed-algorithms §5.4–5.5), exactly as in its source."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np

SUPER_MATCH = 0.85  # raw ≥ 0.85 × the best raw score: exempt from decay
DECAY_EXEMPT_IMPORTANCE = 3

# Ebbinghaus-style step table: (age below N days, weight). Not a half-life (§6.10).
_DECAY_STEPS = (
    (1, 1.0),
    (2, 0.9),
    (4, 0.8),
    (7, 0.65),
    (15, 0.5),
    (30, 0.35),
    (60, 0.25),
    (180, 0.15),
)
_DECAY_FLOOR = 0.08


def idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def recency_weight(updated_at: datetime, now: datetime) -> float:
    age_days = (now - updated_at).total_seconds() / 86_400
    for limit, weight in _DECAY_STEPS:
        if age_days < limit:
            return weight
    return _DECAY_FLOOR


def decayed(
    raw: float,
    *,
    best_raw: float,
    importance: int,
    updated_at: datetime,
    now: datetime,
    strength: float = 1.0,
) -> float:
    """raw × recency weight, unless the memory is important or a super match.

    `strength` s softens the decay to raw × (1 − s + s × weight): 1 is meow-memory's, 0 none."""
    if importance >= DECAY_EXEMPT_IMPORTANCE or raw >= SUPER_MATCH * best_raw:
        return raw
    return raw * (1 - strength + strength * recency_weight(updated_at, now))


def decay_floor(strength: float) -> float:
    """The smallest share of a raw score that decayed() keeps at this strength."""
    return 1 - strength + strength * _DECAY_FLOOR


_STEP_LIMITS = np.array([limit for limit, _ in _DECAY_STEPS], np.float64)
_STEP_WEIGHTS = np.array([weight for _, weight in _DECAY_STEPS] + [_DECAY_FLOOR], np.float64)


def recency_weights(age_days: np.ndarray) -> np.ndarray:
    """recency_weight over an array of ages in days."""
    return _STEP_WEIGHTS[np.searchsorted(_STEP_LIMITS, age_days, side="right")]


def decayed_many(
    raw: np.ndarray,
    *,
    best_raw: float,
    importance: np.ndarray,
    age_days: np.ndarray,
    strength: float = 1.0,
) -> np.ndarray:
    """decayed() over arrays (the engine's candidates)."""
    exempt = (importance >= DECAY_EXEMPT_IMPORTANCE) | (raw >= SUPER_MATCH * best_raw)
    factor = 1 - strength + strength * recency_weights(age_days)
    return np.where(exempt, raw, raw * factor)
