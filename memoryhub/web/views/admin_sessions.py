"""Sessions: the list (status, author, records, redactions, extraction state) and the
transcript viewer, where tool calls fold with their results, compact boundaries show their
summaries, and what MemoryHub injected is kept apart from what the person typed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible
from memoryhub.pipeline import selectors as pipeline_selectors
from memoryhub.pipeline import services as pipeline_services
from memoryhub.pipeline.models import Job
from memoryhub.sessions import records as rt
from memoryhub.sessions import selectors
from memoryhub.sessions.models import AgentSession, SessionRecord
from memoryhub.web.access import project_view
from memoryhub.web.views.admin_common import is_htmx, paginate, render
from projects.models import Role
from projects.selectors import ProjectAccess

RECORDS_PER_PAGE = 200
EXTRACTED_LIMIT = 200
_INJECTED = re.compile(
    re.escape(INJECTION_OPEN) + r"(.*?)(?:" + re.escape(INJECTION_CLOSE) + r"|\Z)", re.S
)


@dataclass
class Extraction:
    """A session's stage-1 state, as a person reads it."""

    state: str  # "none", "pending", "running", "done", "error", "failed", "behind"
    extracted_up_to: int = 0
    last_error: str = ""


def extraction_of(session: AgentSession, job: Job | None) -> Extraction:
    if job is None:
        return Extraction(state="none")
    state = job.status
    if job.status == Job.Status.DONE and job.success_watermark < session.record_count:
        state = "behind"  # new records since the last extraction
    return Extraction(state=state, extracted_up_to=job.success_watermark, last_error=job.last_error)


