"""memoryhub-agent: the command line that hook-based agents call.

Hook commands (session-start, prompt, push, pre-compact, end) read the JSON the agent's hook
receives on stdin (Claude Code: session_id, transcript_path, cwd, hook_event_name, prompt,
source, trigger, reason…; flags can give the same fields for other agents) and print only what
the agent should add to its context. They never break the agent: on any failure, or when the
time budget (MEMORYHUB_TIMEOUT, 3 s by default, for the whole command) runs out, they print
nothing, exit 0 and write the reason to the log in the user's state directory.

A session belongs to the person who created it. When the server refuses the agent's session to
this user (a viewer may not create one: 403; the id is another person's: 409, or 403 on a push,
a recall or the injection), the hooks carry on without it: memories are injected and recalled
without a session (nothing is marked as shown, so one may come up twice), no transcript is
uploaded, and one line in the log says why.

Plain commands (login, status, search, remember) are for people and scripts: they report
errors on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memoryhub_agent import __version__, config, transcript
from memoryhub_agent.http import AgentError, Client, HttpError

HOOK_COMMANDS = ("session-start", "prompt", "push", "pre-compact", "end")
SESSIONLESS = "memories are injected without a session, the transcript is not uploaded"
# After the budget, the watchdog ends a command stuck where no socket timeout reaches
# (a name lookup, a server that sends its answer a byte at a time).
WATCHDOG_GRACE_SECONDS = 0.25


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    # argparse exits 2 on a bad flag; for a UserPromptSubmit hook exit 2 erases the prompt.
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


# --- hook input ------------------------------------------------------------------------------


@dataclass
class HookInput:
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    event: str = ""
    prompt: str = ""
    source: str = ""  # SessionStart: startup | resume | clear | compact
    trigger: str = ""  # PreCompact: manual | auto
    reason: str = ""  # SessionEnd: clear | logout | prompt_input_exit | other …


def read_hook_input(args: argparse.Namespace) -> HookInput:
    """The hook's JSON on stdin (when stdin is not a terminal), then the flags over it."""
    data: dict[str, Any] = {}
    if not sys.stdin.isatty():
        raw = sys.stdin.read()
        if raw.strip():
            try:
                loaded = json.loads(raw)
            except ValueError as exc:
                raise AgentError(f"the hook input on stdin is not JSON: {exc}") from None
            if not isinstance(loaded, dict):
                raise AgentError("the hook input on stdin is not a JSON object")
            data = loaded
    hook = HookInput(
        session_id=str(data.get("session_id") or ""),
        transcript_path=str(data.get("transcript_path") or ""),
        cwd=str(data.get("cwd") or ""),
        event=str(data.get("hook_event_name") or ""),
        prompt=str(data.get("prompt") or ""),
        source=str(data.get("source") or ""),
        trigger=str(data.get("trigger") or ""),
        reason=str(data.get("reason") or ""),
    )
    for name in ("session_id", "transcript_path", "cwd", "prompt", "source", "trigger"):
        value = getattr(args, name, None)
        if value:
            setattr(hook, name, value)
    if hook.transcript_path:
        hook.transcript_path = os.path.expanduser(hook.transcript_path)
    return hook


# --- talking to the server -------------------------------------------------------------------


