"""The pipeline's use cases: which sessions are due, stage 1, stage 2, and the bank admin.

Each run is idempotent: it works under a lease (memoryhub.pipeline.jobs) renewed while it runs,
only on input past the job's success watermark, and writes memories through memory_remember,
which merges a memory written twice into one. Its writes commit only while it still holds its
job (jobs.held): a run that lost its lease, or whose job a bank clear deleted, stops there.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Least
from django.utils import timezone

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.core.exceptions import ApplicationError, Conflict
from memoryhub.core.services import audit_record
from memoryhub.embeddings import services as embeddings
from memoryhub.llm import client as llm
from memoryhub.memories import artifacts
from memoryhub.memories import selectors as memory_selectors
from memoryhub.memories.kinds import DEFAULT_SCOPE, Scope
from memoryhub.memories.models import BankArtifact, Memory, content_hash
from memoryhub.memories.selectors import memory_project_level
from memoryhub.memories.services import MemoryInput, memory_clear_derived, memory_remember
from memoryhub.pipeline import extractor, jobs, prompts, stage2, tasks
from memoryhub.pipeline.conf import PipelineConfig, pipeline_config, review_required
from memoryhub.pipeline.models import Job, Stage1Output
from memoryhub.sessions.models import AgentSession, SessionRecord
from projects.models import Project
from projects.services import confirmation_check

logger = logging.getLogger(__name__)

PIPELINE = "pipeline"


def project_job_key(project: Project) -> str:
    return f"project:{project.pk}"


# --- Scanning: what is due -----------------------------------------------------------------


def stage1_job_ensure(*, session: AgentSession, config: PipelineConfig) -> Job:
    """The session's stage-1 job, due up to its current record count (ensure-style)."""
    return jobs.ensure(
        kind=Job.Kind.STAGE1,
        key=str(session.public_id),
        project=session.project,
        watermark=session.record_count,
        session_id=session.pk,
        retries=config.retries,
    )


def stage1_progress_restore(*, project: Project) -> int:
    """After a backup is restored (its jobs are not in it: they are leases of a running
    system): every session with a stage-1 output counts as extracted up to that output's
    watermark, so the scan does not pay an LLM to extract it again. Returns the jobs written."""
    done = [
        Job(
            kind=Job.Kind.STAGE1,
            key=str(session_public_id),
            project=project,
            session_id=session_id,
            status=Job.Status.DONE,
            input_watermark=watermark,
            success_watermark=watermark,
            retries_remaining=pipeline_config(project.settings).retries,
        )
        for session_id, session_public_id, watermark in Stage1Output.objects.filter(
            project=project
        ).values_list("session_id", "session__public_id", "source_watermark")
    ]
    Job.objects.bulk_create(done, ignore_conflicts=True)
    return len(done)


def stage1_enqueue_due(*, project: Project, now: Any = None) -> list[int]:
    """Ensure a stage-1 job for every due session of the project; return claimable job ids.

    Due (seed 003): active in the last stage1_max_session_age_days, idle for
    stage1_min_session_idle_hours (or ended by the agent), among the newest session_scan_limit,
    with records past the last extraction. At most stage1_max_sessions_per_scan are returned.
    """
    now = now or timezone.now()
    config = pipeline_config(project.settings)
    sessions = (
        AgentSession.objects.filter(
            project=project,
            record_count__gt=0,
            last_active_at__gte=now - timedelta(days=config.stage1_max_session_age_days),
        )
        .filter(
            Q(status=AgentSession.Status.ENDED)
            | Q(last_active_at__lte=now - timedelta(hours=config.stage1_min_session_idle_hours))
        )
        .order_by("-last_active_at")[: config.session_scan_limit]
    )
    for session in sessions:
        stage1_job_ensure(session=session, config=config)
    due = Job.objects.filter(jobs.claimable(), project=project, kind=Job.Kind.STAGE1)
    # stage1_concurrency: extractions of one project running at once (live leases count).
    running = Job.objects.filter(
        project=project,
        kind=Job.Kind.STAGE1,
        status=Job.Status.RUNNING,
        lease_until__gt=timezone.now(),
    ).count()
    room = max(0, min(config.stage1_max_sessions_per_scan, config.stage1_concurrency - running))
    return list(due.order_by("pk").values_list("pk", flat=True)[:room])