@project_view()
def session_list(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    status = request.GET.get("status") or None
    if status not in (None, *AgentSession.Status.values):
        status = None
    q = request.GET.get("q", "").strip()[:200]
    page = paginate(
        request,
        selectors.session_list(access=access, filters=selectors.SessionFilters(status=status, q=q)),
    )
    jobs = pipeline_selectors.stage1_jobs(
        project=access.project, session_ids=[str(s.public_id) for s in page.object_list]
    )
    rows = [(s, extraction_of(s, jobs.get(str(s.public_id)))) for s in page.object_list]
    return render(
        request,
        "web/admin/sessions.html",
        {
            "page": page,
            "rows": rows,
            "status": status or "",
            "q": q,
            "query": urlencode({k: v for k, v in (("q", q), ("status", status)) if v}),
            "statuses": AgentSession.Status.values,
        },
        partial="session-rows",
    )


# --- the transcript ---------------------------------------------------------------------------


@dataclass
class Segment:
    injected: bool
    text: str


@dataclass
class ToolCall:
    id: str
    name: str
    input: str
    result: SessionRecord | None = None
    result_text: str = ""


@dataclass
class Item:
    """One displayed record (tool results sit inside the call they answer)."""

    record: SessionRecord
    kind: str  # system_prompt, user, assistant, tool_result, boundary, compression
    segments: list[Segment] = field(default_factory=list)  # user / assistant text
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""  # tool_result (unpaired), boundary summary, system prompt
    kept: int = 0  # a boundary's verbatim tail


def split_injected(text: str) -> list[Segment]:
    """The text with every <memoryhub-context> block apart (an unclosed one runs to the end)."""
    segments: list[Segment] = []
    at = 0
    for match in _INJECTED.finditer(text):
        if text[at : match.start()].strip():
            segments.append(Segment(False, text[at : match.start()].strip("\n")))
        segments.append(Segment(True, match.group(1).strip("\n")))
        at = match.end()
    if text[at:].strip():
        segments.append(Segment(False, text[at:].strip("\n")))
    return segments


def block_text(content: Any) -> str:
    """The readable text of a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif "content" in block:
                    parts.append(block_text(block["content"]))
                else:
                    parts.append(json.dumps(block, ensure_ascii=False, indent=2))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, indent=2)


def build_items(records: list[SessionRecord], results: dict[str, SessionRecord]) -> list[Item]:
    paired: set[str] = set()
    items: list[Item] = []
    for record in records:
        content = record.content
        if record.type == rt.ASSISTANT:
            item = Item(record=record, kind="assistant")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    call_id = str(block.get("id", ""))
                    result = results.get(call_id)
                    item.calls.append(
                        ToolCall(
                            id=call_id,
                            name=str(block.get("name", "")),
                            input=json.dumps(block.get("input", {}), ensure_ascii=False, indent=2),
                            result=result,
                            result_text=block_text(result.content) if result else "",
                        )
                    )
                    if result is not None:
                        paired.add(call_id)
                elif block.get("type") == "thinking":
                    item.thinking.append(str(block.get("thinking", block.get("text", ""))))
                else:
                    item.segments += split_injected(block_text([block]))
            items.append(item)
        elif record.type == rt.TOOL_RESULT:
            if record.tool_use_id in paired:
                continue
            items.append(Item(record=record, kind="tool_result", text=block_text(content)))
        elif record.type == rt.COMPACT_BOUNDARY:
            summary = content.get("summary", "") if isinstance(content, dict) else ""
            keep = content.get("keep", []) if isinstance(content, dict) else []
            items.append(Item(record=record, kind="boundary", text=summary, kept=len(keep)))
        elif record.type == rt.USER:
            items.append(
                Item(record=record, kind="user", segments=split_injected(block_text(content)))
            )
        else:  # system_prompt, compression
            items.append(Item(record=record, kind=record.type, text=block_text(content)))
    return items


def _memory_url(access: ProjectAccess, memory: Memory) -> str | None:
    """The memory's page in the memory browser (the other half of the dashboard), if it is
    there."""
    try:
        return reverse(
            "web:memory", kwargs={"slug": access.project.slug, "memory_id": memory.public_id}
        )
    except NoReverseMatch:
        return None


@project_view()
def session_detail(request: HttpRequest, access: ProjectAccess, ref: str) -> HttpResponse:
    session = selectors.session_get(access=access, ref=ref)
    try:
        after = int(request.GET["after"]) if "after" in request.GET else None
    except ValueError:
        after = None
    chunk = list(
        selectors.records_page(session=session, after=after, types=())[: RECORDS_PER_PAGE + 1]
    )
    more = len(chunk) > RECORDS_PER_PAGE
    chunk = chunk[:RECORDS_PER_PAGE]
    call_ids = [
        str(block.get("id"))
        for r in chunk
        if r.type == rt.ASSISTANT and isinstance(r.content, list)
        for block in r.content
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    results = (
        {
            r.tool_use_id: r
            for r in selectors.records_page(
                session=session, after=None, types=(rt.TOOL_RESULT,)
            ).filter(tool_use_id__in=call_ids)
        }
        if call_ids
        else {}
    )
    extracted = [
        (memory, _memory_url(access, memory))
        for memory in memory_visible(access=access)
        .filter(source_session=session.external_id)
        .order_by("source_record_start", "pk")[:EXTRACTED_LIMIT]
    ]
    job = pipeline_selectors.stage1_jobs(
        project=access.project, session_ids=[str(session.public_id)]
    )
    can_extract = access.at_least(Role.MAINTAINER) or (
        access.at_least(Role.MEMBER) and session.created_by_user_id == access.actor.user.pk  # type: ignore[union-attr]
    )
    return render(
        request,
        "web/admin/session_detail.html",
        {
            "session": session,
            "items": build_items(chunk, results),
            "next_after": chunk[-1].index if more else None,
            "after": after,
            "extracted": extracted,
            "extraction": extraction_of(session, job.get(str(session.public_id))),
            "can_extract": can_extract,
            "nav_section": "sessions",
        },
    )


@require_POST
@project_view(Role.MEMBER)
def session_extract(request: HttpRequest, access: ProjectAccess, ref: str) -> HttpResponse:
    """The same rule and service as POST …/sessions/{id}/extract/: the author or a
    maintainer (403 otherwise)."""
    session = selectors.session_get(access=access, ref=ref, write=True)
    error = ""
    job: Job | None
    try:
        job = pipeline_services.stage1_request(
            project=access.project, session=session, actor=access.actor
        )
    except ApplicationError as exc:
        error = exc.message
        job = pipeline_selectors.stage1_jobs(
            project=access.project, session_ids=[str(session.public_id)]
        ).get(str(session.public_id))
    if is_htmx(request):
        return render(
            request,
            "web/admin/session_detail.html",
            {
                "session": session,
                "extraction": extraction_of(session, job),
                "can_extract": True,
                "extract_error": error,
                "extract_queued": not error,
            },
            partial="extraction",  # 200 either way: htmx swaps only 2xx answers
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(request, _("Extraction queued; memories appear here when it is done."))
    return redirect("web:session", slug=access.project.slug, ref=str(session.public_id))
