"""A small JSON-over-HTTP client on urllib, with one deadline for a whole command."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from memoryhub_agent import __version__

USER_AGENT = f"memoryhub-agent/{__version__}"
MIN_REQUEST_SECONDS = 0.05


class AgentError(Exception):
    """Anything that stops a command: unreachable server, timeout, an error answer."""


DETAIL_LINES = 8  # at most this many of the envelope's details, one "field: message" a line
DETAIL_CHARS = 300  # and at most this much of each


class HttpError(AgentError):
    """The server answered with an error status: its envelope's code and message, then its
    details (which field is wrong and why), so a person can fix the command."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        lines = describe_details(details)
        super().__init__("\n  ".join([f"HTTP {status} {code}: {message}", *lines]))
        self.status = status
        self.code = code
        self.details = details if isinstance(details, dict) else {}


def describe_details(details: Any) -> list[str]:
    """The envelope's details as "field: message" lines: nested fields joined with dots
    (items.0.kind), the messages of a field one line each, non_field_errors without a name."""
    lines: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                name = "" if key == "non_field_errors" else str(key)
                walk(item, f"{path}.{name}" if path and name else path or name)
        elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
            for index, item in enumerate(value):
                walk(item, f"{path}.{index}" if path else str(index))
        else:
            for message in value if isinstance(value, list) else [value]:
                text = " ".join(str(message).split())
                if len(text) > DETAIL_CHARS:
                    text = text[: DETAIL_CHARS - 1] + "…"
                lines.append(f"{path}: {text}" if path else text)

    if details:
        walk(details, "")
    if len(lines) > DETAIL_LINES:
        more = len(lines) - DETAIL_LINES + 1
        lines = [*lines[: DETAIL_LINES - 1], f"… and {more} more"]
    return lines


class Client:
    def __init__(self, base: str, token: str, deadline: float) -> None:
        """`deadline` is a time.monotonic() value: every request gets the time left."""
        if not base.startswith(("http://", "https://")):
            raise AgentError(f"the server URL must start with http:// or https://: {base!r}")
        self.base = base.rstrip("/")
        self.token = token
        self.deadline = deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        body: bytes | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        """The decoded JSON answer (or text for non-JSON answers); raises AgentError."""
        url = self.base + path
        if params:
            query = {k: v for k, v in params.items() if v is not None}
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        data = body
        if json_body is not None:
            data = json.dumps(json_body).encode("utf-8")
        elif data is None and method in ("POST", "PUT", "PATCH"):
            data = b""  # a Content-Length: 0, which some proxies insist on
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": accept,
            "User-Agent": USER_AGENT,
        }
        if data:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310 - http(s) only, checked above
        timeout = self.remaining()
        if timeout < MIN_REQUEST_SECONDS:
            raise AgentError(f"out of time before {method} {path}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:  # noqa: S310 - http(s) only
                raw = response.read()
                ctype = response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            raise _http_error(exc) from None
        except (urllib.error.URLError, socket.timeout, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AgentError(f"{method} {url}: {reason or type(exc).__name__}") from None
        if not raw:
            return None
        if ctype.startswith("application/json"):
            try:
                return json.loads(raw.decode("utf-8"))
            except ValueError as exc:
                raise AgentError(f"{method} {url}: the answer is not JSON ({exc})") from None
        return raw.decode("utf-8", errors="replace")


def _http_error(exc: urllib.error.HTTPError) -> HttpError:
    try:
        raw = exc.read()
    except (OSError, socket.timeout):
        raw = b""
    code, message, details = "error", exc.reason or "", None
    try:
        envelope = json.loads(raw.decode("utf-8")).get("error", {})
        code = str(envelope.get("code", code))
        message = str(envelope.get("message", message))
        details = envelope.get("details")
    except (ValueError, AttributeError):
        if raw:
            message = raw[:200].decode("utf-8", errors="replace")
    return HttpError(exc.code, code, message, details)
