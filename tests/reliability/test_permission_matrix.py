"""The permission matrix: every route of the URL configuration (REST API, web UI, Hindsight)
× every kind of caller, each cell's expected outcome declared once in ROUTES below.

Callers: the project's owner, a maintainer, a member, a viewer, an outsider (a user with a
project of his own), the owner's read-only token, the owner's token restricted to another of
her projects, a revoked token, an expired token, and nobody. API and Hindsight routes are
called with each person's agent token, web pages with each person's signed-in session (tokens
are no web credentials, so on the web every token caller counts as nobody).

Outcomes: OK (the route let the caller in: anything but 401/403/404/405 or a redirect to the
sign-in), DENIED (403), HIDDEN (404, byte-identical to the same request on a project that does
not exist), NOT_FOUND (404: the caller may use the route but the object is not theirs),
UNAUTH (401, or the sign-in redirect on the web). A route missing from ROUTES, or an API method
missing from its entry, fails the test.

Besides the outcome, every answer is checked (answer_problems): a refusal of an API route is in
that route's error shape (the envelope, or Hindsight's {"detail"}; 401 with WWW-Authenticate,
a read-only token's 403 saying so); a refused write writes nothing (row counts and events); a
successful API write leaves an audit or memory event, and every audited API write succeeds for
someone, so that check runs. The MCP tools have the same matrix in test_mcp_matrix.py.

On every cell the answer must not contain the marker of bob's private (user-scope) memory
unless the caller is bob: not its text, not its id. Counts and statistics are checked by
answering each of the owner's and the viewer's reads twice — with and without bob's private
memory — and comparing (test_private_memories_change_no_one_elses_answers).

One database set-up for the module (the `world`); every test runs in a savepoint of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.cookies import SimpleCookie
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from accounts.actors import Actor
from accounts.models import ApiToken, User
from accounts.services import token_create
from memoryhub.core.models import AuditEvent
from memoryhub.memories import artifacts
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory, MemoryEvent
from memoryhub.pipeline.models import Job
from memoryhub.recall import services as recall_services
from memoryhub.sessions.models import AgentSession, SessionRecord, ToolResultDecision
from projects.models import Project, ProjectMembership, Role
from projects.selectors import project_access
from projects.services import membership_add, project_create
from tests.factories import MemoryFactory, UserFactory

OK, DENIED, HIDDEN, NOT_FOUND, UNAUTH = "ok", "denied", "hidden", "not_found", "unauth"
CONFLICT = "conflict"
PEOPLE = ["owner", "maintainer", "member", "viewer", "outsider"]
TOKENS = ["read_only_token", "other_project_token", "revoked_token", "expired_token"]
CALLERS = [*PEOPLE, *TOKENS, "anonymous"]
RANK = {"viewer": 1, "member": 2, "maintainer": 3, "owner": 4}
ROLE_OF = {"owner": "owner", "maintainer": "maintainer", "member": "member", "viewer": "viewer"}
MISSING = "no-such-project"
PRIVATE_MARKER = "quuxberry"  # only in bob's private memory


@dataclass(frozen=True)
class Rule:
    """Who may call one method of one route, and a request that exercises it.

    role: "public", "signed-in" (any person, not project-bound), or the lowest project role.
    """

    role: str
    body: Any = None
    query: str = ""
    fmt: str = "json"
    kwargs: dict[str, str] = field(default_factory=dict)
    # Cells where the general rule does not hold, each with its reason in ROUTES' comments.
    cells: dict[str, str] = field(default_factory=dict)


def R(role: str, body: Any = None, **extra: Any) -> Rule:
    return Rule(role, body, **extra)


MEMORY = {"content": "The CI runs on PostgreSQL.", "kind": "fact"}
RECALL_FILE = {"path": "synced.md", "content": "---\nname: Synced\n---\n"}
ALL_BUT_OWNER_NOT_FOUND = {c: NOT_FOUND for c in ["maintainer", "member", "viewer"]}
BAD_TOKENS_401 = {"revoked_token": UNAUTH, "expired_token": UNAUTH}
# A token restricted to one project cannot create or restore projects.
NO_NEW_PROJECTS = {"other_project_token": DENIED}
# Everyone who may read the bank: it was never rebuilt, so there is no rebuild to show.
NEVER_REBUILT = {
    c: NOT_FOUND for c in ["owner", "maintainer", "member", "viewer", "read_only_token"]
}
# PUT creates a bank of that id; an id already taken answers 409 whoever holds it, as a taken
# project slug does on POST /api/v1/projects/ (the one existence a create must reveal).
TAKEN_ID = {"outsider": CONFLICT}
# A project-restricted token writes to its own project whatever bank id it names (Hindsight
# clients send a fixed bank id: banks.py, rule 3); the answer carries new ids, so it cannot
# equal another call's, and alpha is not touched (the private-memory check still applies).
OWN_BANK = {"other_project_token": OK}

# The memory a write acts on, when the stale one ({memory}) cannot take it.
ACTIVE = {"memory_id": "{other_memory}"}
PROPOSED = {"memory_id": "{proposed}"}
TRANSCRIPT = b'{"type": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00Z"}\n'

# route name (or pattern) → {method: Rule}. Reads with POST (recall, reflect) are not writes.
ROUTES: dict[str, dict[str, Rule]] = {
    "healthz": {"GET": R("public")},
    # A bad token is refused wherever it is sent, even on public pages.
    "schema": {"GET": R("public", cells=BAD_TOKENS_401)},
    "api-docs": {"GET": R("public", cells=BAD_TOKENS_401)},
    "set_language": {"POST": R("public", {"language": "en"}, fmt="form")},
    # --- accounts ------------------------------------------------------------------------------
    "me": {"GET": R("signed-in")},
    "tokens": {"GET": R("signed-in"), "POST": R("signed-in", {"name": "ci"})},
    # Everyone may revoke their own tokens; the target is the owner's spare token. A token
    # limited to a project sees only itself and what it minted: the spare is not found.
    "token-revoke": {
        "POST": R(
            "signed-in",
            kwargs={"token_id": "{spare_token}"},
            cells={
                c: NOT_FOUND
                for c in ["maintainer", "member", "viewer", "outsider", "other_project_token"]
            },
        )
    },
    "projects": {
        "GET": R("signed-in"),
        "POST": R("signed-in", {"slug": "new-one"}, cells=NO_NEW_PROJECTS),
    },
    "memory-kinds": {"GET": R("signed-in")},
    # --- a project -----------------------------------------------------------------------------
    "project-detail": {
        "GET": R("viewer"),
        "PATCH": R("maintainer", {"name": "Renamed"}),
        "DELETE": R("owner", query="confirm=alpha"),
    },
    "members": {
        "GET": R("viewer"),
        "POST": R("maintainer", {"username": "dave", "role": "viewer"}),
    },
    "member-detail": {
        "PATCH": R("maintainer", {"role": "viewer"}),
        "DELETE": R("maintainer"),
    },
    "project-backup": {"GET": R("owner")},
    # Server administrators only (none in this world): a restore makes the people a backup
    # names members, with their private memories (tests/backups covers staff).
    "project-restore": {
        "POST": R(
            "signed-in",
            {},
            fmt="multipart",
            cells={c: DENIED for c in [*PEOPLE, "other_project_token"]},
        )
    },
    "llm-usage": {"GET": R("viewer")},
    # --- memories ------------------------------------------------------------------------------
    "memories": {"GET": R("viewer"), "POST": R("member", MEMORY)},
    "memories-bulk": {"POST": R("member", {"items": [MEMORY]})},
    "memories-search": {"GET": R("viewer", query="q=postgresql")},
    "memory-detail": {"GET": R("viewer"), "PATCH": R("member", {"title": "new title"})},
    "memory-history": {"GET": R("viewer")},
    "memory-similar": {"GET": R("viewer")},
    "memory-archive": {"POST": R("member", {"reason": "obsolete"})},
    "memory-stale": {"POST": R("member", {"reason": "outdated"}, kwargs=ACTIVE)},
    "memory-restore": {"POST": R("member", {})},
    "memory-approve": {"POST": R("maintainer", kwargs=PROPOSED)},
    "memory-reject": {"POST": R("maintainer", {"reason": "wrong"}, kwargs=PROPOSED)},
    "memory-promote": {"POST": R("member")},
    "memory-merge": {"POST": R("member", {"other": "{other_memory}"})},
    "memory-delete": {"POST": R("owner", {"confirm": "{memory8}"})},
    "memory-uri": {"GET": R("viewer", query="uri=memory://root/MEMORY.md")},
    "panorama": {"GET": R("viewer")},
    "injection": {"GET": R("viewer")},
    "artifacts": {"GET": R("viewer")},
    "artifact-detail": {
        "GET": R("viewer", kwargs={"path": "MEMORY.md"}),
        "PUT": R("maintainer", {"content": "# Deploy"}, kwargs={"path": "skills/d/SKILL.md"}),
        "DELETE": R("maintainer", kwargs={"path": "MEMORY.md"}),
    },
    # --- recall --------------------------------------------------------------------------------
    "recall": {"POST": R("viewer", {"query": "postgresql"})},
    "instructions": {"GET": R("viewer")},
    "instruction-files": {"GET": R("viewer")},
    "instruction-file": {
        "GET": R("viewer", kwargs={"path": "MEWCODE.md"}),
        "PUT": R("member", {"content": "Use tabs."}, kwargs={"path": "docs/style.md"}),
        "DELETE": R("member", kwargs={"path": "MEWCODE.md"}),
    },
    "instruction-tree": {"POST": R("member", {"files": {"MEWCODE.md": "# Alpha v2"}})},
    # Everyone's own file: the owner's exists, the others have none yet (404 on GET / DELETE).
    "user-instruction-file": {
        "GET": R("viewer", cells=ALL_BUT_OWNER_NOT_FOUND),
        "PUT": R("viewer", {"content": "Short answers, please."}),
        "DELETE": R("viewer", cells=ALL_BUT_OWNER_NOT_FOUND),
    },
    "recall-files": {"GET": R("viewer")},
    "recall-files-sync": {"POST": R("member", {"scope": "project", "files": [RECALL_FILE]})},
    "recall-file": {
        "GET": R("viewer", kwargs={"scope": "project", "path": "notes.md"}),
        "PUT": R("member", {"content": "Notes, v2."}, kwargs={"scope": "project", "path": "n.md"}),
        "DELETE": R("member", kwargs={"scope": "project", "path": "notes.md"}),
    },
    # --- sessions: s1 is the owner's; ending, compacting or extracting a session takes its
    # author or a maintainer, adding to it its author only (here the owner: "owner" below).
    "sessions": {"GET": R("viewer"), "POST": R("member", {"external_id": "s2"})},
    "sessions-import": {"POST": R("member", TRANSCRIPT, fmt="ndjson")},
    # A transcript import queued by the owner (a big upload): the project's readers may poll it.
    "session-import-job": {"GET": R("viewer", kwargs={"job": "{import_job}"})},
    "session-detail": {"GET": R("viewer"), "DELETE": R("maintainer")},
    "session-records": {
        "GET": R("viewer"),
        "POST": R("owner", [{"type": "user", "content": "hi"}]),
    },
    "session-resume": {"GET": R("viewer")},
    "session-compaction": {"GET": R("viewer", query="context_window=100000")},
    "session-compact": {"POST": R("maintainer", {"context_window": 100000})},
    "session-end": {"POST": R("maintainer")},
    "session-transcript": {"POST": R("owner", {"type": "summary", "summary": "x"})},
    "session-extract": {"POST": R("maintainer")},
    "session-tool-result": {"GET": R("viewer", kwargs={"tool_use_id": "big"})},
    # --- pipeline / bank -----------------------------------------------------------------------
    "bank-stats": {"GET": R("viewer")},
    "bank-diagnose": {"GET": R("viewer")},
    "bank-enqueue": {"POST": R("maintainer")},
    "bank-clear": {"POST": R("owner", {"confirm": "alpha"})},
    "bank-rebuild": {
        "GET": R("viewer", cells=NEVER_REBUILT),
        "POST": R("owner", {"confirm": "alpha"}),
    },
    "bank-dream": {"GET": R("viewer"), "POST": R("maintainer", {"session_id": "s1"})},
    # --- interchange ---------------------------------------------------------------------------
    "interchange-formats": {"GET": R("viewer")},
    "interchange-import": {"POST": R("member", {}, fmt="multipart", kwargs={"fmt": "mewcode"})},
    "interchange-export": {"GET": R("viewer", kwargs={"fmt": "meow"})},
    # --- Hindsight (/v1/default/banks/…), the bank is the project ------------------------------
    "hindsight-health": {"GET": R("public")},
    "hindsight-schema": {"GET": R("public")},  # /v1/openapi.json, open like /health
    "hindsight-version": {"GET": R("public")},
    "hindsight-banks": {"GET": R("signed-in")},
    "hindsight-bank": {
        "GET": R("viewer"),
        "PATCH": R("maintainer", {"reflect_mission": "m"}),
        "PUT": R("maintainer", {"reflect_mission": "m"}, cells=TAKEN_ID),
    },
    "hindsight-bank-profile": {
        "GET": R("viewer"),
        "PATCH": R("maintainer", {"reflect_mission": "m"}),
        "PUT": R("maintainer", {"reflect_mission": "m"}, cells=TAKEN_ID),
    },
    "hindsight-bank-stats": {"GET": R("viewer")},
    "hindsight-retain": {
        "POST": R("member", {"items": [{"content": "hi", "document_id": "d1"}]}, cells=OWN_BANK)
    },
    "hindsight-recall": {"POST": R("viewer", {"query": "postgresql"})},
    "hindsight-memories": {"GET": R("viewer")},
    "hindsight-memory": {
        "GET": R("viewer"),
        # The memory is stale: "valid" restores it (invalidating it again would change nothing).
        "PATCH": R("member", {"state": "valid"}),
    },
    "hindsight-reflect": {"POST": R("viewer", {"query": "postgresql"})},
    "hindsight-documents": {"GET": R("viewer")},
    "hindsight-document": {
        "GET": R("viewer", kwargs={"document_id": "s1"}),
        "DELETE": R("maintainer", kwargs={"document_id": "s1"}),
    },
    "hindsight-models": {
        "GET": R("viewer"),
        "POST": R("member", {"id": "new", "name": "N", "source_query": "q"}, cells=OWN_BANK),
    },
    "hindsight-model": {"GET": R("viewer"), "DELETE": R("maintainer")},
    "hindsight-model-history": {"GET": R("viewer")},
    "hindsight-model-refresh": {"POST": R("member")},
    # No such operation: the route is reached, the operation is not found.
    "hindsight-operation": {
        "GET": R(
            "viewer",
            kwargs={"operation_id": "00000000-0000-0000-0000-000000000000"},
            cells={c: NOT_FOUND for c in ["owner", "maintainer", "member", "viewer"]}
            | {"read_only_token": NOT_FOUND},
        )
    },
    # --- web UI --------------------------------------------------------------------------------
    "web:home": {"GET": R("public")},  # signed out: what MemoryHub is, and sign in
    "web:login": {"GET": R("public"), "POST": R("public", {"username": "x"}, fmt="form")},
    "web:logout": {"POST": R("public", fmt="form")},
    "web:password_change": {"GET": R("signed-in"), "POST": R("signed-in", {}, fmt="form")},
    "web:password_change_done": {"GET": R("signed-in")},
    "web:project": {"GET": R("viewer")},
    "web:memories": {"GET": R("viewer")},
    "web:memory": {"GET": R("viewer")},
    "web:memory_edit": {"GET": R("member"), "POST": R("member", {}, fmt="form")},
    "web:memory_archive": {"POST": R("member", {"reason": "x"}, fmt="form")},
    "web:memory_stale": {"POST": R("member", {"reason": "x"}, fmt="form")},
    "web:memory_restore": {"POST": R("member", {}, fmt="form")},
    "web:memory_approve": {"POST": R("maintainer", {}, fmt="form")},
    "web:memory_reject": {"POST": R("maintainer", {"reason": "x"}, fmt="form")},
    "web:memory_promote": {"POST": R("member", {}, fmt="form")},
    "web:memory_merge": {"GET": R("member"), "POST": R("member", {}, fmt="form")},
    "web:memory_similar": {"GET": R("viewer")},
    "web:memory_delete": {"GET": R("owner"), "POST": R("owner", {}, fmt="form")},
    # A member's queue holds their own private proposals; the project's need a maintainer.
    "web:review": {"GET": R("member")},
    "web:review_bulk": {"POST": R("member", {}, fmt="form")},
    "web:review_approve": {"POST": R("maintainer", {}, fmt="form")},
    "web:review_reject": {"POST": R("maintainer", {"reason": "x"}, fmt="form")},
    "web:review_edit": {"GET": R("maintainer"), "POST": R("maintainer", {}, fmt="form")},
    "web:sessions": {"GET": R("viewer")},
    "web:session": {"GET": R("viewer")},
    "web:session_extract": {"POST": R("maintainer", {}, fmt="form")},  # or its author
    "web:recall_files": {"GET": R("viewer")},
    # Viewers may keep user-scope recall files of their own; project scope takes a member.
    "web:recall_file_new": {
        "GET": R("viewer"),
        "POST": R("member", {"scope": "project", "path": "v.md", "body": "x"}, fmt="form"),
    },
    "web:recall_file": {
        "GET": R("viewer", kwargs={"scope": "project", "path": "notes.md"}),
        "POST": R(
            "member",
            {"scope": "project", "path": "notes.md", "body": "v2"},
            fmt="form",
            kwargs={"scope": "project", "path": "notes.md"},
        ),
    },
    "web:recall_file_delete": {
        "POST": R("member", {}, fmt="form", kwargs={"scope": "project", "path": "notes.md"})
    },
    "web:instructions": {"GET": R("viewer")},
    # The forms show to viewers (read-only); saving a project file takes a member.
    "web:instruction_new": {"GET": R("viewer"), "POST": R("member", {}, fmt="form")},
    "web:instruction": {
        "GET": R("viewer", kwargs={"path": "MEWCODE.md"}),
        "POST": R("member", {}, fmt="form", kwargs={"path": "MEWCODE.md"}),
    },
    "web:instruction_delete": {"POST": R("member", {}, fmt="form", kwargs={"path": "MEWCODE.md"})},
    "web:user_instructions": {"GET": R("viewer"), "POST": R("viewer", {}, fmt="form")},
    "web:preview": {"GET": R("viewer")},
    "web:bank": {"GET": R("viewer")},
    "web:bank_progress": {"GET": R("viewer")},
    "web:bank_enqueue": {"POST": R("maintainer", {}, fmt="form")},
    "web:bank_dream": {"POST": R("maintainer", {}, fmt="form")},
    "web:bank_clear": {"POST": R("owner", {}, fmt="form")},
    "web:bank_rebuild": {"POST": R("owner", {}, fmt="form")},
    "web:members": {"GET": R("viewer")},
    "web:member_add": {"POST": R("maintainer", {"username": "dave"}, fmt="form")},
    "web:member_role": {"POST": R("maintainer", {"role": "viewer"}, fmt="form")},
    "web:member_remove": {"POST": R("maintainer", {}, fmt="form")},
    "web:token_create": {"POST": R("viewer", {"name": "t"}, fmt="form")},
    "web:token_revoke": {
        "POST": R(
            "viewer",
            fmt="form",
            kwargs={"token_id": "{spare_token}"},
            cells={c: NOT_FOUND for c in ["maintainer", "member", "viewer"]},
        )
    },
    "web:interchange": {"GET": R("viewer")},
    "web:interchange_import": {"POST": R("member", {}, fmt="form")},
    "web:settings": {"GET": R("maintainer")},
    "web:project_delete": {"POST": R("owner", {"confirm": "alpha"}, fmt="form")},
    "web:settings_save": {
        "POST": R("maintainer", {}, fmt="form", kwargs={"section": "review_required"})
    },
}
# Not in the matrix: Django's admin (staff only, Django's own checks) and the two catch-alls
# that answer 404 for unknown /api/ and /v1/ paths.
EXCLUDED_PATTERNS = {"^api/", "^v1/"}
EXCLUDED_NAMESPACES = ("admin:",)

# Default values of the routes' path parameters; "{…}" are filled from the world.
DEFAULT_KWARGS = {
    "slug": "alpha",
    "bank_id": "alpha",
    "memory_id": "{memory}",
    "ref": "s1",
    "username": "walt",  # a member no caller is (removing oneself is allowed)
    "model_id": "mm",
    "document_id": "s1",
}


# --- the URL configuration ---------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    key: str  # name (with namespace) or, unnamed, the pattern
    pattern: URLPattern
    prefix: str
    methods: tuple[str, ...]  # what a class-based view answers (empty: function view)


def _walk(patterns: list[Any], prefix: str = "", ns: str = "") -> Iterator[Route]:
    for p in patterns:
        if isinstance(p, URLResolver):
            inner = f"{ns}{p.namespace}:" if p.namespace else ns
            yield from _walk(p.url_patterns, prefix + str(p.pattern), inner)
            continue
        view = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
        methods = tuple(
            m.upper()
            for m in getattr(view, "http_method_names", [])
            if m not in ("head", "options", "trace") and hasattr(view, m)
        )
        key = f"{ns}{p.name}" if p.name else str(p.pattern)
        yield Route(key=key, pattern=p, prefix=prefix, methods=methods)


def all_routes() -> list[Route]:
    return [
        r
        for r in _walk(get_resolver().url_patterns)
        if not r.key.startswith(EXCLUDED_NAMESPACES)
        and str(r.pattern.pattern) not in EXCLUDED_PATTERNS
        and not r.prefix.startswith("admin/")
    ]


ROUTE_LIST = all_routes()
CELLS = [(r.key, m) for r in ROUTE_LIST if r.key in ROUTES for m in ROUTES[r.key]]


def test_every_route_and_api_method_is_in_the_table() -> None:
    missing = sorted({r.key for r in ROUTE_LIST} - set(ROUTES))
    assert missing == [], f"routes missing from ROUTES: {missing}"
    unused = sorted(set(ROUTES) - {r.key for r in ROUTE_LIST})
    assert unused == [], f"ROUTES names routes that do not exist: {unused}"
    undeclared = [
        (r.key, m)
        for r in ROUTE_LIST
        if r.prefix.startswith(("api/", "v1/")) or r.key.startswith("hindsight-")
        for m in r.methods
        if m not in ROUTES[r.key]
    ]
    assert undeclared == [], f"methods missing from ROUTES: {undeclared}"


# --- the world: one set-up for the module ------------------------------------------------------


@dataclass
class World:
    api: dict[str, Client]
    web: dict[str, Client]
    values: dict[str, str]
    private: Memory
    cookies: dict[str, str]


def _token(user: User, **kw: Any) -> tuple[ApiToken, str]:
    return token_create(user=user, name="matrix", actor=Actor.for_system("test"), **kw)


def _bearer(raw: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def build_world() -> World:
    system = Actor.for_system("test")
    users = {
        name: UserFactory.create(username=username)
        for name, username in [
            ("owner", "alice"),
            ("maintainer", "mia"),
            ("member", "bob"),
            ("viewer", "vic"),
            ("outsider", "charlie"),
        ]
    }
    UserFactory.create(username="dave")
    walt = UserFactory.create(username="walt")
    alice = users["owner"]
    project = project_create(slug="alpha", name="Alpha", owner=alice, actor=system)
    access = project_access(slug="alpha", actor=Actor(user=alice))
    for name, role in [("maintainer", Role.MAINTAINER), ("member", Role.MEMBER)]:
        membership_add(access=access, user=users[name], role=role)
    membership_add(access=access, user=users["viewer"], role=Role.VIEWER)
    membership_add(access=access, user=walt, role=Role.MEMBER)
    project_create(slug="charlie-lab", owner=users["outsider"], actor=system)
    beta = project_create(slug="beta", owner=alice, actor=system)

    api = {name: _bearer(_token(user)[1]) for name, user in users.items()}
    api["read_only_token"] = _bearer(_token(alice, read_only=True)[1])
    api["other_project_token"] = _bearer(_token(alice, project=beta)[1])
    revoked, raw = _token(alice)
    revoked.revoked_at = timezone.now()
    revoked.save(update_fields=["revoked_at"])
    api["revoked_token"] = _bearer(raw)
    expired, raw = _token(alice)
    expired.expires_at = timezone.now() - timedelta(days=1)
    expired.save(update_fields=["expires_at"])
    api["expired_token"] = _bearer(raw)
    api["anonymous"] = Client()
    spare, _ = _token(alice)

    web: dict[str, Client] = {}
    for name, user in users.items():
        web[name] = Client()
        web[name].force_login(user)
    for name in TOKENS:
        web[name] = api[name]  # a token on the web is no sign-in
    web["anonymous"] = Client()

    memory = MemoryFactory.create(project=project, status=Memory.Status.STALE, status_reason="old")
    other = MemoryFactory.create(project=project)
    proposed = MemoryFactory.create(project=project, status=Memory.Status.PROPOSED)
    private = MemoryFactory.create(
        project=project,
        scope=Scope.USER,
        owner=users["member"],
        title=f"bob's {PRIVATE_MARKER} note",
        content=f"Only bob knows the {PRIVATE_MARKER} deploy trick for postgresql.",
        keywords=[PRIVATE_MARKER],
    )
    session = AgentSession.objects.create(project=project, external_id="s1", created_by_user=alice)
    SessionRecord.objects.create(session=session, index=0, type="user", content="hello")
    session.record_count = 1
    session.save()
    ToolResultDecision.objects.create(session=session, tool_use_id="big", artifact="output")
    artifacts.artifact_put(project=project, path="MEMORY.md", content="# Memory", actor=system)
    alice_actor = Actor(user=alice)
    recall_services.instruction_file_put(
        project=project, actor=alice_actor, path="MEWCODE.md", content="# Alpha"
    )
    recall_services.instruction_file_put(
        project=project, actor=alice_actor, path="MEWCODE.md", content="Mine.", owner=alice
    )
    recall_services.recall_file_put(
        project=project,
        actor=alice_actor,
        scope="project",
        data=recall_services.RecallFileInput(path="notes.md", content="v1"),
    )
    import_job = Job.objects.create(
        kind=Job.Kind.IMPORT, key="0" * 32, project=project, input_watermark=1
    )
    project.settings = {"hindsight": {"mental_models": {"mm": {"name": "M", "source_query": "q"}}}}
    project.save(update_fields=["settings"])
    values = {
        "memory": str(memory.public_id),
        "memory8": str(memory.public_id)[:8],
        "other_memory": str(other.public_id),
        "proposed": str(proposed.public_id),
        "spare_token": str(spare.public_id),
        "private": str(private.public_id),
        "import_job": import_job.key,
    }
    cookies = {name: web[name].cookies.output(header="", sep=";") for name in users}
    return World(api=api, web=web, values=values, private=private, cookies=cookies)


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield build_world()
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


# --- one cell ----------------------------------------------------------------------------------

_PARAM = re.compile(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)")


def url_of(route: Route, rule: Rule, values: dict[str, str], slug: str = "alpha") -> str:
    kwargs = DEFAULT_KWARGS | rule.kwargs

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        value = kwargs[name]
        if name in ("slug", "bank_id"):
            value = slug
        return value.format(**values)

    raw = route.prefix + str(route.pattern.pattern)
    path = _PARAM.sub(fill, raw).lstrip("^").rstrip("$")
    return "/" + path + (f"?{rule.query}" if rule.query else "")


def face_of(route: Route) -> str:
    return "web" if route.key.startswith("web:") or route.key == "set_language" else "api"


def expected(rule: Rule, face: str, caller: str, write: bool) -> str:
    if caller in rule.cells:
        return rule.cells[caller]
    if rule.role == "public":
        return OK
    if caller in ("anonymous", "revoked_token", "expired_token"):
        return UNAUTH
    if face == "web" and caller in TOKENS:
        return UNAUTH  # a token is no web sign-in
    if caller == "read_only_token" and write:
        return DENIED
    if rule.role == "signed-in":
        return OK
    if caller in ("outsider", "other_project_token"):
        return HIDDEN
    role = ROLE_OF.get(caller, "owner")  # the read-only token is the owner's
    return OK if RANK[role] >= RANK[rule.role] else DENIED


def send(client: Client, method: str, url: str, rule: Rule, values: dict[str, str]) -> Any:
    body = rule.body
    if isinstance(body, dict):
        body = {k: v.format(**values) if isinstance(v, str) else v for k, v in body.items()}
    if rule.fmt == "json":
        data = b"" if body is None else json.dumps(body).encode()
        return client.generic(method, url, data=data, content_type="application/json")
    if rule.fmt == "ndjson":
        return client.generic(method, url, data=body, content_type="application/x-ndjson")
    if rule.fmt == "multipart":
        return client.post(url, body or {})
    return client.post(url, body or {}) if method == "POST" else client.get(url)


def outcome(response: Any, face: str) -> str:
    status = response.status_code
    login = face == "web" and status == 302 and "/accounts/login/" in response.get("Location", "")
    return {401: UNAUTH, 403: DENIED, 404: NOT_FOUND, 405: "method_not_allowed", 409: CONFLICT}.get(
        status, UNAUTH if login else OK
    )


# Tables whose row counts say whether a request wrote anything, and the two event logs (read by
# their highest id: deleting a project deletes its events and writes one).
_COUNTED = [
    m._meta.db_table
    for m in (Memory, AgentSession, SessionRecord, Project, ProjectMembership, ApiToken, Job)
]
_EVENTS = [AuditEvent._meta.db_table, MemoryEvent._meta.db_table]


def _counts() -> tuple[int, ...]:
    """Row counts of _COUNTED then the highest ids of _EVENTS, in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT "
            + ", ".join(
                [f"(SELECT count(*) FROM {t})" for t in _COUNTED]
                + [f"(SELECT coalesce(max(id), 0) FROM {t})" for t in _EVENTS]
            )
        )
        row = cursor.fetchone()
    return tuple(row)


