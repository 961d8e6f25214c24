"""One dream run: claim the window's job, run its rounds, finalise.

Rounds, each one LLM call (llm.complete_json, offline provider by default) and one transaction:
  1. atomic  — project, fact, lesson, rule, soul, user, feedback and reference memories in scope
               (skipped when there are none);
  2. topic   — topic memories in scope; always runs (the model may create topics from the
               conversation);
  3. project — only when the window touched project memories (in scope, or created by rounds
               1–2): every active project memory of the bank, to condense per subcategory.
An invalid answer is repaired once by the LLM client, then the round fails: the job records the
error and is retried after the cooldown while attempts remain; rounds already applied stay
applied.

Finalisation (meow's finalizeDream): updated_at = max(updated_at, T) for the window's own
memories, T being the window's last event fixed when the run starts; each stamped memory gets a
"dream_stamped" event. The run (trigger, rounds, operations applied and skipped, notes,
errors) is the job's detail, shown by GET …/bank/dream/ and the bank's diagnose view.

Lease: Job kind "dream", key "session:<public id>", claimed by conditional UPDATE
(memoryhub.pipeline.jobs) for dream_lease_seconds, heartbeated every dream_heartbeat_seconds and
between rounds; a second dream of the same window meanwhile is skipped.
"""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from memoryhub.llm import client as llm
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory
from memoryhub.memories.services import memory_stamp
from memoryhub.pipeline import jobs, services
from memoryhub.pipeline.conf import PipelineConfig, pipeline_config
from memoryhub.pipeline.dream.offline import offline_operations
from memoryhub.pipeline.dream.operations import (
    RoundResult,
    apply_plan,
    dream_actor,
    redacted,
    validate_operations,
)
from memoryhub.pipeline.dream.prompts import round_messages
from memoryhub.pipeline.dream.window import ROUNDS, Window, load_window, round_memories
from memoryhub.pipeline.models import Job
from memoryhub.sessions.models import AgentSession


def dream_round(
    name: str, memories: list[Memory], window: Window, config: PipelineConfig, number: int
) -> RoundResult:
    """One round: ask (LLM or offline rules), validate, apply in one transaction."""
    scope = {str(m.public_id): m for m in memories}
    request = llm.LlmRequest(
        purpose=f"dream_{name}",
        messages=round_messages(name, memories, window, config, number),
        offline=lambda: json.dumps(offline_operations(name, memories, window), ensure_ascii=False),
        project=window.project,
        max_tokens=8192,
    )
    plan = llm.complete_json(
        request,
        validate=lambda obj: validate_operations(
            obj, round_name=name, scope=scope, user_scope=window.user is not None
        ),
    )
    result = RoundResult(name=name, scope=len(memories), notes=[redacted(n) for n in plan.notes])
    apply_plan(plan, scope=scope, window=window, result=result)
    return result


def _save_detail(claim: jobs.Claim, detail: dict[str, Any]) -> None:
    """Record progress on the job while the lease is ours (a failed run keeps it)."""
    Job.objects.filter(pk=claim.job_id, owner_token=claim.token).update(detail=detail)


def finalise(window: Window) -> int:
    """meow's finalizeDream stamp: updated_at = max(updated_at, T) for the window's own
    memories, each with a "dream_stamped" event. Returns how many were stamped."""
    return memory_stamp(
        project=window.project,
        source_session=window.session.external_id,
        at=window.last_event,
        actor=dream_actor(),
    )


def dream(job: Job, claim: jobs.Claim) -> dict[str, Any]:
    """The work of one claimed dream job: rounds, then finalisation; returns the job detail."""
    assert job.session_id is not None  # dream jobs always name their window
    session = AgentSession.objects.select_related("project", "created_by_user").get(
        pk=job.session_id
    )
    config = pipeline_config(job.project.settings)
    window = load_window(session)
    requested = job.detail.get("requested")
    detail: dict[str, Any] = {
        "trigger": "manual" if requested else "scheduled",
        **({"requested_by": requested} if requested else {}),
        "session": session.external_id,
        "last_event_at": window.last_event.isoformat(),
        "started_at": timezone.now().isoformat(),
        "rounds": [],
    }
    touched = any(m.kind == Kind.PROJECT for m in window.initial_scope)
    for number, name in enumerate(ROUNDS, 1):
        if not jobs.heartbeat(
            claim,
            lease_seconds=config.dream_lease_seconds,
            progress=int(100 * (number - 1) / len(ROUNDS)),
        ):
            raise RuntimeError("lost the dream's lease")
        if name == "project" and not touched:
            detail["rounds"].append({"name": name, "skipped": "no project memory was touched"})
            continue
        memories = round_memories(name, window, config)
        if name == "atomic" and not memories:
            detail["rounds"].append({"name": name, "skipped": "no memories in scope"})
            continue
        try:
            result = dream_round(name, memories, window, config, number)
        except Exception as exc:
            detail["rounds"].append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
            detail["error"] = f"round {name} failed"
            _save_detail(claim, detail)
            raise
        touched |= result.touched_project
        detail["rounds"].append(result.summary())
        _save_detail(claim, detail)
    detail["stamped"] = finalise(window)
    detail["last_dream_at"] = timezone.now().isoformat()
    return detail


def dream_run(*, job_id: int) -> str:
    """Claim and run one dream job: "done", "skipped" (lease taken, nothing due) or "error".

    Idempotent by claim-by-conditional-UPDATE: the claim only succeeds while the job is due
    (watermark), attempts remain and no live lease is held; a failure is retried after the
    cooldown until dream_max_attempts are spent, then the job is visibly failed."""
    job = jobs.find(job_id)
    if job is None:
        return services.GONE
    config = pipeline_config(job.project.settings)
    return services._run(
        job_id,
        lease=config.dream_lease_seconds,
        retry_delay=config.dream_cooldown_hours * 3600,
        heartbeat_seconds=config.dream_heartbeat_seconds,
        work=dream,
    )
