"""The house's floors, held against every import in kafkalike/ (docs/architecture.md).

Every module is parsed with `ast` (nothing is imported or run), and every import
statement counts: at module level, inside functions and classes, and under
`if TYPE_CHECKING:`. Imports are judged per package (the folder right under kafkalike/;
the top-level module `kafkalike/properties.py` is a unit of its own). The rules:

- the floors import only what lies below them: protocol, records and metrics nothing
  of kafkalike, common only protocol, zkdata nothing above common;
- storage imports none of broker, controller, coordinator and client; the client none
  of the server's packages (broker, controller, coordinator, storage); the controller
  and the coordinator neither the broker that hosts them nor the client;
- no package imports the top (cli, lab, spark, dashboard) but the top itself;
- and no two packages reach each other through any chain of imports.

Imports made by name at run time (`importlib.import_module(f"...")`) are not seen; the
code uses them only to load a package's own modules.
"""
from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafkalike"

FLOORS = ("protocol", "records", "properties", "metrics", "common", "zkdata")
MIDDLE = ("storage", "controller", "coordinator", "broker", "client")
TOP = ("cli", "lab", "spark", "dashboard")

# The floors: exactly which other kafkalike units each may import.
MAY_IMPORT_ONLY: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    "records": frozenset(),
    "properties": frozenset(),
    "metrics": frozenset(),
    "common": frozenset({"protocol"}),
    "zkdata": frozenset({"protocol", "records", "common"}),
}
# Above the floors: what each must never import (and none of them the top, below).
MUST_NOT_IMPORT: dict[str, frozenset[str]] = {
    "storage": frozenset({"broker", "controller", "coordinator", "client"}),
    "client": frozenset({"broker", "controller", "coordinator", "storage"}),
    "controller": frozenset({"broker", "client"}),
    "coordinator": frozenset({"broker", "client"}),
    "broker": frozenset({"client"}),
}


def unit_of(module: str) -> str | None:
    """kafkalike.broker.handlers.produce -> broker; kafkalike.properties -> properties."""
    parts = module.split(".")
    if parts[0] != "kafkalike" or len(parts) < 2:
        return None
    return parts[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


Import = tuple[str, int, str]  # imported module (relative imports resolved), line, the statement


def imported_modules(module: str, source: str, is_package: bool = False) -> list[Import]:
    """Every import statement in the source, wherever it stands."""
    tree = ast.parse(source)
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno, f"import {alias.name}") for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            statement = " ".join(ast.unparse(node).split())
            if target == "kafkalike":  # from kafkalike import properties: the name is the unit
                found.extend((f"kafkalike.{alias.name}", node.lineno, statement) for alias in node.names)
            else:
                found.append((target, node.lineno, statement))
    return found


def violations(module: str, source: str, path: str = "<planted>", is_package: bool = False) -> list[str]:
    """One line per import that breaks the layering rules, naming module, line and import."""
    return judge(module, imported_modules(module, source, is_package), path)


def judge(module: str, imports: list[Import], path: str) -> list[str]:
    unit = unit_of(module)
    out = []
    for target, line, statement in imports:
        other = unit_of(target)
        if unit is None or other is None or other == unit:
            continue
        if unit in MAY_IMPORT_ONLY and other not in MAY_IMPORT_ONLY[unit]:
            rule = f"{unit} may import only: {', '.join(sorted(MAY_IMPORT_ONLY[unit])) or 'nothing of kafkalike'}"
        elif unit in MUST_NOT_IMPORT and other in MUST_NOT_IMPORT[unit]:
            rule = f"{unit} must not import {other}"
        elif unit not in TOP and other in TOP:
            rule = f"{other} is on the top floor, above {unit}"
        else:
            continue
        out.append(f"{path}:{line}: {module} imports {target} `{statement}` ({rule})")
    return out


@functools.lru_cache(maxsize=None)
def house() -> tuple[tuple[str, str, list[Import]], ...]:
    """(module, path, its imports) for every module under kafkalike/, parsed once per run."""
    out = []
    for p in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" not in p.parts:
            module = module_name(p)
            out.append((module, str(p.relative_to(ROOT)),
                        imported_modules(module, p.read_text(), p.name == "__init__.py")))
    return tuple(out)