def call(world: World, caller: str, face: str, method: str, url: str, rule: Rule) -> Any:
    """One request in a savepoint of its own: nothing it writes outlives it. The answer
    carries `rows_written` and `events_written`: how the counted tables grew meanwhile."""
    client = (world.web if face == "web" else world.api)[caller]
    if face == "web" and caller in world.cookies:
        client.cookies = SimpleCookie(world.cookies[caller])  # a logout must not stick
    cache.clear()
    sid = transaction.savepoint_create()
    try:
        before = _counts()
        response = send(client, method, url, rule, world.values)
        if response.streaming:  # read inside the savepoint: streams query as they go
            read = HttpResponse(b"".join(response.streaming_content), status=response.status_code)
            for name, value in response.items():
                read[name] = value
            response = read
        after = _counts()
        split = len(_COUNTED)
        response.rows_written = [
            t for t, b, a in zip(_COUNTED, before[:split], after[:split], strict=True) if a != b
        ]
        response.events_written = sum(after[split:]) - sum(before[split:])
        return response
    finally:
        transaction.savepoint_rollback(sid)


_CSRF = re.compile(rb'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]+')


_TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def normalized(body: bytes, slug: str) -> bytes:
    """An answer without what differs by construction: the slug it echoes, the CSRF mask,
    timestamps (a token's last use moves with every call)."""
    return _TIME.sub(b"T", _CSRF.sub(rb"\1-", body)).replace(slug.encode(), b"{slug}")


