"""The MCP server object: meow-memory's tool set, memories and artifacts as memory:// resources,
and one injection prompt per profile.

Every handler is an async adapter: it finds the caller (the HTTP request's authenticated token,
or the stdio server's), runs the synchronous operation in Django's thread (sync_to_async with
thread_sensitive, so the ORM never runs on the event loop and connections are reused as in a
view) and turns MemoryHub's refusals into MCP tool errors with the REST API's messages. An
unexpected exception is logged with its traceback and reaches the client only as "internal
error", never as a traceback or a database message.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, close_old_connections
from django.http import Http404
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import INTERNAL_ERROR as INTERNAL_CODE
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    ListResourcesResult,
    PaginatedRequestParams,
    TextContent,
    ToolAnnotations,
)
from mcp_types import Resource as MCPResource
from pydantic import Field

from memoryhub.core.exceptions import ApplicationError
from memoryhub.integrations.mcp import operations
from memoryhub.integrations.mcp.caller import Caller
from memoryhub.recall.injection import Profile

logger = logging.getLogger(__name__)

SCOPE_KEY = "memoryhub.mcp.caller"  # where the HTTP layer leaves the authenticated Caller
INTERNAL_ERROR = "Internal error; the server log has the details."

INSTRUCTIONS = """\
MemoryHub is your team's long-term memory for this project. Before non-trivial work, call \
memory_project for the project's rules and state, and memory_search with the words a memory \
would contain; memory_read shows one whole. Record what should outlive this session \
(corrections, preferences, decisions, pitfalls, todos) with memory_remember: 8-13 keywords \
a future question would use, importance 1-4. A near-duplicate merges into the existing memory. \
Keep your transcript on the server with session_append and get it back with session_resume."""

Project = Annotated[
    str | None,
    Field(
        description="Project slug. Optional when the connection names one (the /mcp/p/<slug>/ "
        "URL, mcp_stdio --project, or a token restricted to one project)."
    ),
]
SessionRef = Annotated[
    str | None,
    Field(description="Your session's id (MemoryHub id or your agent's own external id)."),
]
MemoryId = Annotated[str, Field(description="The memory's id (a UUID).")]


def _message(exc: Exception) -> tuple[str, bool]:
    """(what the client is told, whether it is a not-found) for an exception of ours."""
    if isinstance(exc, Http404):
        return (str(exc) or "Not found."), True
    if isinstance(exc, PermissionDenied):
        return (str(exc) or "Permission denied."), False
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            parts = [f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()]
        else:
            parts = list(exc.messages)
        return "Invalid input: " + "; ".join(parts), False
    if isinstance(exc, ApplicationError):
        details = "; ".join(f"{k}: {v}" for k, v in exc.details.items())
        return exc.message + (f" ({details})" if details else ""), False
    if isinstance(exc, DataError) and "NUL" in str(exc):
        return "Text must not contain NUL (\\u0000) characters.", False
    logger.error("MCP handler failed", exc_info=exc)
    return INTERNAL_ERROR, False


def _in_django_thread[T](fn: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> T:
        # What Django's request_started / request_finished do for a view: drop connections
        # that broke or outlived CONN_MAX_AGE.
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return call


async def _run[T](fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await sync_to_async(_in_django_thread(fn), thread_sensitive=True)(*args, **kwargs)


def _result(outcome: operations.Outcome) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)], structured_content=outcome.data
    )


class MemoryHubMCP(MCPServer):
    """MCPServer whose callers are MemoryHub tokens, and whose resources/list is per caller."""

    def __init__(self, *, stdio_caller: Caller | None = None) -> None:
        super().__init__(
            name="memoryhub",
            title="MemoryHub",
            instructions=INSTRUCTIONS,
            website_url=None,
            warn_on_duplicate_tools=True,
        )
        # stdio: the one caller of this process (memory_project re-anchors its project).
        self.stdio_caller = stdio_caller

    def caller_of(self, request_context: ServerRequestContext[Any, Any]) -> Caller:
        request = request_context.request  # the Starlette request over HTTP; None on stdio
        caller = request.scope.get(SCOPE_KEY) if request is not None else self.stdio_caller
        if not isinstance(caller, Caller):
            raise PermissionDenied("Not authenticated.")
        return caller

    async def call[T](self, ctx: Context, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run an operation for the tool call of `ctx`; refusals become tool errors."""
        try:
            caller = self.caller_of(ctx.request_context)
            return await _run(fn, caller, *args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(_message(exc)[0]) from None

    async def answer(
        self, ctx: Context, fn: Callable[..., operations.Outcome], *args: Any, **kwargs: Any
    ) -> CallToolResult:
        """A tool's answer: the operation's text, and its data as structured content."""
        return _result(await self.call(ctx, fn, *args, **kwargs))

    async def read(self, ctx: Context, fn: Callable[..., str], *args: Any) -> str:
        """Run an operation for a resource read; not-found stays a not-found."""
        try:
            caller = self.caller_of(ctx.request_context)
            return await _run(fn, caller, *args)
        except Exception as exc:
            message, not_found = _message(exc)
            raise (ResourceNotFoundError if not_found else ResourceError)(message) from None

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        # Overridden (SDK 2.3): the listing depends on who asks, which list_resources() cannot
        # see. Static resources: none are registered, everything is per caller.
        try:
            caller = self.caller_of(ctx)
            listed = await _run(operations.resource_list, caller)
        except Exception as exc:
            raise ResourceError(_message(exc)[0]) from None
        return ListResourcesResult(
            resources=[
                MCPResource(
                    uri=item.uri,
                    name=item.name,
                    description=item.description,
                    mime_type=item.mime_type,
                )
                for item in listed
            ]
        )


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
EDITING = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


def build_server(*, stdio_caller: Caller | None = None) -> MemoryHubMCP:
    server = MemoryHubMCP(stdio_caller=stdio_caller)
    _tools(server)
    _resources(server)
    _prompts(server)
    return server


def _tools(server: MemoryHubMCP) -> None:  # noqa: C901 — one nested function per tool
    @server.tool(annotations=ADDITIVE)
    async def memory_remember(
        ctx: Context,
        content: Annotated[
            str, Field(description="The memory itself: one self-contained statement.")
        ],
        keywords: Annotated[
            list[str],
            Field(
                min_length=1,
                description="8-13 content words a future question about this would contain "
                "(core entities, proper nouns; not the project name).",
            ),
        ],
        importance: Annotated[
            int,
            Field(
                ge=1,
                le=32767,
                description="4 fatal red line, 3 emphasised by the user / global, "
                "2 a decision the user made, 1 trivia.",
            ),
        ],
        kind: Annotated[
            str,
            Field(
                description="fact, lesson, rule, topic, project, reference, user, feedback or "
                "soul (meow-memory's levels and MewCode's categories are accepted too)."
            ),
        ] = "fact",
        subcategory: Annotated[
            Literal["", "overview", "structure", "decisions", "quotes", "ops", "todo"],
            Field(description="For kind=project: its section."),
        ] = "",
        goal: Annotated[str, Field(description="For kind=topic: what it aims at.")] = "",
        title: Annotated[str, Field(max_length=200, description="Optional short title.")] = "",
        scope: Annotated[
            Literal["project", "user"] | None,
            Field(
                description="project: every member sees it; user: only you. "
                "Default: the kind's (user for user/feedback/soul)."
            ),
        ] = None,
        session_id: SessionRef = None,
        project: Project = None,
    ) -> CallToolResult:
        """Remember something for future sessions (meow-memory's memory_remember).

        A memory of the same kind whose text is nearly the same (bigram Jaccard >= 0.8) is
        updated instead of duplicated (merged: true); an older memory it contradicts becomes
        stale. Secrets are redacted before anything is stored. Needs a read-write token and
        the member role."""
        fields = {
            "content": content,
            "keywords": keywords,
            "importance": importance,
            "kind": kind,
            "subcategory": subcategory,
            "goal": goal,
            "title": title,
            "scope": scope,
            "session_id": session_id,
        }
        return await server.answer(ctx, operations.memory_remember, project, fields)

    @server.tool(annotations=READ_ONLY)
    async def memory_search(
        ctx: Context,
        query: Annotated[
            str, Field(min_length=1, max_length=2000, description="Words the memory contains.")
        ],
        k: Annotated[int, Field(ge=1, le=operations.SEARCH_MAX_K)] = operations.SEARCH_DEFAULT_K,
        kind: Annotated[list[str], Field(description="Only these kinds (default: all).")] = [],  # noqa: B006 — pydantic copies defaults
        status: Annotated[
            list[Literal["active", "stale", "proposed", "archived"]],
            Field(description="Default: active."),
        ] = [],  # noqa: B006
        days: Annotated[
            int | None, Field(ge=0, le=36500, description="Only memories created in N days.")
        ] = None,
        session_id: SessionRef = None,
        content_max: Annotated[
            int, Field(ge=0, description="Cut each content to N characters (0: whole).")
        ] = operations.SEARCH_CONTENT_MAX,
        project: Project = None,
    ) -> CallToolResult:
        """Search the project's memories: BM25 over title, content and keywords, times recency
        (meow-memory's memory_search).

        With session_id, meow's 5 + 5: the best five whatever the session has seen, then only
        memories it has not seen yet (injected or found earlier). Results come oldest first:
        when two conflict, the newest wins."""
        return await server.answer(
            ctx,
            operations.memory_search,
            project,
            query=query,
            k=k,
            kinds=kind,
            statuses=status,
            days=days,
            session_id=session_id,
            content_max=content_max,
        )

    @server.tool(annotations=READ_ONLY)
    async def memory_read(ctx: Context, id: MemoryId, project: Project = None) -> CallToolResult:
        """One memory whole: content, keywords, importance, status, provenance, timestamps."""
        return await server.answer(ctx, operations.memory_read, project, id)

    @server.tool(annotations=EDITING)
    async def memory_update(
        ctx: Context,
        id: MemoryId,
        content: str | None = None,
        importance: Annotated[int | None, Field(ge=1, le=32767)] = None,
        keywords: Annotated[
            list[str] | None, Field(description="Replace the keywords ([] leaves them).")
        ] = None,
        title: Annotated[str | None, Field(max_length=200)] = None,
        kind: str | None = None,
        subcategory: Literal["", "overview", "structure", "decisions", "quotes", "ops", "todo"]
        | None = None,
        goal: str | None = None,
        status: Annotated[
            Literal["active", "stale", "archived"] | None,
            Field(
                description="stale: outdated or done (a todo that is finished); archived: "
                "withdrawn (wrong, trivial, or replaced); active: restore."
            ),
        ] = None,
        reason: Annotated[str, Field(description="Why (required for stale).")] = "",
        superseded_by: Annotated[
            str | None, Field(description="The memory replacing this one (stale/archived).")
        ] = None,
        project: Project = None,
    ) -> CallToolResult:
        """Correct or retire a memory (meow-memory's memory_update). Nothing is ever deleted:
        every change is kept in the memory's history with who made it. Needs a read-write
        token and the member role."""
        changes = {
            "content": content,
            "importance": importance,
            "keywords": keywords,
            "title": title,
            "kind": kind,
            "subcategory": subcategory,
            "goal": goal,
        }
        return await server.answer(
            ctx,
            operations.memory_update,
            project,
            id,
            changes,
            status=status,
            reason=reason,
            superseded_by=superseded_by,
        )

    @server.tool(annotations=READ_ONLY)
    async def memory_project(ctx: Context, project: Project = None) -> CallToolResult:
        """The project at a glance (meow-memory's memory_project): its rules, then its project
        memories by section (overview, structure, decisions, quotes, ops, todo done/open).
        Call it first when you start working on a project. Over stdio it also anchors the
        project for later calls that do not name one."""
        outcome = await server.call(ctx, operations.memory_project, project)
        if server.stdio_caller is not None and ctx.request_context.request is None:
            server.stdio_caller = Caller(
                actor=server.stdio_caller.actor, project=outcome.data["project"]
            )
        return _result(outcome)

    @server.tool(annotations=READ_ONLY)
    async def memory_find_similar(
        ctx: Context,
        id: MemoryId,
        k: Annotated[int, Field(ge=1, le=20)] = 5,
        content_max: Annotated[int, Field(ge=0)] = 200,
        session_id: SessionRef = None,
        project: Project = None,
    ) -> CallToolResult:
        """Memories most like this one (cosine over meow-memory's bigram term frequencies), to
        find duplicates and contradictions; you decide what to merge or retire."""
        return await server.answer(
            ctx,
            operations.memory_find_similar,
            project,
            id,
            k=k,
            session_id=session_id,
            content_max=content_max,
        )

    @server.tool(annotations=ADDITIVE)
    async def memory_dream(
        ctx: Context,
        session_id: Annotated[
            str | None,
            Field(description="The session to tidy after (default: the latest one)."),
        ] = None,
        project: Project = None,
    ) -> CallToolResult:
        """Queue a dream now (meow-memory's memory_dream): a consolidation run on the worker
        that tidies what a session touched (stale todos, contradictions, near-duplicates),
        whatever the idle time and quiet hours. Maintainers only, as in the REST API."""
        return await server.answer(ctx, operations.memory_dream, project, session_id)

    @server.tool(annotations=ADDITIVE)
    async def session_append(
        ctx: Context,
        session_id: Annotated[
            str, Field(min_length=1, max_length=200, description="Your agent's session id.")
        ],
        messages: Annotated[
            list[dict[str, Any]] | None,
            Field(description='Chat messages: [{"role": "user", "content": "…"}, …].'),
        ] = None,
        records: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description="Or MewCode records: {type, content, timestamp?, tool_use_id?, "
                "seq?} (a record whose seq is stored already is skipped: retries are safe)."
            ),
        ] = None,
        title: Annotated[str, Field(max_length=200)] = "",
        project: Project = None,
    ) -> CallToolResult:
        """Keep your transcript on the server: append messages or records to your session
        (created on first use). Secrets are redacted on the way in; the pipeline learns
        memories from the transcript later. All or nothing."""
        return await server.answer(
            ctx,
            operations.session_append,
            project,
            session_id,
            records=records,
            messages=messages,
            title=title,
        )

    @server.tool(annotations=READ_ONLY)
    async def session_resume(
        ctx: Context,
        session_id: Annotated[str, Field(min_length=1, max_length=200)],
        project: Project = None,
    ) -> CallToolResult:
        """The messages to continue a session from: from its last compaction on, dangling tool
        calls cut and large tool results trimmed (the same bytes every time)."""
        return await server.answer(ctx, operations.session_resume, project, session_id)