def stage2_due(*, project: Project) -> int | None:
    job = Job.objects.filter(
        jobs.claimable(), kind=Job.Kind.STAGE2, key=project_job_key(project)
    ).first()
    return job.pk if job else None


def stage2_mark_dirty(*, project: Project) -> Job:
    return jobs.ensure(
        kind=Job.Kind.STAGE2,
        key=project_job_key(project),
        project=project,
        bump=True,
        retries=pipeline_config(project.settings).retries,
    )


# --- Stage 1 -------------------------------------------------------------------------------


def _source_records(session: AgentSession, start: int, end: int) -> list[extractor.SourceRecord]:
    rows = SessionRecord.objects.filter(session=session, index__gte=start, index__lt=end)
    return [
        extractor.SourceRecord(
            index=r.index,
            type=r.type,
            content=r.content,
            tool_use_id=r.tool_use_id,
            is_error=r.is_error,
            contains_injection=r.contains_injection,
        )
        for r in rows.order_by("index")
    ]


def _typed_memories(
    project: Project,
    records: list[extractor.SourceRecord],
    existing: list[str],
    config: PipelineConfig,
) -> list[extractor.ExtractedMemory]:
    offline = extractor.extract(records)
    record_range = (records[0].index, records[-1].index)

    def offline_answer() -> str:
        return json.dumps(
            {"memories": [{k: v for k, v in asdict(m).items() if k != "rule"} for m in offline]},
            ensure_ascii=False,
        )

    request = llm.LlmRequest(
        purpose="stage1_memories",
        messages=prompts.typed_memories_messages(
            records, existing, token_limit=config.fallback_token_limit
        ),
        offline=offline_answer,
        project=project,
    )
    return llm.complete_json(
        request, validate=lambda obj: prompts.validate_typed(obj, record_range=record_range)
    )


def _stage1_output(
    project: Project,
    session: AgentSession,
    records: list[extractor.SourceRecord],
    memories: list[extractor.ExtractedMemory],
    config: PipelineConfig,
) -> dict[str, Any]:
    request = llm.LlmRequest(
        purpose="stage1_output",
        messages=prompts.stage1_output_messages(
            session.external_id,
            records,
            context_window=config.context_window,
            input_token_limit=config.stage1_input_token_limit,
            payload_percent=config.stage1_payload_percent,
            fallback_token_limit=config.fallback_token_limit,
        ),
        # The stage-1 output feeds the shared artifacts: personal (user-scope) memories stay out.
        offline=lambda: json.dumps(
            extractor.offline_stage1(
                records, [m for m in memories if DEFAULT_SCOPE[m.kind] == Scope.PROJECT]
            ),
            ensure_ascii=False,
        ),
        project=project,
        max_tokens=prompts.stage1_max_tokens(
            config.context_window, fallback_token_limit=config.fallback_token_limit
        ),
    )
    return llm.complete_json(request, validate=prompts.validate_stage1_output)


