"""Why a memory ranks where it does: the injection preview's explained scores.

Nothing here ranks on its own: search.rank, the ranking memory_search uses, returns the top
memories with each raw score split into its terms (idf × query count × BM25's tf part); this
module names the decay factor the ranking applied. A test holds the explained total equal to
what GET …/memories/search/ answers.

The per-message recall hits (keyword_hits) come from the same ranking; preview() shows their
scores as they are.

Side-effect free on purpose: memory_search records hit counts and the session's seen set, and
recall_for_message marks what it returns as injected; a preview must change neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.utils import timezone

from memoryhub.memories.models import Memory
from memoryhub.recall import keyword_hits, recall_files, scoring, selectors
from memoryhub.recall.conf import recall_config
from memoryhub.recall.injection import Payload, Profile, build_payload
from memoryhub.recall.layout import estimate_tokens
from memoryhub.recall.search import Hit, SearchQuery, TermPart, rank
from memoryhub.recall.services import hits_block, recall_text
from projects.selectors import ProjectAccess


@dataclass(frozen=True)
class SearchExplanation:
    memory: Memory
    rank: int  # 1-based, in the ranking's order
    terms: list[TermPart]
    raw: float  # Σ term scores, as the ranking computed it
    age_days: float
    recency_weight: float  # the step table's weight for age_days
    exempt: str  # "importance" (≥ 3), "super_match" (raw ≥ 0.85 × best) or ""
    decay_factor: float  # what raw was multiplied by: 1 when exempt
    score: float  # (base + neighbours + session) × subject
    base: float = 0.0  # raw × decay_factor = scoring.decayed(...)
    neighbours: float = 0.0  # neighbour smoothing's share (signals)
    session: float = 0.0  # session coherence's share
    subject: float = 1.0  # the subject factor applied

    @property
    def terms_total(self) -> float:
        return sum(part.score for part in self.terms)


@dataclass(frozen=True)
class SearchExplain:
    query_terms: list[str]
    n_docs: int
    avgdl: float
    k1: float
    b: float
    decay_strength: float
    best_raw: float
    results: list[SearchExplanation]


def explain_search(*, access: ProjectAccess, query: SearchQuery) -> SearchExplain:
    """The top `query.k` of memory_search for `query` (without a session), each with the parts
    of its score: the same ranking (search.rank), asked for its parts. Reads only."""
    now = query.as_of or timezone.now()
    config = recall_config(access.project.settings)
    ranking = rank(access=access, query=query, now=now, depth=query.k, config=config, explain=True)
    top = ranking.ranked[: query.k]
    full = (
        Memory.objects.filter(project=access.project)
        .select_related("owner")
        .in_bulk([r.memory_id for r in top])
    )
    results = []
    at = now.timestamp()
    for position, ranked in enumerate(top, 1):
        if ranked.memory_id not in full:  # deleted since the bank copy was read
            continue
        if ranked.importance >= scoring.DECAY_EXEMPT_IMPORTANCE:
            exempt = "importance"
        elif ranked.raw >= scoring.SUPER_MATCH * ranking.best_raw:
            exempt = "super_match"
        else:
            exempt = ""
        age_days = (at - ranked.updated_at) / 86_400
        weight = scoring.recency_weights(np.array([age_days]))[0]
        factor = 1.0 if exempt else 1 - config.search_decay + config.search_decay * weight
        results.append(
            SearchExplanation(
                memory=full[ranked.memory_id],
                rank=position,
                terms=list(ranked.parts),
                raw=ranked.raw,
                age_days=age_days,
                recency_weight=float(weight),
                exempt=exempt,
                decay_factor=float(factor),
                score=ranked.score,
                base=ranked.base,
                neighbours=ranked.signal.neighbours if ranked.signal else 0.0,
                session=ranked.signal.session if ranked.signal else 0.0,
                subject=ranked.signal.subject if ranked.signal else 1.0,
            )
        )
    return SearchExplain(
        query_terms=ranking.terms,
        n_docs=ranking.n_docs,
        avgdl=ranking.avgdl,
        k1=config.search_k1,
        b=config.search_b,
        decay_strength=config.search_decay,
        best_raw=ranking.best_raw,
        results=results,
    )


@dataclass(frozen=True)
class RecallPreview:
    """The per-message recall (POST …/recall/) an agent would get for `prompt`."""

    text: str
    hits: list[Hit]
    files: list[str]  # recall file paths the selector chose

    @property
    def token_estimate(self) -> int:
        return estimate_tokens(self.text)


@dataclass(frozen=True)
class InjectionPreview:
    profile: Profile
    payload: Payload
    payload_memories: list[Memory]  # in payload order
    recall: RecallPreview
    search: SearchExplain
    now: datetime = field(default_factory=timezone.now)

    @property
    def combined_text(self) -> str:
        """What reaches the agent on the first turn: the payload, then the message's recall."""
        return "\n".join(part for part in (self.payload.text, self.recall.text) if part)

    @property
    def token_estimate(self) -> int:
        return estimate_tokens(self.combined_text)


def recall_preview(*, access: ProjectAccess, prompt: str, now: datetime) -> RecallPreview:
    """recall_for_message without a session and without marking anything as injected."""
    if not prompt.strip():
        return RecallPreview(text="", hits=[], files=[])
    hits = keyword_hits.keyword_hits(access=access, message=prompt, session=None, now=now)
    chosen = recall_files.select(
        project=access.project,
        query=prompt,
        files=selectors.recall_candidates(access=access, session=None),
    )
    files = selectors.recall_files_with_content(files=chosen)
    text_ = recall_text([hits_block(hits), recall_files.render(files, now)])
    return RecallPreview(text=text_, hits=hits, files=[f.path for f in files])


def preview(
    *, access: ProjectAccess, profile: Profile, prompt: str, k: int = 10
) -> InjectionPreview:
    """Everything the agent of `profile` would receive for a first turn with `prompt`, as
    `access`'s person, with the scores that chose each memory."""
    now = timezone.now()
    payload = build_payload(access=access, profile=profile)
    memories = Memory.objects.in_bulk(payload.memory_pks)
    return InjectionPreview(
        profile=profile,
        payload=payload,
        payload_memories=[memories[pk] for pk in payload.memory_pks if pk in memories],
        recall=recall_preview(access=access, prompt=prompt, now=now),
        search=explain_search(access=access, query=SearchQuery(text=prompt, k=k, as_of=now)),
        now=now,
    )
