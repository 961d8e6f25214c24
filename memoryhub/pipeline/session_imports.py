"""Large transcript imports as background jobs (POST …/sessions/import/ above
SESSION_IMPORT_SYNC_MAX_BYTES).

The request only streams the upload into StagedChunk rows (1 MiB each, never the whole file in
memory) and answers 202 with the job; the worker parses it with the same all-or-nothing
sessions.services.session_import the synchronous path uses. The job is a pipeline Job (kind
"import"): leased and heartbeated, idempotent (the import, the job's success and the removal of
the staged rows commit in one transaction, so a re-sent or re-claimed job finds nothing left to
do), retried a bounded number of times on unexpected errors, failed at once on bad input (a
malformed line cannot get better), and visible where every job is (the bank's diagnose API and
page). Beat's scan re-sends a queued import whose message was lost (broker down, worker killed).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, transaction
from django.http import Http404

from accounts.actors import Actor
from accounts.models import ApiToken, User
from memoryhub.core import redaction
from memoryhub.core.exceptions import ApplicationError, Conflict, PayloadTooLarge
from memoryhub.core.services import audit_record
from memoryhub.pipeline import jobs, tasks
from memoryhub.pipeline.models import Job, StagedChunk
from memoryhub.sessions import services as session_services
from memoryhub.sessions.importers import TranscriptFormatError
from memoryhub.sessions.models import AgentSession
from projects.models import Project

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024
# A 256 MiB import parses in about 30 s on a busy 2-core machine; the heartbeat keeps the lease
# while it runs, and a worker that dies stops renewing it, so another may take over after this.
LEASE_SECONDS = 120
HEARTBEAT_SECONDS = 20
RETRIES = 3  # attempts on unexpected errors (database gone, worker killed mid-way)
RETRY_DELAY_SECONDS = 30


class LeaseLost(RuntimeError):
    """Another worker owns the job now: roll this run back and let that one finish."""


def extraction_ensure(session: AgentSession) -> None:
    """An imported transcript is to be extracted whatever its age: the scan looks only at
    sessions active lately, and imported history is usually older. Its stage-1 job is made due
    now, and the scan sends it within the project's concurrency."""
    from memoryhub.pipeline import services

    if session.record_count:
        services.stage1_ensure_session(session=session)


# --- Staging (the request) ---------------------------------------------------------------------


def _pieces(data: Iterable[bytes]) -> Iterator[bytes]:
    """Re-cut a stream of arbitrary pieces into CHUNK_BYTES pieces (the last one shorter)."""
    buffer = bytearray()
    for piece in data:
        buffer += piece
        while len(buffer) >= CHUNK_BYTES:
            yield bytes(buffer[:CHUNK_BYTES])
            del buffer[:CHUNK_BYTES]
    if buffer:
        yield bytes(buffer)


def _stage(job: Job, part: str, data: Iterable[bytes], *, max_bytes: int) -> int:
    total = 0
    for seq, piece in enumerate(_pieces(data)):
        total += len(piece)
        if total > max_bytes:
            raise PayloadTooLarge(
                f"The transcript is larger than the limit of {max_bytes} bytes.",
                details={"limit_bytes": max_bytes},
            )
        StagedChunk.objects.create(job=job, part=part, seq=seq, data=piece)
    return total


@transaction.atomic
def import_stage(
    *,
    project: Project,
    actor: Actor,
    transcript: Iterable[bytes],
    meta: bytes | None = None,
    transcript_format: str | None = None,
    external_id: str = "",
    max_bytes: int,
) -> Job:
    """Stage an upload and queue its import; the job is sent to a worker on commit. Over
    `max_bytes` → 413 and nothing staged (one transaction)."""
    if (
        external_id
        and AgentSession.objects.filter(project=project, external_id=external_id).exists()
    ):
        raise Conflict(
            f"Session {external_id!r} already exists in this project.",
            details={"external_id": [external_id]},
        )
    job = Job.objects.create(
        kind=Job.Kind.IMPORT,
        key=uuid.uuid4().hex,
        project=project,
        input_watermark=1,  # due until its one run succeeds
        retries_remaining=RETRIES,
        detail={
            "user": actor.user.pk if actor.user else None,
            "token": actor.token.pk if actor.token else None,
            "format": transcript_format or "",
            "external_id": external_id,
        },
    )
    size = _stage(job, StagedChunk.Part.TRANSCRIPT, transcript, max_bytes=max_bytes)
    if meta:
        _stage(job, StagedChunk.Part.META, [meta], max_bytes=max_bytes)
    job.detail |= {"bytes": size, "has_meta": bool(meta)}
    job.save(update_fields=["detail"])
    audit_record(
        actor=actor,
        project=project,
        verb="session.import_queued",
        target_type="import",
        target_id=job.key,
        after={"bytes": size},
    )
    tasks.send_on_commit(tasks.session_import_run, job.pk)
    return job


# --- Reading the staged upload (the worker) ----------------------------------------------------


