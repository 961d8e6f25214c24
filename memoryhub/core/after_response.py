"""Work a request leaves until its response has gone out: bookkeeping nobody waits for.

A search's hit counts are statistics for the dashboard; the agent that searched waits for the
results, not for the UPDATE. Within a request (AfterResponseMiddleware) `defer` queues a
function, which runs when the server closes the response, after the body was handed over (the
WSGI close(); Django's test client closes it before returning, so tests see it done). Outside a
request (MCP's app, Celery tasks, management commands) it runs at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

_pending: ContextVar[list[Callable[[], None]] | None] = ContextVar("after_response", default=None)


def defer(work: Callable[[], None]) -> None:
    """Run `work` after the current response is sent, or now when there is no request."""
    pending = _pending.get()
    if pending is None:
        work()
    else:
        pending.append(work)


def _run(pending: list[Callable[[], None]]) -> None:
    for work in pending:
        try:
            work()
        except Exception:  # the response is gone: log, never raise into the server
            logger.exception("Work deferred until after the response failed")


class AfterResponseMiddleware:
    """Collects the request's deferred work and hands it to the response's closers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        pending: list[Callable[[], None]] = []
        token = _pending.set(pending)
        try:
            response = self.get_response(request)
        except BaseException:
            _run(pending)  # no response will be closed
            raise
        finally:
            _pending.reset(token)
        if pending:
            # Django calls these from HttpResponse.close(), before request_finished (which
            # may close the database connection).
            response._resource_closers.append(lambda: _run(pending))  # type: ignore[attr-defined]
        return response
