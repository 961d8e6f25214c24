"""Loaded by schemathesis (SCHEMATHESIS_HOOKS) in tests/reliability/test_schema_fuzz.py: how to
send the bodies of our NDJSON routes (transcript append and push), which it cannot guess."""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    items = value if isinstance(value, list) else [value]
    return b"".join(json.dumps(item).encode() + b"\n" for item in items)