class Hub:
    """The project's API as the commands use it."""

    def __init__(self, settings: config.Settings, deadline: float, label: str = "") -> None:
        self.settings = settings
        self.client = Client(settings.project_api, settings.token, deadline)
        self.label = label  # what the log lines start with: the command and its session
        # Set once the server refused the session to this user: from then on the command
        # reads without it and uploads nothing.
        self.sessionless = False

    def session(self, hook: HookInput) -> dict[str, Any]:
        """The server's session for the agent's session id, created when missing."""
        if not hook.session_id:
            raise AgentError("no session_id in the hook input (or --session-id)")
        metadata = {"cwd": hook.cwd} if hook.cwd else {}
        body = {"external_id": hook.session_id, "metadata": metadata}
        return dict(self.client.request("POST", "/sessions/", json_body=body))

    def usable_session(self, hook: HookInput) -> dict[str, Any] | None:
        """The session, or None when the server will not let this user have it: a viewer (or
        a read-only token) may not create sessions (403), another person created this id
        (409). Other errors (an outage, a bad token) still end the command."""
        try:
            return self.session(hook)
        except HttpError as exc:
            if exc.status == 409:
                self.drop_session(hook, exc, "it belongs to another person")
            elif exc.status == 403:
                self.drop_session(hook, exc, "you may not create sessions here (a viewer?)")
            else:
                raise
            return None

    def drop_session(self, hook: HookInput, exc: HttpError, why: str) -> None:
        """Carry on without the session, and say so once in the log."""
        if self.sessionless:
            return
        self.sessionless = True
        answer = str(exc).splitlines()[0]
        config.log(f"{self.label}: unusable session: {why} ({answer}); {SESSIONLESS}")

    def _sessions(self, hook: HookInput) -> str:
        return "/sessions/" + _quote(hook.session_id)

    def push(self, hook: HookInput, session: dict[str, Any], *, final: bool) -> int:
        """Upload the transcript lines the server does not have; the number of new records.

        The server says where to continue (metadata.transcript.next_line) and may hold the
        last record back (a message still being written), so each request starts where the
        previous answer said.
        """
        path = hook.transcript_path
        if not path or self.sessionless:
            return 0
        if not os.path.isfile(path):
            config.log(f"push: no transcript file at {path}")
            return 0
        state = (session.get("metadata") or {}).get("transcript") or {}
        start = int(state.get("next_line") or 1)
        lines = transcript.read_lines(path, start=start, final=final)
        position, created = start, 0
        max_lines, max_bytes = transcript.CHUNK_LINES, transcript.CHUNK_BYTES
        while position < start + len(lines):
            chunk = transcript.take(lines[position - start :], max_lines, max_bytes)
            last = position - start + len(chunk) >= len(lines)
            try:
                answer = self.client.request(
                    "POST",
                    self._sessions(hook) + "/transcript/",
                    params={"first_line": position, "final": "true" if final and last else None},
                    body=b"".join(chunk),
                    content_type="application/x-ndjson",
                )
            except HttpError as exc:
                resume_at = exc.details.get("next_line") if exc.status == 409 else None
                if isinstance(resume_at, int) and resume_at >= start:
                    position = resume_at  # another push went first: continue after it
                    continue
                if exc.status == 403:
                    self.drop_session(hook, exc, "it belongs to another person")
                    return created
                raise
            created += int(answer["created"])
            following = int(answer["next_line"])
            if last:
                break
            if following <= position:
                # One record spans the whole chunk (held back): send more lines at once.
                max_lines, max_bytes = max_lines * 2, max_bytes * 2
            position = max(following, position)
        return created

    def injection(self, hook: HookInput) -> str:
        def fetch(session_id: str | None) -> Any:
            params = {
                "profile": self.settings.profile,
                "format": "text",
                "session_id": session_id,
                "budget_tokens": self.settings.budget_tokens,
            }
            return self.client.request("GET", "/injection/", params=params, accept="text/plain")

        text = self._with_session(hook, fetch)
        return text if isinstance(text, str) else ""

    def recall(self, hook: HookInput) -> str:
        def fetch(session_id: str | None) -> Any:
            body = {"query": hook.prompt}
            if session_id is not None:
                body["session_id"] = session_id
            return self.client.request("POST", "/recall/", json_body=body)

        answer = self._with_session(hook, fetch)
        return str(answer.get("text") or "")

    def _with_session(self, hook: HookInput, fetch: Callable[[str | None], Any]) -> Any:
        """A read that marks what it returns as shown to the session; without the session
        when the server refuses it to this user (403: another person's)."""
        if not self.sessionless:
            try:
                return fetch(hook.session_id)
            except HttpError as exc:
                if exc.status != 403:
                    raise
                self.drop_session(hook, exc, "it belongs to another person")
        return fetch(None)

    def compact(self, hook: HookInput) -> dict[str, Any]:
        body = {"context_window": self.settings.context_window, "mode": "manual"}
        return dict(self.client.request("POST", self._sessions(hook) + "/compact/", json_body=body))

    def end(self, hook: HookInput) -> None:
        self.client.request("POST", self._sessions(hook) + "/end/")

    def extract(self, hook: HookInput) -> str:
        """Queue the session's extraction now; what the server said."""
        try:
            job = self.client.request("POST", self._sessions(hook) + "/extract/")
        except HttpError as exc:
            if exc.status != 400:  # 400: nothing past the last extraction
                raise
            return f"not queued ({exc})"
        return f"queued (job {job.get('id')})"


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