def _staged(job_id: int, part: str) -> Iterator[bytes]:
    """The staged pieces in order, one row (≤ 1 MiB) in memory at a time."""
    seqs = (
        StagedChunk.objects.filter(job_id=job_id, part=part)
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    for seq in list(seqs):
        data = StagedChunk.objects.values_list("data", flat=True).get(
            job_id=job_id, part=part, seq=seq
        )
        yield bytes(data)


def staged_lines(job_id: int) -> Iterator[bytes]:
    """The staged transcript's lines (with their b"\\n"), re-joined across chunk edges."""
    partial: list[bytes] = []
    for piece in _staged(job_id, StagedChunk.Part.TRANSCRIPT):
        start = 0
        while (end := piece.find(b"\n", start)) != -1:
            partial.append(piece[start : end + 1])
            yield b"".join(partial)
            partial.clear()
            start = end + 1
        if start < len(piece):
            partial.append(piece[start:])
    if partial:
        yield b"".join(partial)


def _actor(detail: dict[str, Any]) -> Actor:
    """Who uploaded it (their access was checked when the upload was accepted)."""
    user_id, token_id = detail.get("user"), detail.get("token")
    user = User.objects.filter(pk=user_id).first() if user_id else None
    token = ApiToken.objects.filter(pk=token_id).first() if token_id else None
    if user is None and token is None:
        return Actor.for_system("import")
    return Actor(user=user, token=token)


# --- Running (the worker) ----------------------------------------------------------------------


def _envelope(exc: Exception) -> dict[str, Any]:
    """The API's error body for what made the import fail, redacted before it is stored (an
    error may quote a value from the transcript)."""
    if isinstance(exc, TranscriptFormatError):
        error = {
            "code": "validation_error",
            "message": f"The transcript was not imported: {exc}",
            "details": {"transcript": [str(exc)], "line": exc.line},
        }
    elif isinstance(exc, ApplicationError):
        error = {"code": exc.code, "message": exc.message, "details": exc.details}
    elif isinstance(exc, DataError):
        error = {
            "code": "validation_error",
            "message": "The transcript holds a value the database refuses (e.g. NUL in text).",
            "details": {},
        }
    else:
        error = {"code": "validation_error", "message": str(exc), "details": {}}
    redacted, _ = redaction.redact_json(error)
    return dict(redacted)


# Bad input: the same upload fails the same way on every attempt.
_PERMANENT = (TranscriptFormatError, ApplicationError, DataError, DjangoValidationError)


def _heartbeat(claim: jobs.Claim, stop: threading.Event, lost: threading.Event) -> None:
    from django.db import connection

    try:
        while not stop.wait(HEARTBEAT_SECONDS):
            if not jobs.heartbeat(claim, lease_seconds=LEASE_SECONDS):
                lost.set()
                return
    finally:
        connection.close()


def _unstage(job_id: int) -> None:
    StagedChunk.objects.filter(job_id=job_id).delete()


def import_run(*, job_id: int) -> str:
    """Run one import job: "done", "failed" (for good), "error" (retried later) or "skipped"
    (someone else has it, or nothing is due: a repeated message is harmless) or "gone" (its
    project was deleted)."""
    if jobs.find(job_id) is None:
        return "gone"
    claim = jobs.claim(job_id, lease_seconds=LEASE_SECONDS)
    if claim is None:
        return "skipped"
    job = jobs.find(job_id)
    if job is None:
        return "gone"
    stop, lost = threading.Event(), threading.Event()
    threading.Thread(target=_heartbeat, args=(claim, stop, lost), daemon=True).start()
    try:
        with transaction.atomic():
            meta = b"".join(_staged(job.pk, StagedChunk.Part.META)) or None
            session = session_services.session_import(
                project=job.project,
                actor=_actor(job.detail),
                lines=staged_lines(job.pk),
                meta=meta,
                transcript_format=job.detail.get("format") or None,
                external_id=job.detail.get("external_id", ""),
            )
            extraction_ensure(session)
            if lost.is_set():
                raise LeaseLost("lost the import's lease while working")
            detail = job.detail | {"session": str(session.public_id), "error": None}
            if not jobs.succeed(claim, detail=detail):
                raise LeaseLost("the import's lease was taken over")
            Job.objects.filter(pk=job.pk).update(session=session)
            _unstage(job.pk)
        return "done"
    except LeaseLost:
        logger.warning("Import job %s lost its lease; its new owner finishes it", job_id)
        return "skipped"
    except _PERMANENT as exc:
        error = _envelope(exc)
        with transaction.atomic():
            jobs.fail(claim, error["message"], retry_delay_seconds=0, permanent=True)
            Job.objects.filter(pk=job.pk).update(detail=job.detail | {"error": error})
            _unstage(job.pk)
        return "failed"
    except Exception as exc:
        if jobs.find(job_id) is None:
            logger.info("Import job %s was deleted while it ran (%s)", job_id, type(exc).__name__)
            return "gone"
        logger.exception("Import job %s failed", job_id)
        message = f"{type(exc).__name__}: {exc}"
        with transaction.atomic():
            status = jobs.fail(claim, message, retry_delay_seconds=RETRY_DELAY_SECONDS)
            if status == Job.Status.FAILED:
                error = _envelope(
                    ApplicationError(f"The import failed after {RETRIES} attempts: {message}")
                )
                error["code"] = "import_failed"
                Job.objects.filter(pk=job.pk).update(detail=job.detail | {"error": error})
                _unstage(job.pk)
        return "failed" if status == Job.Status.FAILED else "error"
    finally:
        stop.set()


# --- Reading jobs (the API) --------------------------------------------------------------------


def import_job_get(*, project: Project, job_id: str) -> Job:
    """One of the project's import jobs by its public id; 404 otherwise (the caller's access to
    the project was checked first, so an outsider gets the missing project's 404)."""
    job = (
        Job.objects.filter(project=project, kind=Job.Kind.IMPORT, key=job_id)
        .select_related("session")
        .first()
    )
    if job is None:
        raise Http404("No such import job in this project.")
    return job


PUBLIC_STATUS = {
    Job.Status.PENDING: "queued",
    Job.Status.ERROR: "queued",  # waits for its retry
    Job.Status.RUNNING: "running",
    Job.Status.DONE: "succeeded",
    Job.Status.FAILED: "failed",
}
