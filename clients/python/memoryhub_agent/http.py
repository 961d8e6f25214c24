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


class HttpError(AgentError):
    """The server answered with an error status (its envelope's code and message)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.details = details if isinstance(details, dict) else {}


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