# --- hook commands ---------------------------------------------------------------------------


def hook_session_start(hub: Hub, hook: HookInput) -> str:
    """The first-turn payload. After a compaction or on resume, the transcript (with the
    agent's own compact boundary) goes up first, so what is injected now counts as seen after
    that boundary."""
    session = hub.usable_session(hook)
    if session is not None and hook.source in ("compact", "resume"):
        hub.push(hook, session, final=False)
    return hub.injection(hook)


def hook_prompt(hub: Hub, hook: HookInput) -> str:
    """Recall for the user's message; the server remembers what this session was shown."""
    if not hook.prompt.strip():
        return ""
    try:
        return hub.recall(hook)
    except HttpError as exc:
        if exc.status != 404:
            raise
        hub.usable_session(hook)  # hooks installed mid-session: no session-start ran
        return hub.recall(hook)


def hook_push(hub: Hub, hook: HookInput) -> str:
    session = hub.usable_session(hook)
    if session is None:
        return ""
    created = hub.push(hook, session, final=False)
    if not hub.sessionless:
        config.log(f"push session={hook.session_id} records={created}")
    return ""


def hook_pre_compact(hub: Hub, hook: HookInput) -> str:
    """The transcript up to now, then a compaction boundary on the server."""
    session = hub.usable_session(hook)
    if session is None:
        return ""
    hub.push(hook, session, final=True)
    if hub.sessionless:
        return ""
    outcome = hub.compact(hook)
    config.log(
        f"pre-compact session={hook.session_id} trigger={hook.trigger or '-'} "
        f"compacted={outcome.get('compacted')} reason={outcome.get('reason')}"
    )
    return ""


def hook_end(hub: Hub, hook: HookInput) -> str:
    """The rest of the transcript, the session marked ended, and its extraction queued."""
    session = hub.usable_session(hook)
    if session is None:
        return ""
    created = hub.push(hook, session, final=True)
    if hub.sessionless:
        return ""
    hub.end(hook)
    extraction = hub.extract(hook)
    config.log(
        f"end session={hook.session_id} reason={hook.reason or '-'} records={created} "
        f"extraction {extraction}"
    )
    return ""


HOOKS: dict[str, Callable[[Hub, HookInput], str]] = {
    "session-start": hook_session_start,
    "prompt": hook_prompt,
    "push": hook_push,
    "pre-compact": hook_pre_compact,
    "end": hook_end,
}
EVENT_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}


class Watchdog:
    """Ends the process silently (exit 0) once the budget is spent, unless the output is
    already being written: then it lets the command finish."""

    def __init__(self, seconds: float, label: str) -> None:
        self.lock = threading.Lock()
        self.label = label
        self.seconds = seconds
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True

    def start(self) -> None:
        self.timer.start()

    def _fire(self) -> None:
        if not self.lock.acquire(blocking=False):
            return
        config.log(f"{self.label}: gave up after {self.seconds:.2f} s")
        os._exit(0)

    def emit(self, text: str) -> None:
        with self.lock:
            self.timer.cancel()
            if text:
                sys.stdout.write(text if text.endswith("\n") else text + "\n")
                sys.stdout.flush()


