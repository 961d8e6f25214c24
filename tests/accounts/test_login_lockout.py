"""Brute-force protection of the sign-in form (django-axes): after LOGIN_FAILURE_LIMIT wrong
passwords for one username from one address, that pair is locked out — even the right password
is refused — while other accounts, other addresses and the API's tokens carry on."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import User
from projects.models import Project

PASSWORD = "correct horse battery staple"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def limit_3(settings: Any) -> None:
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3


def sign_in(username: str, password: str, ip: str = "203.0.113.7") -> Any:
    return Client(REMOTE_ADDR=ip).post(
        reverse("web:login"), {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def signed_in(response: Any) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.client.session


@pytest.fixture
def alice_pw(alice: User) -> User:
    alice.set_password(PASSWORD)
    alice.save()
    return alice


def test_the_right_password_signs_in(alice_pw: User, limit_3: None) -> None:
    assert signed_in(sign_in("alice", PASSWORD))


def test_lockout_after_the_limit_even_with_the_right_password(
    alice_pw: User,
    bob: User,
    limit_3: None,
    project: Project,
    make_client: Callable[..., APIClient],
) -> None:
    for _ in range(2):
        failed = sign_in("alice", "wrong")
        assert failed.status_code == 200  # the form again, with its error
        assert not signed_in(failed)
    third = sign_in("alice", "wrong")
    assert third.status_code == 429
    locked = sign_in("alice", PASSWORD)
    assert locked.status_code == 429
    assert not signed_in(locked)
    assert "Too many failed sign-ins" in locked.content.decode()

    # Another address, or another account from the same address, is not locked out.
    assert signed_in(sign_in("alice", PASSWORD, ip="198.51.100.9"))
    bob.set_password(PASSWORD)
    bob.save()
    assert signed_in(sign_in("bob", PASSWORD))

    # Agent tokens never pass through the sign-in: alice's token still works from that address.
    api = make_client(alice_pw)
    me = api.get("/api/v1/me/", REMOTE_ADDR="203.0.113.7")
    assert me.status_code == 200
    assert me.json()["username"] == "alice"
    assert api.get("/api/v1/projects/alpha/memories/", REMOTE_ADDR="203.0.113.7").status_code == 200


def test_a_success_resets_the_count(alice_pw: User, limit_3: None) -> None:
    for _ in range(2):
        sign_in("alice", "wrong")
    assert signed_in(sign_in("alice", PASSWORD))
    for _ in range(2):
        assert sign_in("alice", "wrong").status_code == 200
    assert signed_in(sign_in("alice", PASSWORD))


def test_limit_zero_turns_it_off(alice_pw: User, settings: Any) -> None:
    settings.AXES_ENABLED = False
    for _ in range(10):
        assert sign_in("alice", "wrong").status_code == 200
    assert signed_in(sign_in("alice", PASSWORD))


def test_the_limit_comes_from_the_environment() -> None:
    probe = "import django; django.setup(); from django.conf import settings as s; " + (
        "print(s.AXES_ENABLED, s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME)"
    )
    env = os.environ | {"LOGIN_FAILURE_LIMIT": "7", "LOGIN_LOCKOUT_MINUTES": "30"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["True", "7", "0:30:00"], out.stderr
    env["LOGIN_FAILURE_LIMIT"] = "0"
    off = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert off.stdout.split()[0] == "False", off.stderr
