"""Every API and Hindsight route that takes a body × each class of malformed input: a clear 4xx
in the route's own error shape (our envelope, or Hindsight's {"detail": …}), and no row added or
removed anywhere in the database. Every web form post × NUL bytes in each field, a broken
multipart body and a JSON body: never a 5xx, and a refusal writes nothing.

The routes, their valid bodies and path values come from the permission matrix's table
(test_permission_matrix.ROUTES), so a new write route is covered as soon as it is declared
there; each request is sent with the project owner's token, who may call every route, so the
only thing wrong with it is the malformation. Classes that depend on a route's body (numbers
beyond 64 bits, unknown enum values, NUL bytes) are built from that route's valid body and
skipped for routes whose body has no such field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client

from accounts.models import User
from memoryhub.core.parsers import NdjsonParser
from tests.reliability.test_permission_matrix import (
    CELLS,
    ROUTE_LIST,
    ROUTES,
    Route,
    Rule,
    World,
    face_of,
    url_of,
    world,  # noqa: F401 - the module-scoped fixture, shared
)

# Enum-valued fields of request bodies: an unknown value must be refused, not stored.
ENUM_FIELDS = {"kind", "scope", "role", "status", "format", "profile", "type", "budget"}
TOO_BIG = 2**70  # beyond any 64-bit column


def _view_class(route: Route) -> Any:
    callback = route.pattern.callback
    return getattr(callback, "cls", None) or getattr(callback, "view_class", None)


def _body_routes() -> list[tuple[str, str]]:
    """Writes that take a body. Actions without one (end a session, revoke a token, enqueue,
    refresh a model) never read the body, so there is nothing to malform: they ignore it."""
    return [
        (key, method)
        for key, method in CELLS
        if method in ("POST", "PUT", "PATCH")
        and ROUTES[key][method].body is not None
        and face_of(next(r for r in ROUTE_LIST if r.key == key)) == "api"
    ]


BODY_CELLS = _body_routes()


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def _map_values(value: Any, change: Callable[[str, Any], Any], key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _map_values(v, change, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_values(v, change, key) for v in value]
    return change(key, value)


def _filled(rule: Rule, values: dict[str, str]) -> Any:
    return _map_values(rule.body, lambda _k, v: v.format(**values) if isinstance(v, str) else v)


def _variant(body: Any, change: Callable[[str, Any], Any]) -> bytes | None:
    """The body with `change` applied to each leaf; None when it changed nothing."""
    if not isinstance(body, dict | list):
        return None
    changed = _map_values(body, change)
    return None if changed == body else json.dumps(changed).encode()


def malformed(route: Route, rule: Rule, values: dict[str, str]) -> dict[str, tuple[bytes, str]]:
    """class name → (body, content type), the classes that apply to this route."""
    view = _view_class(route)
    limit = getattr(view, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES
    body = _filled(rule, values)
    cases: dict[str, tuple[bytes, str]] = {
        "broken JSON": (b'{"content": "the CI runs on', "application/json"),
        "invalid UTF-8": (b'{"content": "caf\xe9 \xff\xfe"}', "application/json"),
        "wrong content type": (b"<memory>x</memory>", "application/xml"),
        "JSON nested 3000 deep": (json.dumps(_nested(3000)).encode(), "application/json"),
        "a bare number beyond 64 bits": (str(TOO_BIG).encode(), "application/json"),
        "oversized body": (b" " * (limit + 1), "application/json"),
    }
    if any(issubclass(p, NdjsonParser) for p in getattr(view, "parser_classes", [])):
        cases["broken NDJSON"] = (
            b'{"type": "user", "content": "x"}\n{"type": ',
            NdjsonParser.media_type,
        )
    variants = {
        "numbers beyond 64 bits": lambda k, v: (
            TOO_BIG if isinstance(v, int) and not isinstance(v, bool) else v
        ),
        "unknown enum values": lambda k, v: (
            "no-such-value" if k in ENUM_FIELDS and isinstance(v, str) else v
        ),
        "NUL bytes in strings": lambda k, v: v + "\x00" if isinstance(v, str) else v,
    }
    if rule.fmt == "json":
        for name, change in variants.items():
            data = _variant(body, change)
            if data is not None:
                cases[name] = (data, "application/json")
    return cases


_COUNT_ALL: str | None = None


def row_counts() -> list[int]:
    """Rows of every table of ours, in one statement."""
    global _COUNT_ALL
    if _COUNT_ALL is None:
        tables = sorted(
            m._meta.db_table
            for m in apps.get_models(include_auto_created=True)
            if m._meta.managed and not m._meta.proxy
        )
        quote = connection.ops.quote_name
        _COUNT_ALL = " UNION ALL ".join(
            f"SELECT {n}, count(*) FROM {quote(t)}" for n, t in enumerate(tables)
        )
    with connection.cursor() as cursor:
        cursor.execute(_COUNT_ALL)
        return [count for _, count in sorted(cursor.fetchall())]


def send_counted(
    client: Client, method: str, url: str, data: bytes, content_type: str
) -> tuple[Any, bool]:
    """One request in a savepoint that is rolled back: its answer, and whether it added or
    removed rows anywhere."""
    cache.clear()  # throttling must not be what refuses the request
    sid = transaction.savepoint_create()
    try:
        before = row_counts()
        response = client.generic(method, url, data=data, content_type=content_type)
        return response, row_counts() != before
    finally:
        transaction.savepoint_rollback(sid)


def _error_shape(response: Any, hindsight: bool) -> str | None:
    """What is wrong with the error body, or None."""
    if not response["Content-Type"].startswith("application/json"):
        return f"content type {response['Content-Type']}"
    body = json.loads(response.content)
    if hindsight:
        return None if isinstance(body, dict) and "detail" in body else f"no detail: {body}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not error.get("code") or not error.get("message"):
        return f"not our envelope: {body}"
    return None


def _cell(key: str, method: str, in_world: World) -> tuple[Any, Any, str]:
    """A matrix cell's route, its rule for `method`, and its URL in `in_world`."""
    route = next(r for r in ROUTE_LIST if r.key == key)
    rule = ROUTES[key][method]
    return route, rule, url_of(route, rule, in_world.values)


