"""Guards: each rule of the bank lives in one place. They read memoryhub/'s source and fail
when a second spelling of a rule appears, naming the file and line."""

from __future__ import annotations

import ast
import re
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


_FILE_MODELS = {"RecallFile", "InstructionFile"}


def _mentions(tree: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(tree))


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
        # Recall files and instruction files have a scope and an owner of their own.
        other_models = {
            id(call)
            for func in ast.walk(tree)
            if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
            and _mentions(func, _FILE_MODELS)
            for call in ast.walk(func)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _callee(node) not in _FILTERS:
                continue
            if id(node) in other_models and not _mentions(node, {"Memory", "MemoryTerm"}):
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


# --- one write path to the bank ---------------------------------------------------------------

_BANK_MODELS = {"Memory", "MemoryEvent", "MemoryTerm"}
_WRITES = {"update", "delete", "bulk_create", "bulk_update", "create", "get_or_create"}
_WRITES |= {"update_or_create", "save"}


def _root_name(node: ast.expr) -> str:
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else ""


# Names that hold memories or their events by convention (memory, memories, old_memory,
# memory_event, …), whatever they were assigned from.
_BANK_VARIABLE = re.compile(r"^(?:\w+_)?(?:memory|memories|memory_events?)$")
_BANK_TYPE = re.compile(r"\bMemory(?:Event)?\b")


def _bank_annotation(node: ast.expr | None) -> bool:
    """`Memory`, `MemoryEvent`, `QuerySet[Memory]`, `list[Memory]`, `"Memory | None"`, …"""
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id in {"Memory", "MemoryEvent"})
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and _BANK_TYPE.search(n.value))
        for n in ast.walk(node)
    )


def _bindings(node: ast.AST) -> tuple[list[ast.expr], ast.expr | None]:
    """The targets a statement binds and the expression it binds them from."""
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AnnAssign | ast.NamedExpr):
        return [node.target], node.value
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [node.target], node.iter
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars], node.context_expr
    return [], None


def bank_variables(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names in the function that hold Memory/MemoryEvent instances or querysets: parameters
    and annotated names of a bank type, names assigned (or looped) from Memory.objects…,
    MemoryEvent(…) or another such name, and names that say so (memory, memories, …)."""
    args = function.args
    held = {
        arg.arg
        for arg in args.posonlyargs + args.args + args.kwonlyargs
        if _bank_annotation(arg.annotation) or _BANK_VARIABLE.match(arg.arg)
    }
    nodes = list(ast.walk(function))
    grown = True
    while grown:  # until no assignment adds a name (a = Memory…; b = a.filter(…); …)
        grown = False
        for node in nodes:
            targets, value = _bindings(node)
            from_bank = value is not None and _root_name(value) in _BANK_MODELS | held
            if isinstance(node, ast.AnnAssign) and _bank_annotation(node.annotation):
                from_bank = True
            for target in targets:
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    if name not in held and (from_bank or _BANK_VARIABLE.match(name)):
                        held.add(name)
                        grown = True
    return held


def _bank_writes(rel: str, tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "MemoryEvent":
            yield f"{rel}:{node.lineno} MemoryEvent(…)"
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in _WRITES
            and _root_name(func.value) in _BANK_MODELS
        ):
            yield f"{rel}:{node.lineno} {_root_name(func.value)}….{func.attr}()"
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        held = bank_variables(function)
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _WRITES
                and _root_name(node.func.value) in held
            ):
                yield f"{rel}:{node.lineno} {_root_name(node.func.value)}….{node.func.attr}()"


def bank_writes_outside_services(root: Path = ROOT) -> list[str]:
    found: set[str] = set()
    for rel, tree in _modules(root):
        if rel != "memoryhub/memories/services.py":
            found.update(_bank_writes(rel, tree))
    return sorted(found)


def test_only_memories_services_writes_memories_and_their_events() -> None:
    offenders = bank_writes_outside_services()
    assert offenders == [], (
        "Write memories and memory events through memoryhub.memories.services:\n"
        + "\n".join(offenders)
    )


def test_the_write_guard_sees_direct_writes() -> None:
    sample = (
        "Memory.objects.filter(pk=1).update(updated_at=now)\n"
        "MemoryEvent.objects.bulk_create([MemoryEvent(verb='x')])\n"
        "Memory.objects.filter(project=p).delete()\n"
    )
    assert len(list(_bank_writes("sample.py", ast.parse(sample)))) == 4


def test_the_write_guard_sees_writes_through_variables() -> None:
    """Instances and querysets held in variables: the spellings issue 9 found the guard blind to."""
    sample = """
def annotated(target: Memory, rows: QuerySet[Memory], maybe: "Memory | None") -> None:
    target.save(update_fields=["status"])
    rows.update(status="stale")
    maybe.delete()

def assigned(project, selectors) -> None:
    qs = Memory.objects.filter(project=project)
    active = qs.exclude(status="archived")
    active.update(importance=1)
    for row in active:
        row.save()
    found = selectors.memory_get(project=project)
    memory = found
    memory.delete()
    event = memory.events.first()
    event.delete()
    pending: list[MemoryEvent] = []
    pending[0].save()
    old_memories = [m for m in selectors.memory_list(project=project)]
    old_memories[0].save()

def innocent(counts: dict[str, int], found: set[int]) -> None:
    counts.update(a=1)
    found.update({1})
    settings = {}
    settings.update(x=1)
"""
    hits = _bank_writes("s.py", ast.parse(sample))
    lines = sorted(int(hit.split(":")[1].split()[0]) for hit in hits)
    assert lines == [3, 4, 5, 10, 12, 15, 17, 19, 21]


# --- one "seen since the last compaction" rule, one seen-set write ----------------------------

_SEEN_MODELS = {"RecallSeen", "RecallSurfaced"}


def seen_rules_outside_recall(root: Path = ROOT) -> list[str]:
    found = []
    for rel, tree in _modules(root):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if (
                rel != "memoryhub/recall/services.py"
                and node.func.attr == "bulk_create"
                and _root_name(node.func.value) in _SEEN_MODELS
            ):
                found.append(f"{rel}:{node.lineno} seen-set write")
            if (
                rel != "memoryhub/recall/selectors.py"
                and _mentions(tree, _SEEN_MODELS)
                and any(
                    isinstance(kw.value, ast.Constant)
                    and kw.value.value == "compact_boundary"
                    or (isinstance(kw.value, ast.Name) and kw.value.id == "COMPACT_BOUNDARY")
                    for kw in node.keywords
                )
            ):
                found.append(f"{rel}:{node.lineno} seen-since-compaction read")
    return found


def test_one_seen_selector_and_one_seen_upsert() -> None:
    offenders = seen_rules_outside_recall()
    assert offenders == [], (
        "Read what a session has seen with recall.selectors.seen_memory_ids (or seen_sql inside "
        "one statement) and write it with "
        "recall.services.recall_seen_mark:\n" + "\n".join(offenders)
    )
