"""Per-message recall hits (POST …/recall/): the memories to put beside a user message.

The one ranking (search.rank, issue 14: BM25 × decay, the context signals, the embedding
re-scorer when on) over the active memories the caller may see (memory_visible), minus those
written by this session (meow-memory skips what is still in the session's context), for the
first 500 characters of the message; its top two, and only then the memories already injected
into the session since its last compaction are dropped (meow-memory filters after taking the
top two), so fewer than two may remain.

Until issue 15 this ranked on its own with meow-memory's keywordHitScore over keywords and
titles; one ranking means an agent's per-message recall, its searches, Hindsight and MCP recall
agree, and the per-message call costs what a search costs.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from memoryhub.memories.text import tokenize
from memoryhub.recall import search
from memoryhub.recall.conf import recall_config
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess

HIT_TOP_K = 2
QUERY_MAX_CHARS = 500


def keyword_hits(
    *,
    access: ProjectAccess,
    message: str,
    session: AgentSession | None,
    now: datetime | None = None,
    k: int = HIT_TOP_K,
) -> list[search.Hit]:
    """The memories to inject for `message` (at most `k`), best first. Reads only: the caller
    marks what it injects (services.recall_mark_injected)."""
    now = now or timezone.now()
    text = message[:QUERY_MAX_CHARS]
    if not tokenize(text):
        return []
    query = search.SearchQuery(
        text=text,
        k=k,
        as_of=now,
        record=False,
        exclude_source_sessions=(
            frozenset({session.external_id}) if session is not None else frozenset()
        ),
    )
    config = recall_config(access.project.settings)
    top = search.rank(access=access, query=query, now=now, depth=k, config=config).ranked[:k]
    if not top:
        return []
    full = search.load_memories(
        project_id=access.project.pk,
        ids=[r.memory_id for r in top],
        unless_injected_into=session,
    )
    # Left out: a memory injected since the last compaction, or deleted since the bank copy
    # was read.
    return [
        search.Hit(memory=full[r.memory_id], score=r.score, raw=r.raw, base=r.base, parts=r.signal)
        for r in top
        if r.memory_id in full
    ]
