"""What an export may contain: everything the caller can read in the project, through the
owning apps' selectors. Memories come from memory_visible (project scope, plus the caller's own
user-scope memories: another person's never leave the server in someone else's export)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from django.http import Http404

from memoryhub.interchange.bundle import (
    Snapshot,
    SnapshotMemory,
    SnapshotRecallFile,
    SnapshotRollout,
    SnapshotSession,
)
from memoryhub.memories import artifacts
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible
from memoryhub.pipeline import selectors as pipeline_selectors
from memoryhub.recall import selectors as recall_selectors
from memoryhub.sessions import selectors as session_selectors
from memoryhub.sessions.models import AgentSession
from projects.selectors import ProjectAccess

# SnapshotMemory's fields that are copied from the Memory as they are.
_PLAIN_FIELDS = [
    f.name
    for f in dataclasses.fields(SnapshotMemory)
    if f.name not in ("public_id", "keywords", "metadata")
]


def _records(session: AgentSession) -> Iterator[dict[str, Any]]:
    records = session_selectors.records_page(session=session, after=None, types=())
    for record in records.iterator(chunk_size=1000):
        yield record.to_input().to_dict()


def snapshot(*, access: ProjectAccess, parts: frozenset[str]) -> Snapshot:
    """The caller's view of the project; `parts` names what the format needs (memories,
    recall_files, instructions, sessions, artifacts, rollouts)."""
    result = Snapshot(project_slug=access.project.slug)
    if "memories" in parts:
        # Proposed memories wait for review: they leave only once approved.
        memories = (
            memory_visible(access=access)
            .exclude(status=Memory.Status.PROPOSED)
            .order_by("created_at", "id")
        )
        result.memories = [
            SnapshotMemory(
                public_id=str(m.public_id),
                keywords=list(m.keywords),
                metadata=dict(m.metadata),
                **{name: getattr(m, name) for name in _PLAIN_FIELDS},
            )
            for m in memories.iterator(chunk_size=1000)
        ]
    if "recall_files" in parts:
        result.recall_files = [
            SnapshotRecallFile(
                scope=f.scope, path=f.path, content=f.content, updated_at=f.updated_at
            )
            for f in recall_selectors.recall_file_list(access=access)
        ]
    if "instructions" in parts:
        result.instructions = {
            f.path: (f.content, f.updated_at)
            for f in recall_selectors.instruction_file_list(access=access)
        }
        try:
            own = recall_selectors.user_instruction_file_get(access=access)
        except Http404:
            pass
        else:
            result.user_instructions = (own.content, own.updated_at)
    if "artifacts" in parts:
        for row in artifacts.artifact_list(project=access.project):
            full = artifacts.artifact_get(project=access.project, path=row.path)
            result.artifacts[full.path] = (full.content, full.updated_at)
    if "sessions" in parts:
        sessions = session_selectors.session_list(
            access=access, filters=session_selectors.SessionFilters()
        )
        result.sessions = [
            SnapshotSession(
                external_id=s.external_id,
                title=s.title,
                summary=s.summary,
                message_count=s.message_count,
                token_estimate=s.token_estimate,
                created_at=s.created_at,
                last_active_at=s.last_active_at,
                records=_records(s),
            )
            for s in list(sessions)[::-1]
            if s.record_count
        ]
    if "rollouts" in parts:
        result.rollouts = [
            SnapshotRollout(
                thread_id=o.session.external_id,
                raw_memory=o.raw_memory,
                rollout_summary=o.rollout_summary,
                rollout_slug=o.rollout_slug,
                updated_at=o.generated_at,
            )
            for o in pipeline_selectors.stage1_output_list(project=access.project)
        ]
    return result
