"""find-similar: meow-memory's memory_find_similar (seed-algorithms §5.7), the duplicate and
contradiction finder the pipeline's merge check and agents use.

Score: cosine similarity of term-frequency vectors, the target's content against each
candidate's title + content + keywords, with meow-memory's own raw tokenizer (CJK bigrams and
lower-cased ASCII words, nothing removed). Not the bank tokenizer: that one stems and drops
stopwords, which is right for ranking a query but would change meow's similarity values
("deploying" vs "deploys" are different tokens for meow, and "the" counts).

Candidates: the caller's visible memories of every kind but soul and user, not the target, not
already seen by the session, not created in that session. The postings index limits them
(meow scans every row): for each of the target's TARGET_TERMS most frequent index terms, the
PER_TERM newest matching memories (one bounded walk down the (project, term, memory) index per
term); the CANDIDATE_POOL that turned up under the most terms are scored exactly. The
approximation: a memory sharing only stopwords with the target (which the index does not
hold), or only very common terms while being older than the newest PER_TERM memories with each
of them, is never scored, where meow would give it a positive cosine. Kept: scores > 0,
rounded to 3 decimals, top k (≤ 20). With a session, the results are marked as searched by it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Q

from memoryhub.memories import similarity, text
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory, MemoryTerm
from memoryhub.memories.selectors import memory_visible_q
from memoryhub.recall import selectors, services
from memoryhub.recall.models import RecallSeen
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess

MAX_K = 20
DEFAULT_K = 5
TARGET_TERMS = 16
PER_TERM = 200
CANDIDATE_POOL = 500
EXCLUDED_KINDS = frozenset({Kind.SOUL, Kind.USER})
CANDIDATE_KINDS = tuple(kind for kind in Kind.values if kind not in EXCLUDED_KINDS)


def surface(memory: Memory) -> str:
    """What a candidate is compared on: title + content + keywords."""
    return " ".join([memory.title, memory.content, " ".join(memory.keywords)])


def _target_terms(target: Memory) -> list[str]:
    """The target's TARGET_TERMS most frequent index terms (ties: longer, then alphabetical)."""
    counts = text.term_counts(target.content)
    ranked = sorted(counts, key=lambda term: (-counts[term], -len(term), term))
    return ranked[:TARGET_TERMS]


@dataclass(frozen=True)
class Similar:
    memory: Memory
    score: float  # rounded to 3 decimals


def find_similar(
    *,
    access: ProjectAccess,
    target: Memory,
    k: int = DEFAULT_K,
    session: AgentSession | None = None,
    statuses: tuple[str, ...] = (Memory.Status.ACTIVE,),
) -> list[Similar]:
    k = max(1, min(k, MAX_K))
    excluded = {target.pk}
    if session is not None:
        excluded |= selectors.seen_memory_ids(session=session)
    found: Counter[int] = Counter()
    for term in _target_terms(target):
        rows = (
            MemoryTerm.objects.filter(project=access.project, term=term)
            .filter(
                memory_visible_q(user=access.actor.user, prefix="memory__"),
                memory__status__in=statuses,
                memory__kind__in=CANDIDATE_KINDS,
            )
            .order_by("-memory_id")
            .values_list("memory_id", flat=True)[:PER_TERM]
        )
        found.update(memory_id for memory_id in rows if memory_id not in excluded)
    # Most shared terms first, then newest: deterministic.
    pool = sorted(found, key=lambda memory_id: (-found[memory_id], -memory_id))[:CANDIDATE_POOL]
    candidates = Memory.objects.filter(pk__in=pool)
    if session is not None:
        candidates = candidates.exclude(
            Q(source_session=session.external_id) | Q(source_session=str(session.public_id))
        )
    target_vector = Counter(similarity.meow_tokens(target.content))
    scored = []
    for memory in candidates:
        score = similarity.vector_cosine(
            target_vector, Counter(similarity.meow_tokens(surface(memory)))
        )
        if score > 0:
            scored.append((score, memory))
    scored.sort(key=lambda pair: (-pair[0], pair[1].created_at, pair[1].pk))
    results = [Similar(memory=memory, score=round(score, 3)) for score, memory in scored[:k]]
    if session is not None:
        services.recall_seen_mark(
            session=session,
            memory_ids=[r.memory.pk for r in results],
            reason=RecallSeen.Reason.SEARCHED,
        )
    return results
