"""Filters for the console log (settings.LOGGING)."""

from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    """A 4xx answer is expected (a refused role, a missing page): its line keeps the status and
    the path, not the traceback of the exception behind it, which Django attaches to every 403
    from a PermissionDenied and which buried real errors in the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
