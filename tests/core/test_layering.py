"""The layering of README's Architecture section, as import-linter checks it in `make lint`."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def test_the_contracts_say_what_the_readme_says() -> None:
    contracts = _contracts()
    core = contracts["core-is-ground"]
    assert {"accounts", "projects", "memoryhub.memories", "memoryhub.recall"} <= set(
        core["forbidden_modules"]
    )
    assert contracts["recall-without-pipeline"]["forbidden_modules"] == ["memoryhub.pipeline"]
    assert contracts["app-layers"]["layers"] == [
        "(api) : (management)",
        "(services) : (selectors)",
        "(models)",
    ]


def test_the_code_keeps_every_contract() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--no-logo", "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert "0 broken" in result.stdout