def shows_private(caller: str, body: bytes, world: World) -> bool:
    return caller != "member" and (
        PRIVATE_MARKER.encode() in body or world.values["private"].encode() in body
    )


@pytest.mark.parametrize(("key", "method"), CELLS, ids=[f"{m} {k}" for k, m in CELLS])
def test_cell(key: str, method: str, world: World, db: None) -> None:
    route = next(r for r in ROUTE_LIST if r.key == key)
    rule = ROUTES[key][method]
    face = face_of(route)
    write = method not in ("GET", "HEAD") and key not in POST_READS
    url = url_of(route, rule, world.values)
    wrong: list[str] = []
    succeeded = False
    for caller in CALLERS:
        want = expected(rule, face, caller, write)
        response = call(world, caller, face, method, url, rule)
        got = outcome(response, face)
        if want == HIDDEN:
            # Hidden: the very answer a project that does not exist gets.
            missing = call(
                world, caller, face, method, url_of(route, rule, world.values, MISSING), rule
            )
            same = missing.status_code == response.status_code and normalized(
                missing.content, MISSING
            ) == normalized(response.content, "alpha")
            got = HIDDEN if same and got in (NOT_FOUND, OK) else got
        if got != want:
            wrong.append(f"{caller}: expected {want}, got {got} ({response.status_code})")
        wrong += answer_problems(key, url, face, write, caller, got, response)
        if key not in PRIVATE_EXEMPT and shows_private(caller, response.content, world):
            wrong.append(f"{caller}: the answer shows bob's private memory")
        succeeded = succeeded or 200 <= response.status_code < 300
    # Every API write is exercised successfully by someone, so its audit check above ran.
    exempt = NO_SUCCESSFUL_CALLER | UNAUDITED_WRITES
    if write and face == "api" and key not in exempt and not succeeded:
        wrong.append("no caller's write succeeded: the audit check did not run")
    assert wrong == [], f"{method} {key}:\n" + "\n".join(wrong)