def run_hook(args: argparse.Namespace) -> int:
    started = time.monotonic()
    label = args.command
    try:
        settings = config.load(_overrides(args))
    except config.ConfigError as exc:
        config.log(f"{label}: {exc}")
        return 0
    watchdog = Watchdog(settings.timeout + WATCHDOG_GRACE_SECONDS, label)
    watchdog.start()
    output = ""
    try:
        hook = read_hook_input(args)
        label = watchdog.label = f"{args.command} session={hook.session_id or '-'}"
        output = HOOKS[args.command](Hub(settings, started + settings.timeout, label), hook)
        if output and getattr(args, "json", False):
            output = json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": EVENT_NAMES[args.command],
                        "additionalContext": output,
                    }
                }
            )
    except Exception as exc:  # whatever it is, the agent must carry on
        config.log(f"{label}: {type(exc).__name__}: {exc}")
        output = ""
    watchdog.emit(output)
    return 0


# --- plain commands --------------------------------------------------------------------------


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "url": getattr(args, "url", None),
        "project": getattr(args, "project", None),
        "timeout": getattr(args, "timeout", None),
    }


def _hub(args: argparse.Namespace) -> Hub:
    settings = config.load(_overrides(args))
    return Hub(settings, time.monotonic() + settings.timeout)


