"""The client runs on a laptop's Python as it is: 3.9 or later. CI has one Python, so this is
the grammar check; the whole suite ran against a 3.9 install with MEMORYHUB_AGENT_CLI."""

from __future__ import annotations

import ast
import tomllib

from tests.agent_cli.conftest import CLIENT_SRC

SOURCES = sorted((CLIENT_SRC / "memoryhub_agent").glob("*.py"))


def test_the_client_parses_as_python_3_9() -> None:
    assert len(SOURCES) >= 5
    for path in SOURCES:
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 9))


def test_annotations_are_never_evaluated_so_newer_syntax_in_them_is_safe() -> None:
    modules = [p for p in SOURCES if p.name not in ("__init__.py", "__main__.py")]
    assert modules
    for path in modules:
        assert "from __future__ import annotations" in path.read_text(), path


def test_the_package_needs_nothing_but_the_standard_library() -> None:
    meta = tomllib.loads((CLIENT_SRC / "pyproject.toml").read_text())["project"]
    assert meta["requires-python"] == ">=3.9"
    assert meta["dependencies"] == []
    assert meta["scripts"] == {"memoryhub-agent": "memoryhub_agent.cli:main"}