# Reads that use POST for their body: a read-only token may call them.
POST_READS = {"recall", "hindsight-recall", "hindsight-reflect"}

# Writes that succeed without an audit or memory event, each for a reason: appended records are
# their own append-only log (each names its session and position); a transcript push appends
# records too; a compaction stores a compact_boundary record; a restore is a new project whose
# import is audited in it (tests/backups); issuing a token stores the token with its creation.
# Audited API writes the matrix's request does not make succeed, each for a reason: promote
# takes the caller's own private memory (memories' tests check its event); a restore and an
# interchange import need a real backup or export file (tests/backups, tests/interchange
# check their audit events).
NO_SUCCESSFUL_CALLER = {"memory-promote", "project-restore", "interchange-import"}

UNAUDITED_WRITES = {
    "session-records",
    "session-transcript",
    "session-compact",
}


def answer_problems(
    key: str, url: str, face: str, write: bool, caller: str, got: str, response: Any
) -> list[str]:
    """What is wrong with one answer besides its outcome: refusals in their route's shape
    writing nothing, and successful API writes leaving an audit (or memory) event."""
    problems = []
    status = response.status_code
    hindsight = key.startswith("hindsight-")
    if url.startswith(("/api/v1/", "/v1/")) and got in (UNAUTH, DENIED) and status in (401, 403):
        body = response.json()
        if hindsight:
            if set(body) != {"detail"}:  # Hindsight's own error shape
                problems.append(f"{caller}: a Hindsight refusal not in {{detail}}: {body}")
        elif set(body) != {"error"} or not body["error"].get("code"):
            problems.append(f"{caller}: a refusal outside the error envelope: {body}")
        if status == 401 and not response.get("WWW-Authenticate", "").startswith("Bearer"):
            problems.append(f"{caller}: 401 without WWW-Authenticate: Bearer")
        if status == 403 and caller == "read_only_token":
            message = body["detail"] if hindsight else body["error"]["message"]
            if "read-only" not in message:
                problems.append(f"{caller}: 403 does not say the token is read-only")
    if not write:
        return problems
    # A refusal writes nothing. (A HIDDEN 2xx is a project-restricted token writing to its own
    # bank whatever bank id it names: OWN_BANK above; alpha is untouched, as the answer shows.)
    refused = status in (401, 403, 404, 405) or got == UNAUTH
    if refused and (response.rows_written or response.events_written):
        problems.append(
            f"{caller}: refused ({status}) yet wrote {response.rows_written} "
            f"and {response.events_written} events"
        )
    successful = face == "api" and 200 <= status < 300
    if successful and key not in UNAUDITED_WRITES and response.events_written < 1:
        problems.append(f"{caller}: a successful write ({status}) left no audit event")
    return problems