def cmd_login(args: argparse.Namespace) -> int:
    """Check the URL, token and project, then save them (0600) for every later command."""
    values = config.read_file()
    url = args.url or values.get("url") or os.environ.get("MEMORYHUB_URL") or ""
    project = args.project or values.get("project") or os.environ.get("MEMORYHUB_PROJECT") or ""
    if not url or not project:
        raise UsageError("login needs --url and --project")
    token = args.token or ""
    if not token:
        token = (
            getpass.getpass("MemoryHub token: ") if sys.stdin.isatty() else sys.stdin.readline()
        ).strip()
    if not token:
        raise UsageError("no token given (--token, or type it / pipe it on stdin)")
    settings = config.Settings(url=url, token=token, project=project)
    settings.timeout = float(args.timeout or values.get("timeout") or config.DEFAULT_TIMEOUT)
    me = Client(settings.api, token, time.monotonic() + settings.timeout).request("GET", "/me/")
    Hub(settings, time.monotonic() + settings.timeout).client.request("GET", "/")
    values.update({"url": url, "token": token, "project": project})
    path = config.write_file(values)
    print(f"Logged in to {url} as {me.get('username')} (project {project}); saved {path}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Where the settings come from, and whether the server, token and project answer."""
    path = config.config_path()
    print(f"memoryhub-agent {__version__}")
    print(f"config file: {path}{'' if path.exists() else ' (none)'}")
    print(f"log file:    {config.log_path()}")
    hub = _hub(args)
    settings = hub.settings
    print(f"server:      {settings.url}")
    print(f"project:     {settings.project}")
    print(f"token:       {settings.token[:10]}…")
    me = Client(settings.api, settings.token, hub.client.deadline).request("GET", "/me/")
    print(f"user:        {me.get('username')}")
    project = hub.client.request("GET", "/")
    print(f"project ok:  {project.get('name') or settings.project}")
    stats = hub.client.request("GET", "/bank/stats/")
    total = (stats.get("memories") or {}).get("total")
    print(f"bank:        {total} memories, {stats.get('sessions')} sessions")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    hub = _hub(args)
    params: dict[str, Any] = {"q": " ".join(args.query), "k": args.k}
    if args.kind:
        params["kind"] = args.kind
    if args.session_id:
        params["session_id"] = args.session_id
    answer = hub.client.request("GET", "/memories/search/", params=params)
    results = answer.get("results") or []
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
        return 0
    for row in results:
        content = " ".join(str(row.get("content", "")).split())
        print(f"- [{row.get('kind')}] {content}  ({row.get('score', 0):.2f}, {row.get('id')})")
    if not results:
        print("No memories match.", file=sys.stderr)
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    content = " ".join(args.content)
    if content == "-":
        content = sys.stdin.read()
    if not content.strip():
        raise UsageError("remember needs the memory's text (or - to read it from stdin)")
    body: dict[str, Any] = {"content": content, "kind": args.kind}
    if args.title:
        body["title"] = args.title
    if args.importance:
        body["importance"] = args.importance
    if args.keywords:
        body["keywords"] = [k.strip() for k in args.keywords.split(",") if k.strip()]
    if args.scope:
        body["scope"] = args.scope
    if args.session_id:
        body["source"] = {"session": args.session_id}
    memory = _hub(args).client.request("POST", "/memories/", json_body=body)
    print(f"Remembered {memory.get('kind')} memory {memory.get('id')}")
    return 0


PLAIN: dict[str, Callable[[argparse.Namespace], int]] = {
    "login": cmd_login,
    "status": cmd_status,
    "search": cmd_search,
    "remember": cmd_remember,
}


# --- parser ----------------------------------------------------------------------------------


def build_parser() -> _Parser:
    parser = _Parser(
        prog="memoryhub-agent",
        description="Connects hook-based coding agents (Claude Code, any agent with shell "
        "hooks) to a MemoryHub server.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--url", help="server URL (MEMORYHUB_URL)")
        sub.add_argument("--project", help="project slug (MEMORYHUB_PROJECT)")
        sub.add_argument("--timeout", type=float, help="seconds for the whole command")

    hook_help = {
        "session-start": "print the first-turn memory payload (SessionStart)",
        "prompt": "print recall for the user's prompt (UserPromptSubmit)",
        "push": "upload the transcript's new lines (Stop)",
        "pre-compact": "upload the transcript and record a compaction (PreCompact)",
        "end": "upload the rest, end the session, start its extraction (SessionEnd)",
    }
    for name in HOOK_COMMANDS:
        sub = commands.add_parser(name, help=hook_help[name])
        common(sub)
        sub.add_argument("--session-id", dest="session_id", help="instead of stdin's")
        sub.add_argument("--transcript", dest="transcript_path", help="instead of stdin's")
        sub.add_argument("--cwd")
        if name == "session-start":
            sub.add_argument("--source", help="startup, resume, clear or compact")
        if name == "prompt":
            sub.add_argument("--prompt")
        if name == "pre-compact":
            sub.add_argument("--trigger", help="manual or auto")
        if name in EVENT_NAMES:
            sub.add_argument(
                "--json",
                action="store_true",
                help="print Claude Code's hookSpecificOutput.additionalContext JSON "
                "instead of plain text",
            )

    login = commands.add_parser("login", help="save the server, token and project")
    common(login)
    login.add_argument("--token", help="the agent token (else prompted, or read from stdin)")

    status = commands.add_parser("status", help="show the settings and check the server")
    common(status)

    search = commands.add_parser("search", help="search the project's memories")
    common(search)
    search.add_argument("query", nargs="+")
    search.add_argument("-k", type=int, default=10, help="how many (default 10)")
    search.add_argument("--kind", help="comma-separated kinds")
    search.add_argument("--session-id", dest="session_id")
    search.add_argument("--json", action="store_true")

    remember = commands.add_parser("remember", help="write a memory")
    common(remember)
    remember.add_argument("content", nargs="+", help="the memory's text, or - for stdin")
    remember.add_argument("--kind", default="fact", help="fact, rule, lesson, project, user…")
    remember.add_argument("--title")
    remember.add_argument("--importance", type=int)
    remember.add_argument("--keywords", help="comma-separated")
    remember.add_argument("--scope", choices=["project", "user"])
    remember.add_argument("--session-id", dest="session_id", help="the session it came from")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        if any(name in argv for name in HOOK_COMMANDS):
            config.log(str(exc))  # a mistyped hook must not disturb the agent
            return 0
        print(exc, file=sys.stderr)
        return 2
    if args.command in HOOKS:
        return run_hook(args)
    if args.command is None:
        build_parser().print_help()
        return 2
    try:
        return PLAIN[args.command](args)
    except UsageError as exc:
        print(f"memoryhub-agent: {exc}", file=sys.stderr)
        return 2
    except (AgentError, config.ConfigError) as exc:
        config.log(f"{args.command}: {exc}")
        print(f"memoryhub-agent {args.command}: {exc}", file=sys.stderr)
        return 1