def _resources(server: MemoryHubMCP) -> None:
    @server.resource(
        "memory://memories/{memory_id}{?project}",
        name="memory",
        description="One memory as JSON. ?project=<slug> when the connection names none.",
        mime_type="application/json",
    )
    async def memory(memory_id: str, ctx: Context, project: str = "") -> str:
        return await server.read(ctx, operations.memory_resource, project or None, memory_id)

    @server.resource(
        "memory://root{?project}",
        name="memory-root",
        description="oh-my-pi's memory root: lists MEMORY.md, memory_summary.md and skills.",
        mime_type="text/markdown",
    )
    async def root(ctx: Context, project: str = "") -> str:
        return await server.read(ctx, operations.root_listing, project or None)

    @server.resource(
        "memory://root/{+path}{?project}",
        name="memory-artifact",
        description="A consolidation artifact: memory://root/MEMORY.md, …/skills/<name>/SKILL.md.",
        mime_type="text/markdown",
    )
    async def artifact(path: str, ctx: Context, project: str = "") -> str:
        return await server.read(ctx, operations.artifact_resource, project or None, path)


PROFILE_DESCRIPTIONS = {
    Profile.MEWCODE: "MewCode's <system-reminder> with MEWCODE.md and memories.md categories.",
    Profile.OMP: "oh-my-pi's memory guidance: memory://root, memory_summary.md, lessons.",
    Profile.MEOW: "meow-memory's first-turn long-term memory block.",
    Profile.DEFAULT: "Instructions, personal memories, rules, summary, project memories.",
}


def _prompts(server: MemoryHubMCP) -> None:
    for profile in Profile:
        server.prompt(
            name=f"injection_{profile.value}",
            title=f"MemoryHub context ({profile.value})",
            description=f"The first-turn memory payload, {profile.value} profile: "
            + PROFILE_DESCRIPTIONS[profile],
        )(_injection_prompt(server, profile))


def _injection_prompt(server: MemoryHubMCP, profile: Profile) -> Callable[..., Any]:
    async def prompt(
        ctx: Context,
        project: Annotated[str, Field(description="Project slug (optional)")] = "",
        session_id: Annotated[
            str, Field(description="Mark the memories as injected into this session")
        ] = "",
    ) -> str:
        try:
            caller = server.caller_of(ctx.request_context)
            text = await _run(
                operations.injection_prompt,
                caller,
                project or None,
                profile.value,
                session_id or None,
            )
        except Exception as exc:
            # MCPError reaches the client verbatim; anything else would be "Internal error".
            message = _message(exc)[0]
            code = INTERNAL_CODE if message == INTERNAL_ERROR else INVALID_PARAMS
            raise MCPError(code=code, message=message) from None
        return text or "(MemoryHub has no memories for this project yet.)"

    return prompt