# The owner's whole-project backup holds every member's memories, private ones included: a
# restore must be lossless (README, Backups). It is the one read exempt from the private check.
PRIVATE_EXEMPT = {"project-backup"}
READ_CELLS = [
    (k, m) for k, m in CELLS if (m == "GET" or k in POST_READS) and k not in PRIVATE_EXEMPT
]


@pytest.mark.parametrize(("key", "method"), READ_CELLS, ids=[f"{m} {k}" for k, m in READ_CELLS])
def test_private_memories_change_no_one_elses_answers(
    key: str, method: str, world: World, db: None
) -> None:
    """Counts and statistics too: the owner's and the viewer's answers are the same with and
    without bob's private memory."""
    route = next(r for r in ROUTE_LIST if r.key == key)
    rule = ROUTES[key][method]
    face = face_of(route)
    url = url_of(route, rule, world.values)
    with_private = {c: call(world, c, face, method, url, rule) for c in ("owner", "viewer")}
    Memory.objects.filter(pk=world.private.pk).delete()
    changed = [
        caller
        for caller, before in with_private.items()
        if normalized(before.content, "alpha")
        != normalized(call(world, caller, face, method, url, rule).content, "alpha")
    ]
    assert changed == [], f"{method} {key} answers differently with bob's private memory"