def stage1_extract(*, job: Job, claim: jobs.Claim) -> dict[str, Any]:
    """Extract the session's records past the last success into memories and a stage-1 output.
    Each write commits only while this run holds the job (a bank clear meanwhile stops it)."""
    session = job.session
    assert session is not None
    project = job.project
    config = pipeline_config(project.settings)
    start, watermark = job.success_watermark, claim.watermark
    records = _source_records(session, start, watermark)
    if not records:
        with jobs.held(claim):
            stage2_mark_dirty(project=project)
        return {"memories": 0}
    existing = list(
        memory_project_level(project=project)
        .filter(status=Memory.Status.ACTIVE)
        .order_by("-updated_at")
        .values_list("content", flat=True)[:50]
    )
    memories = _typed_memories(project, records, existing, config)
    status = Memory.Status.PROPOSED if review_required(project.settings) else Memory.Status.ACTIVE
    actor = Actor.for_system(PIPELINE, user=session.created_by_user)
    merged = kept = 0
    ids: list[int] = []  # what this extraction found again or wrote (a rebuild keeps these)
    for item in memories:
        # A re-extraction (a rebuild, a lost watermark) finds the memory it would replace and
        # keeps it as it is: its id, status, reason, edits and history are people's decisions.
        before = memory_selectors.memory_extracted_before(
            project=project,
            kind=item.kind,
            source_session=session.external_id,
            record_start=item.record_start,
            record_end=item.record_end,
            content_hash=content_hash(redaction.redact(item.content)[0]),
            owner=session.created_by_user,
        )
        if before is not None:
            kept += 1
            ids.append(before.pk)
            continue
        with jobs.held(claim):
            result = memory_remember(
                project=project,
                actor=actor,
                data=MemoryInput(
                    content=item.content,
                    kind=item.kind,
                    title=item.title,
                    keywords=list(item.keywords),
                    importance=item.importance,
                    status=status,
                    subcategory=item.subcategory,
                    goal=item.goal,
                    source_session=session.external_id,
                    source_record_start=item.record_start,
                    source_record_end=item.record_end,
                ),
            )
        merged += int(result.merged)
        ids.append(result.memory.pk)
    output = _stage1_output(project, session, records, memories, config)
    with jobs.held(claim):
        _stage1_output_store(session, output, start=start, end=watermark)
        stage2_mark_dirty(project=project)
    return {
        "memories": len(memories),
        "merged": merged,
        "kept": kept,
        "records": len(records),
        "memory_ids": ids,
    }


@transaction.atomic
def _stage1_output_store(
    session: AgentSession, answer: dict[str, Any], *, start: int, end: int
) -> None:
    """Store the output of records [start, end). Extraction is incremental: raw memories
    accumulate, the newest summary wins. Idempotent: a repeat of the last range (a run that
    lost its lease, then its successor) replaces that range's raw memory instead of adding it
    again."""
    summary, _ = redaction.redact(answer["rollout_summary"].strip())
    raw, _ = redaction.redact(answer["raw_memory"].strip())
    output = Stage1Output.objects.select_for_update().filter(session=session).first()
    if output is None:
        if not (summary or raw):
            return  # no durable signal: nothing for stage 2 (seed 003's no_output)
        output = Stage1Output(session=session, project=session.project)
    if start <= output.last_start:
        kept = output.raw_memory[: output.last_offset]  # what came before that range
    else:
        kept = output.raw_memory
    output.raw_memory = "\n\n".join(p for p in (kept, raw) if p)
    output.last_start, output.last_offset = start, len(kept)
    output.rollout_summary = summary or output.rollout_summary
    output.rollout_slug = answer.get("rollout_slug") or output.rollout_slug
    output.source_watermark = max(output.source_watermark, end)
    output.generated_at = timezone.now()
    output.save()


# A run's outcome when its job no longer exists (see jobs.find).
GONE = "gone"


