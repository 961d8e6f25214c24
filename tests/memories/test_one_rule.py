"""Guards: each rule of the bank lives in one place. They read memoryhub/'s source and fail
when a second spelling of a rule appears, naming the file and line."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memoryhub

ROOT = Path(memoryhub.__file__).parent


def _modules(root: Path = ROOT) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        rel = path.relative_to(root.parent).as_posix()
        yield rel, ast.parse(path.read_text(), filename=rel)


def _imports_memory(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "memoryhub.memories.models"
        and any(alias.name in ("Memory", "MemoryTerm") for alias in node.names)
        for node in ast.walk(tree)
    )


# Lookups that decide which memories a person may see.
_VISIBILITY_FIELDS = {"scope", "owner", "owner_id"}


def _visibility_lookup(keyword: str, memory_module: bool) -> bool:
    parts = keyword.split("__")
    if parts[0] == "memory" and len(parts) > 1:
        return parts[1] in _VISIBILITY_FIELDS
    return memory_module and parts[0] in _VISIBILITY_FIELDS


# Calls that filter a queryset (q: the local Q-with-prefix helpers some modules had).
_FILTERS = {"filter", "exclude", "get", "Q", "q"}


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def visibility_filters_outside_selectors(root: Path = ROOT) -> list[str]:
    found = []
    for rel, tree in _modules(root):
        if rel == "memoryhub/memories/selectors.py":
            continue
        memory_module = _imports_memory(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _callee(node) not in _FILTERS:
                continue
            for keyword in node.keywords:
                if keyword.arg and _visibility_lookup(keyword.arg, memory_module):
                    found.append(f"{rel}:{node.lineno} {_callee(node)}({keyword.arg}=…)")
    return found


def test_it_filters_memories_by_scope_or_owner_only_in_memories_selectors() -> None:
    offenders = visibility_filters_outside_selectors()
    assert offenders == [], (
        "Filter memories through memoryhub.memories.selectors.memory_visible / "
        "memory_visible_q, not on your own:\n" + "\n".join(offenders)
    )


def test_the_guard_sees_a_second_spelling(tmp_path: Path) -> None:
    """The scanner flags the spellings the seven copies used (so the guard can fail)."""
    samples = [
        "from memoryhub.memories.models import Memory\n"
        "Memory.objects.filter(Q(scope='project') | Q(scope='user', owner=u))\n",
        "MemoryTerm.objects.filter(Q(memory__scope='project') | Q(memory__owner=u))\n",
    ]
    for sample in samples:
        tree = ast.parse(sample)
        memory_module = _imports_memory(tree)
        hits = [
            kw.arg
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            for kw in node.keywords
            if kw.arg and _visibility_lookup(kw.arg, memory_module)
        ]
        assert hits, sample
