"""A refused plain command says what to fix: the error envelope's details (which field, what is
allowed) follow its code and message, one "field: message" a line, and the log keeps them."""

from __future__ import annotations

import pytest
from memoryhub_agent.http import DETAIL_LINES, describe_details

from memoryhub.memories.models import Memory
from projects.models import Project
from tests.agent_cli.conftest import Agent


def test_remember_with_an_unknown_kind_prints_the_details(
    alice_agent: Agent, project: Project
) -> None:
    result = alice_agent.run("remember", "Deploys go through make release.", "--kind", "banana")

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "memoryhub-agent remember: HTTP 400 validation_error: Invalid input."
    assert lines[1].startswith("  kind: Unknown kind 'banana'; use one of soul, user,")
    assert "rule" in lines[1]
    assert len(lines) == 2
    assert not Memory.objects.filter(project=project).exists()
    # The log keeps one line per event, details included.
    (logged,) = alice_agent.log_text().splitlines()
    assert "Invalid input. kind: Unknown kind 'banana'" in logged


def test_search_with_an_unknown_kind_names_the_allowed_ones(
    alice_agent: Agent, project: Project
) -> None:
    result = alice_agent.run("search", "deploy", "--kind", "banana")

    assert result.returncode == 1
    assert "\n  kind: Unknown value(s) banana; allowed: soul, user," in result.stderr


@pytest.mark.parametrize(
    ("details", "lines"),
    [
        (None, []),
        ({}, []),
        ({"kind": ["Unknown kind."]}, ["kind: Unknown kind."]),
        (
            {"items": {"0": {"kind": ["Unknown."]}, "1": {"content": ["Required.", "Blank."]}}},
            ["items.0.kind: Unknown.", "items.1.content: Required.", "items.1.content: Blank."],
        ),
        ({"non_field_errors": ["Say what to change."]}, ["Say what to change."]),
        ({"line": 12, "reason": "not JSON"}, ["line: 12", "reason: not JSON"]),
        ({"records": [{"seq": ["Duplicate."]}, {}]}, ["records.0.seq: Duplicate."]),
    ],
)
def test_details_become_field_lines(details: object, lines: list[str]) -> None:
    assert describe_details(details) == lines


def test_many_details_are_cut_short() -> None:
    details = {f"field{i}": [f"bad {i}"] for i in range(20)}
    lines = describe_details(details)
    assert len(lines) == DETAIL_LINES
    assert lines[-1] == f"… and {20 - DETAIL_LINES + 1} more"
    assert len(describe_details({"f": ["x" * 5000]})[0]) < 400