def package_edges() -> dict[tuple[str, str], tuple[str, str, int]]:
    """(unit, imported unit) -> one import that makes the arrow (module, imported module, line)."""
    edges: dict[tuple[str, str], tuple[str, str, int]] = {}
    for module, _path, imports in house():
        unit = unit_of(module)
        for target, line, _statement in imports:
            other = unit_of(target)
            if unit and other and other != unit:
                edges.setdefault((unit, other), (module, target, line))
    return edges


def cycles(edges) -> list[list[str]]:
    """Every strongly connected set of more than one unit, as a closed path through it."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_closed_path(graph, set(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _closed_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A path from the component's first unit back to itself, within the component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return sorted(component)


def describe_cycle(path: list[str], edges) -> str:
    steps = []
    for a, b in zip(path, path[1:]):
        module, target, line = edges[(a, b)]
        steps.append(f"{a} -> {b} ({module} imports {target}, line {line})")
    return "; ".join(steps)


# -- the house as it stands ------------------------------------------------------------


def test_every_package_has_its_place_on_a_floor():
    units = {unit_of(module) for module, _, _ in house()} - {None}
    unplaced = sorted(units - set(FLOORS) - set(MIDDLE) - set(TOP))
    assert not unplaced, f"packages without a floor in {__name__}: {unplaced} (place them, and in docs/architecture.md)"


def test_no_import_runs_up_or_sideways():
    found = []
    for module, path, imports in house():
        found += judge(module, imports, path)
    assert not found, "imports against the floors' rules:\n" + "\n".join(found)


def test_no_two_packages_import_each_other():
    edges = package_edges()
    found = cycles(edges)
    assert not found, "package import cycles:\n" + "\n".join(describe_cycle(c, edges) for c in found)


def test_the_producer_and_the_consumer_load_no_admin_client():
    code = ("import sys, kafkalike.client.producer, kafkalike.client.consumer; "
            "print(sorted(m for m in sys.modules if m.startswith('kafkalike.client.admin')))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


# -- the check itself catches what it is for -------------------------------------------


def test_a_planted_upward_import_inside_a_function_is_named():
    source = "import os\n\n\ndef f():\n    from kafkalike.broker.server import KafkaServer\n    return KafkaServer\n"
    assert violations("kafkalike.protocol.planted", source, "kafkalike/protocol/planted.py") == [
        "kafkalike/protocol/planted.py:5: kafkalike.protocol.planted imports kafkalike.broker.server "
        "`from kafkalike.broker.server import KafkaServer` (protocol may import only: nothing of kafkalike)"]


@pytest.mark.parametrize("module, source, rule", [
    ("kafkalike.common.planted", "from kafkalike.zkdata import KafkaZkClient\n", "common may import only: protocol"),
    ("kafkalike.records.planted", "import kafkalike.protocol.errors\n", "records may import only"),
    ("kafkalike.zkdata.planted", "from kafkalike.storage.log import Log\n", "zkdata may import only"),
    ("kafkalike.storage.planted", "from kafkalike.broker import partition\n", "storage must not import broker"),
    ("kafkalike.client.planted", "from kafkalike.storage.log import Log\n", "client must not import storage"),
    ("kafkalike.controller.planted", "from kafkalike import broker\n", "controller must not import broker"),
    ("kafkalike.broker.planted", "from kafkalike.cli.topics import main\n", "cli is on the top floor"),
    ("kafkalike.coordinator.planted", "from ..broker.server import KafkaServer\n", "coordinator must not import broker"),
])
def test_planted_violations_of_each_rule_are_caught(module, source, rule):
    (message,) = violations(module, source)
    assert module in message and rule in message


def test_allowed_imports_pass():
    assert violations("kafkalike.common.planted", "from kafkalike.protocol.api import encode_request\n") == []
    assert violations("kafkalike.broker.planted", "from kafkalike.common import outbound\n") == []
    assert violations("kafkalike.zkdata", "from .client import KafkaZkClient\n", is_package=True) == []


def test_a_planted_cycle_is_named_with_the_imports_that_close_it():
    edges = {("broker", "controller"): ("kafkalike.broker.server", "kafkalike.controller.controller", 3),
             ("controller", "broker"): ("kafkalike.controller.channel", "kafkalike.broker.outbound", 16),
             ("broker", "protocol"): ("kafkalike.broker.network", "kafkalike.protocol.api", 9)}
    (cycle,) = cycles(edges)
    assert describe_cycle(cycle, edges) == (
        "broker -> controller (kafkalike.broker.server imports kafkalike.controller.controller, line 3); "
        "controller -> broker (kafkalike.controller.channel imports kafkalike.broker.outbound, line 16)")