def _run(
    job_id: int,
    *,
    lease: int,
    retry_delay: int,
    work: Callable[[Job, jobs.Claim], dict[str, Any]],
    heartbeat_seconds: int | None = None,
) -> str:
    """Claim, work, then succeed or fail: the frame every job run shares. The lease is renewed
    every heartbeat_seconds (a third of the lease by default) while the work runs, so a slow
    run keeps its job and a dead one loses it."""
    claim = jobs.claim(job_id, lease_seconds=lease)
    if claim is None:
        return "skipped"
    stop = threading.Event()
    lost = threading.Event()
    interval = heartbeat_seconds or max(1, lease // 3)

    def beat() -> None:
        from django.db import connection

        try:
            while not stop.wait(interval):
                if not jobs.heartbeat(claim, lease_seconds=lease):
                    lost.set()
                    return
        finally:
            connection.close()

    threading.Thread(target=beat, daemon=True).start()
    try:
        job = jobs.find(job_id)
        if job is None:
            return GONE
        detail = work(job, claim)
        if lost.is_set():
            raise jobs.LeaseLost("lost the job's lease while working")
    except Exception as exc:
        if jobs.find(job_id) is None:
            logger.info("Job %s was deleted while it ran (%s)", job_id, type(exc).__name__)
            return GONE
        if isinstance(exc, jobs.LeaseLost):
            # Its new owner runs it (the claim counted this attempt); nothing of ours to write.
            logger.warning("Job %s lost its lease; its outcome is left to the new owner", job_id)
            return "skipped"
        logger.exception("Job %s failed", job_id)
        jobs.fail(claim, f"{type(exc).__name__}: {exc}", retry_delay_seconds=retry_delay)
        return "error"
    finally:
        stop.set()
    if not jobs.succeed(claim, detail=detail):
        if jobs.find(job_id) is None:
            return GONE  # deleted meanwhile (its project, or a bank clear): nothing follows
        return "skipped"  # taken over after the work: the new owner's outcome stands
    return "done"


def stage1_run(*, job_id: int, follow_up: bool = True) -> str:
    """Run a stage-1 job; when it is done, the stage 2 it made due is sent at once
    (follow_up; a rebuild runs stage 2 once at its end instead)."""
    job = jobs.find(job_id)
    if job is None:
        return GONE
    config = pipeline_config(job.project.settings)

    def work(job: Job, claim: jobs.Claim) -> dict[str, Any]:
        return stage1_extract(job=job, claim=claim)

    outcome = _run(
        job_id,
        lease=config.stage1_lease_seconds,
        retry_delay=config.stage1_retry_delay_seconds,
        work=work,
    )
    if outcome == "done" and follow_up:
        stage2_job = stage2_due(project=job.project)
        if stage2_job is not None:
            tasks.send_on_commit(tasks.stage2_run, stage2_job)
    return outcome


# --- Stage 2 -------------------------------------------------------------------------------


def stage2_build(*, project: Project) -> dict[str, Any]:
    """Rewrite the project's artifacts from its stage-1 outputs (full replace)."""
    config = pipeline_config(project.settings)
    actor = Actor.for_system(PIPELINE)
    inputs = list(
        Stage1Output.objects.filter(project=project)
        .exclude(raw_memory="", rollout_summary="")
        .select_related("session")
        .order_by("-generated_at")[: config.stage2_max_raw_memories]
    )
    if not inputs:
        result = artifacts.artifacts_replace_all(project=project, files={}, actor=actor)
        return {"inputs": 0, "deleted": len(result.deleted)}
    # Shared artifacts hold what every member may see: project-scope memories only (a
    # person's own preferences reach them through their payloads, never through MEMORY.md).
    memories = list(memory_project_level(project=project).filter(status=Memory.Status.ACTIVE))
    request = llm.LlmRequest(
        purpose="stage2",
        role="smol",
        messages=stage2.messages(inputs),
        offline=lambda: json.dumps(stage2.offline_output(memories), ensure_ascii=False),
        project=project,
        max_tokens=8192,
    )
    output = llm.complete_json(request, validate=stage2.validate)
    files = {path: redaction.redact(content)[0] for path, content in stage2.files(output).items()}
    result = artifacts.artifacts_replace_all(project=project, files=files, actor=actor)
    return {
        "inputs": len(inputs),
        "created": len(result.created),
        "updated": len(result.updated),
        "deleted": len(result.deleted),
    }


def stage2_run(*, job_id: int) -> str:
    """Run the stage-2 job. Extractions that finished meanwhile could not start another
    one (the lease was held): the bank is dirty again, so it is sent once more now rather than
    at the next scan."""
    job = jobs.find(job_id)
    if job is None:
        return GONE
    config = pipeline_config(job.project.settings)
    outcome = _run(
        job_id,
        lease=config.stage2_lease_seconds,
        retry_delay=config.stage2_retry_delay_seconds,
        heartbeat_seconds=config.stage2_heartbeat_seconds,
        work=lambda job, claim: stage2_build(project=job.project),
    )
    if outcome == "done" and stage2_due(project=job.project) == job_id:
        tasks.send_on_commit(tasks.stage2_run, job_id)
    return outcome


def pipeline_scan_project(*, project: Project) -> dict[str, int]:
    """Send every due job of the project to the workers (on commit): stage 1, stage 2,
    and at most one dream window (meow starts one per tick). What beat does for each project."""
    from memoryhub.pipeline.dream import schedule  # the dream builds on these services

    # Jobs whose last attempt died with its worker: failed, visibly, not silently stuck.
    jobs.fail_interrupted(Job.objects.filter(project=project))
    stage1 = stage1_enqueue_due(project=project)
    for job_id in stage1:
        tasks.send_on_commit(tasks.stage1_run, job_id)
    stage2_job = stage2_due(project=project)
    if stage2_job is not None:
        tasks.send_on_commit(tasks.stage2_run, stage2_job)
    window = schedule.dream_enqueue_due(project=project)
    if window is not None:
        tasks.send_on_commit(tasks.dream_run, window)
    # Queued transcript imports and rebuilds whose message was lost (broker down, worker
    # killed: pending, or running with an expired lease) go again; a duplicate is skipped.
    resend: dict[str, Any] = {
        Job.Kind.IMPORT: tasks.session_import_run,
        Job.Kind.REBUILD: tasks.rebuild_run,
    }
    for job_id, kind in Job.objects.filter(
        jobs.claimable(), project=project, kind__in=list(resend)
    ).values_list("pk", "kind"):
        tasks.send_on_commit(resend[kind], job_id)
    return {
        "stage1": len(stage1),
        "stage2": int(stage2_job is not None),
        "dream": int(window is not None),
    }


# --- Bank administration -------------------------------------------------------------------


def _deleted(qs: QuerySet[Any]) -> int:
    """Rows of qs's own model deleted (not the rows that cascaded with them)."""
    return qs.delete()[1].get(qs.model._meta.label, 0)


def _lock_bank_admin(project: Project) -> None:
    """One clear or rebuild of a project at a time: the project row is locked until commit,
    and a rebuild that is queued or running refuses the second request (409, "told so")."""
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()
    busy = Job.objects.filter(
        Q(status=Job.Status.PENDING) | Q(status=Job.Status.RUNNING, lease_until__gt=timezone.now()),
        kind=Job.Kind.REBUILD,
        key=project_job_key(project),
    )
    if busy.exists():
        raise Conflict("A rebuild of this project is already queued or running; wait for it.")


@transaction.atomic
def bank_clear(
    *,
    project: Project,
    actor: Actor,
    confirm: str,
    include_transcripts: bool = False,
    keep_memories: bool = False,
) -> dict[str, int]:
    """Delete what the pipeline derived (memories, artifacts, stage-1 outputs, jobs), and the
    transcripts only when asked. Memories people or agents wrote directly stay; a rebuild
    keeps the derived ones too (keep_memories) and matches them as it re-extracts."""
    confirmation_check(project, confirm)
    _lock_bank_admin(project)
    cleared = 0 if keep_memories else memory_clear_derived(project=project).cleared
    counts = {
        "memories": cleared,
        "artifacts": _deleted(BankArtifact.objects.filter(project=project)),
        "stage1_outputs": _deleted(Stage1Output.objects.filter(project=project)),
        "jobs": _deleted(
            # A queued transcript import is not derived: it is the upload itself.
            Job.objects.filter(project=project).exclude(
                kind__in=[Job.Kind.REBUILD, Job.Kind.IMPORT]
            )
        ),
    }
    if include_transcripts:
        counts["sessions"] = _deleted(AgentSession.objects.filter(project=project))
    audit_record(
        actor=actor,
        project=project,
        verb="bank.cleared",
        target_type="project",
        target_id=project.public_id,
        after=counts | {"include_transcripts": include_transcripts},
    )
    return counts


@transaction.atomic
def bank_rebuild_start(*, project: Project, actor: Actor, confirm: str) -> Job:
    """Clear derived data and queue a rebuild that replays every stored session."""
    confirmation_check(project, confirm)
    _lock_bank_admin(project)
    # Memories stay until the re-extraction has matched them (see rebuild).
    bank_clear(project=project, actor=actor, confirm=confirm, keep_memories=True)
    job = jobs.ensure(
        kind=Job.Kind.REBUILD, key=project_job_key(project), project=project, bump=True
    )
    Job.objects.filter(pk=job.pk).update(progress=0, detail={})
    audit_record(
        actor=actor,
        project=project,
        verb="bank.rebuild_started",
        target_type="project",
        target_id=project.public_id,
    )
    job.refresh_from_db()
    tasks.send_on_commit(tasks.rebuild_run, job.pk)
    return job


def rebuild(job: Job, claim: jobs.Claim) -> dict[str, Any]:
    """Replay every stored session through stage 1, then stage 2, reporting progress."""
    project = job.project
    config = pipeline_config(project.settings)
    sessions = list(
        AgentSession.objects.filter(project=project, record_count__gt=0).order_by(
            "created_at", "pk"
        )
    )
    total = len(sessions) + 1
    started = timezone.now()
    extracted = kept = 0
    found: set[int] = set()
    for done, session in enumerate(sessions, 1):
        stage1 = stage1_job_ensure(session=session, config=config)
        if stage1_run(job_id=stage1.pk, follow_up=False) == "done":
            extracted += 1
            stage1.refresh_from_db(fields=["detail"])
            kept += int(stage1.detail.get("kept", 0))
            found.update(stage1.detail.get("memory_ids", []))
        if not jobs.heartbeat(
            claim, lease_seconds=config.stage2_lease_seconds, progress=int(100 * done / total)
        ):
            raise RuntimeError("lost the rebuild's lease")
    # What the sessions no longer yield goes, unless a person decided something about it.
    removed = memory_clear_derived(
        project=project, keep_human_decisions=True, keep_ids=found, created_before=started
    )
    stage2_mark_dirty(project=project)
    stage2_result = stage2_build(project=project)
    # Vectors of whatever the sessions yielded and the bank lacks (0 without a provider).
    embedding = embeddings.embeddings_enqueue_missing(project=project)
    return {
        "sessions": len(sessions),
        "extracted": extracted,
        # Re-extracted memories matched to the ones they replace, kept with their id, status,
        # reason, edits and history.
        "memories_kept": kept,
        "memories_removed": removed.cleared,
        "memories_kept_by_decision": removed.kept,
        "stage2": stage2_result,
        "embeddings_queued": embedding,
    }


def rebuild_run(*, job_id: int) -> str:
    job = jobs.find(job_id)
    if job is None:
        return GONE
    config = pipeline_config(job.project.settings)
    return _run(
        job_id,
        lease=config.stage2_lease_seconds,
        retry_delay=config.stage2_retry_delay_seconds,
        heartbeat_seconds=config.stage2_heartbeat_seconds,
        work=rebuild,
    )


# --- Extract one session now (dashboard "extract now", POST …/sessions/{id}/extract/) ------


@transaction.atomic
def stage1_request(*, project: Project, session: AgentSession, actor: Actor) -> Job:
    """Make the session's stage-1 job claimable now, whatever its idle time: up to its current
    record count, with fresh retries and no back-off; the job is sent to a worker on commit."""
    if session.record_count == 0:
        raise ApplicationError("This session has no records to extract.")
    config = pipeline_config(project.settings)
    job = stage1_job_ensure(session=session, config=config)
    if job.success_watermark >= session.record_count:
        raise ApplicationError(
            f"Already extracted up to record {job.success_watermark}; nothing new to extract."
        )
    # A failed or backing-off job waits for nobody once a person asks.
    Job.objects.filter(pk=job.pk).update(retry_at=None, **jobs.fresh_attempts(config.retries))
    audit_record(
        actor=actor,
        project=project,
        verb="session.extract_requested",
        target_type="session",
        target_id=session.public_id,
        after={"records": session.record_count},
    )
    job.refresh_from_db()
    tasks.send_on_commit(tasks.stage1_run, job.pk)
    return job


@transaction.atomic
def bank_enqueue(*, project: Project, actor: Actor) -> dict[str, int]:
    """Mark stage 2 dirty and send all due work (on commit); what was sent."""
    stage2_mark_dirty(project=project)
    audit_record(
        actor=actor,
        project=project,
        verb="bank.enqueued",
        target_type="project",
        target_id=project.public_id,
    )
    return pipeline_scan_project(project=project)


# --- Extraction on demand --------------------------------------------------------------------


@transaction.atomic
def stage1_ensure_session(*, session: AgentSession, rewind_to: int | None = None) -> Job:
    """The session's stage-1 job, due now for the records past its last extraction (an agent
    re-sent its transcript and wants it learned without waiting for the idle scan).

    Idempotent (ensure-style): the input watermark becomes the session's record count. When the
    records from index `rewind_to` on were replaced, the success watermark moves back there, so
    only the changed tail is extracted again (memory_remember merges what is already known).
    """
    config = pipeline_config(session.project.settings)
    job = stage1_job_ensure(session=session, config=config)
    if rewind_to is not None:
        Job.objects.filter(pk=job.pk).update(
            success_watermark=Least(F("success_watermark"), rewind_to),
            input_watermark=session.record_count,
            **jobs.fresh_attempts(config.retries),
        )
        job.refresh_from_db()
    return job


@transaction.atomic
def stage1_output_import(
    *,
    project: Project,
    actor: Actor,
    thread_id: str,
    raw_memory: str,
    rollout_summary: str,
    rollout_slug: str = "",
    generated_at: Any = None,
) -> bool:
    """Store an oh-my-pi stage-1 output brought in by an import (raw_memories.md, a
    rollout_summaries/ file), under a session named by its thread id (created empty when
    missing). Idempotent: the same texts again change nothing. Returns True when it wrote.
    Stage 2 is not marked dirty: the imported MEMORY.md is already its result.
    """
    from memoryhub.sessions.services import session_get_or_create

    raw, _ = redaction.redact(raw_memory.strip())
    summary, _ = redaction.redact(rollout_summary.strip())
    try:
        session, _ = session_get_or_create(
            project=project, actor=actor, external_id=thread_id, metadata={"source": "omp"}
        )
    except Conflict:
        # Another person's session: its output may be re-imported unchanged (a team
        # member's export holds everyone's threads), never changed.
        theirs = Stage1Output.objects.filter(project=project, session__external_id=thread_id)
        if theirs.filter(raw_memory=raw, rollout_summary=summary).exists():
            return False
        raise
    output = Stage1Output.objects.select_for_update().filter(session=session).first()
    if output is not None and (output.raw_memory, output.rollout_summary) == (raw, summary):
        return False
    if output is None:
        output = Stage1Output(session=session, project=project)
    output.raw_memory, output.rollout_summary = raw, summary
    # An extraction of the session's records later adds to the imported text, never drops it.
    output.last_start, output.last_offset = output.source_watermark, len(raw)
    output.rollout_slug = rollout_slug[:64] or output.rollout_slug
    output.generated_at = generated_at or timezone.now()
    output.full_clean()
    output.save()
    audit_record(
        actor=actor,
        verb="stage1_output.imported",
        target_type="session",
        target_id=session.public_id,
        project=project,
        after={"thread_id": thread_id, "raw_chars": len(raw), "summary_chars": len(summary)},
    )
    return True
