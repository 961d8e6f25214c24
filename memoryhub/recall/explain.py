"""Why a memory ranks where it does: the injection preview's explained scores.

Nothing here ranks on its own. The order and every score come from the ranking itself
(search.ranked, the read-only half of memory_search, context signals included); this module
reads the postings of the top memories again and splits each raw score into its terms (idf ×
query count × BM25's tf part) and names the recency factor and the signals' shares. A test
holds the explained total equal to what GET …/memories/search/ answers.

Keyword hits (meow-memory's per-message formula) already carry their factors
(keyword_hits.KeywordHit); preview() returns them as they are.

Side-effect free on purpose: memory_search records hit counts and the session's seen set, and
recall_for_message marks what it returns as injected; a preview must change neither.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.http import Http404
from django.utils import timezone

from accounts import selectors as account_selectors
from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.services import audit_record
from memoryhub.memories import index, text
from memoryhub.memories.models import Memory, MemoryTerm
from memoryhub.recall import keyword_hits, recall_files, scoring, selectors
from memoryhub.recall.conf import recall_config
from memoryhub.recall.injection import Payload, Profile, build_payload
from memoryhub.recall.layout import estimate_tokens
from memoryhub.recall.search import QUERY_MAX_TERMS, SearchQuery, ranked
from memoryhub.recall.services import hits_block, recall_text
from projects.models import Role
from projects.selectors import ProjectAccess, project_access


@dataclass(frozen=True)
class TermPart:
    """One query term's share of a memory's BM25."""

    term: str
    query_count: int  # repeats in the query count (meow-memory)
    df: int
    idf: float
    tf: int  # occurrences in the memory
    length: int  # the memory's term count
    score: float  # idf × query_count × tf × (k1 + 1) / (tf + k1 × (1 − b + b × length / avgdl))


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
    of its score. Reads only."""
    now = query.as_of or timezone.now()
    config = recall_config(access.project.settings)
    qtf = Counter(text.tokenize(query.text))
    terms = [t for t, _ in qtf.most_common(QUERY_MAX_TERMS)]
    project_id = access.project.pk
    df = index.document_frequencies(project_id, terms) if terms else {}
    n_docs, avgdl = index.corpus_stats(project_id)
    if df:
        n_docs = max(n_docs, *df.values())  # as raw_pool does
    base = SearchExplain(
        query_terms=terms,
        n_docs=n_docs,
        avgdl=avgdl,
        k1=config.search_k1,
        b=config.search_b,
        decay_strength=config.search_decay,
        best_raw=0.0,
        results=[],
    )
    ranking = ranked(access, query, now, query.k, config)
    if not ranking:
        return base
    best = max(hit.raw for hit in ranking)
    top = ranking[: query.k]
    ids = [hit.memory.pk for hit in top]
    postings: dict[int, list[tuple[str, int, int]]] = {i: [] for i in ids}
    for memory_id, term, tf, length in MemoryTerm.objects.filter(
        project_id=project_id, memory_id__in=ids, term__in=list(df)
    ).values_list("memory_id", "term", "tf", "length"):
        postings[memory_id].append((term, tf, length))
    bm25 = index.Bm25(k1=config.search_k1, b=config.search_b, avgdl=avgdl)
    full = Memory.objects.select_related("owner").in_bulk(ids)
    results = []
    for rank, hit in enumerate(top, 1):
        memory, raw = hit.memory, hit.raw
        parts = []
        for term, tf, length in sorted(postings[memory.pk], key=lambda p: terms.index(p[0])):
            idf = scoring.idf(n_docs, df[term])
            parts.append(
                TermPart(
                    term=term,
                    query_count=qtf[term],
                    df=df[term],
                    idf=idf,
                    tf=tf,
                    length=length,
                    score=bm25.term_score(idf * qtf[term], tf, length),
                )
            )
        if memory.importance >= scoring.DECAY_EXEMPT_IMPORTANCE:
            exempt = "importance"
        elif raw >= scoring.SUPER_MATCH * best:
            exempt = "super_match"
        else:
            exempt = ""
        weight = scoring.recency_weight(memory.updated_at, now)
        factor = 1.0 if exempt else 1 - config.search_decay + config.search_decay * weight
        results.append(
            SearchExplanation(
                memory=full[memory.pk],
                rank=rank,
                terms=parts,
                raw=raw,
                age_days=(now - memory.updated_at).total_seconds() / 86_400,
                recency_weight=weight,
                exempt=exempt,
                decay_factor=factor,
                score=hit.score,
                base=hit.base,
                neighbours=hit.parts.neighbours if hit.parts else 0.0,
                session=hit.parts.session if hit.parts else 0.0,
                subject=hit.parts.subject if hit.parts else 1.0,
            )
        )
    return SearchExplain(**{**base.__dict__, "best_raw": best, "results": results})


@dataclass(frozen=True)
class RecallPreview:
    """The per-message recall (POST …/recall/) an agent would get for `prompt`."""

    text: str
    hits: list[keyword_hits.KeywordHit]
    files: list[str]  # recall file paths the selector chose

    @property
    def token_estimate(self) -> int:
        return estimate_tokens(self.text)


@dataclass(frozen=True)
class InjectionPreview:
    profile: Profile
    user: User | None
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
        user=access.actor.user,
        payload=payload,
        payload_memories=[memories[pk] for pk in payload.memory_pks if pk in memories],
        recall=recall_preview(access=access, prompt=prompt, now=now),
        search=explain_search(access=access, query=SearchQuery(text=prompt, k=k, as_of=now)),
        now=now,
    )


@transaction.atomic
def preview_access_for(*, access: ProjectAccess, username: str) -> ProjectAccess:
    """The access of member `username`, for a maintainer previewing what that person's agent
    gets. It shows that person's own (user-scope) memories, so it is audited."""
    if access.actor.user is not None and username == access.actor.user.username:
        return access
    if not access.at_least(Role.MAINTAINER):
        raise ApplicationError(
            "Only maintainers can preview for another member.",
            details={"user": ["maintainers only"]},
        )
    user = account_selectors.user_get(username=username, active_only=True)
    if user is None:
        raise ApplicationError("No such member.", details={"user": ["not a member"]})
    try:
        other = project_access(slug=access.project.slug, actor=Actor(user=user))
    except Http404:
        raise ApplicationError("No such member.", details={"user": ["not a member"]}) from None
    audit_record(
        actor=access.actor,
        project=access.project,
        verb="injection.previewed_as",
        target_type="user",
        target_id=user.public_id,
        after={"username": username},
    )
    return other