@pytest.mark.parametrize(("key", "method"), BODY_CELLS, ids=[f"{m} {k}" for k, m in BODY_CELLS])
def test_malformed_bodies_answer_4xx_and_write_nothing(
    key: str,
    method: str,
    world: World,  # noqa: F811 - the imported fixture
    db: None,
) -> None:
    route, rule, url = _cell(key, method, world)
    client: Client = world.api["owner"]
    if key == "project-restore":  # restores are for server administrators (rolled back)
        User.objects.filter(username="alice").update(is_staff=True)
    hindsight = key.startswith("hindsight-")
    wrong: list[str] = []
    for name, (data, content_type) in malformed(route, rule, world.values).items():
        response, wrote = send_counted(client, method, url, data, content_type)
        status = response.status_code
        if not 400 <= status < 500 or status in (401, 403, 404, 405):
            wrong.append(f"{name}: {status} {response.content[:200]!r}")
            continue
        if problem := _error_shape(response, hindsight):
            wrong.append(f"{name}: {status} {problem}")
        if wrote:
            wrong.append(f"{name}: {status} but rows were written")
    assert wrong == [], f"{method} {key}:\n" + "\n".join(wrong)


# Sign-in and sign-out are Django's own views; the language switch takes any value it knows.
WEB_EXEMPT = {"web:login", "web:logout", "set_language"}
WEB_CELLS = [
    (key, method)
    for key, method in CELLS
    if method == "POST"
    and key not in WEB_EXEMPT
    and face_of(next(r for r in ROUTE_LIST if r.key == key)) == "web"
]


@pytest.mark.parametrize(("key", "method"), WEB_CELLS, ids=[f"{m} {k}" for k, m in WEB_CELLS])
def test_malformed_form_posts_never_fail_with_5xx(
    key: str,
    method: str,
    world: World,  # noqa: F811 - the imported fixture
    db: None,
) -> None:
    route, rule, url = _cell(key, method, world)
    client: Client = world.web["owner"]
    fields = list(_filled(rule, world.values) or {}) or ["reason", "content", "name"]
    cases = {
        "NUL bytes in every field": (
            "&".join(f"{f}=%00x" for f in fields).encode(),
            "application/x-www-form-urlencoded",
        ),
        "broken multipart": (
            b'--xx\r\nContent-Disposition: form-data; name="a"\r\n\r\nb',
            "multipart/form-data; boundary=xx",
        ),
        "JSON body": (b'{"content": ', "application/json"),
    }
    wrong: list[str] = []
    for name, (data, content_type) in cases.items():
        client.cookies = SimpleCookie(world.cookies["owner"])
        response, wrote = send_counted(client, method, url, data, content_type)
        if response.status_code >= 500:
            wrong.append(f"{name}: {response.status_code}")
        elif response.status_code >= 400 and wrote:
            wrong.append(f"{name}: {response.status_code} but rows were written")
    assert wrong == [], f"{method} {key}:\n" + "\n".join(wrong)
