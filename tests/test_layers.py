"""Structural tests: the import graph of ``src/topocoll`` has no cycle, each layer imports
only the layers below it (docs/architecture.md), no module imports another module's
private names, and every ``__all__`` name exists."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import topocoll

SRC = Path(topocoll.__file__).parent
PKG = "topocoll"

_BASE = {"errors", "units", "kv", "numeric", "digest", "lazy", "procs"}
_MODEL = _BASE | {"topology", "collective", "schedule"}
# layer -> topocoll layers it may import (itself always allowed); None: anything
ALLOWED: dict[str, set[str] | None] = {
    "errors": set(),
    "units": {"errors"},
    "kv": {"errors"},
    "numeric": set(),
    "digest": set(),
    "lazy": set(),
    "procs": set(),
    "topology": _BASE,
    "collective": _BASE,
    "schedule": _BASE | {"collective"},
    "optimum": _MODEL,
    "cost": _MODEL | {"optimum"},
    "synth": _MODEL | {"optimum", "cost"},
    "verification": _MODEL,
    "selection": _MODEL | {"optimum", "cost", "synth", "verification"},
    "sim": _MODEL | {"optimum", "cost"},
    "report": _BASE | {"selection", "cost"},
    "runtime": _MODEL,
    "export": _MODEL | {"verification"},
    "testbed": _MODEL | {"optimum", "cost", "sim", "synth", "selection", "verification",
                         "runtime"},
    "workload": _MODEL | {"optimum", "cost", "synth", "verification", "selection", "sim"},
    "fabric": _MODEL | {"optimum", "cost", "synth", "verification", "selection", "sim",
                        "workload"},
    "sweep": _BASE | {"topology"},    # topology.io's strict YAML reader
    "studies": _MODEL | {"optimum", "cost", "synth", "verification", "selection", "sim",
                         "workload", "fabric", "testbed"},
    "cli": None,
    "__main__": None,    # python -m topocoll: the command line
}
#: What each layer must never import, whatever the table above allows (the issue's
#: promises, stated once more so that widening ALLOWED cannot break them silently).
NEVER = {"topology": {"schedule", "optimum", "synth", "selection", "cost", "sim"},
         "schedule": {"topology", "optimum", "synth", "selection", "cost", "sim"},
         "synth": {"selection", "verification", "sim"},
         "sim": {"synth", "selection"}}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for f in SRC.rglob("*.py"):
        parts = list(f.relative_to(SRC.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return out


MODULES = _modules()


def _under_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, typing_too: bool = False):
    """Every import statement, in functions too, except under ``if TYPE_CHECKING`` (with
    ``typing_too``, those as well)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _under_type_checking(node) and not typing_too:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, is_pkg: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = name.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _known(target: str) -> str | None:
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _edges(name: str, typing_too: bool = False) -> list[tuple[str, str, int]]:
    """``(imported module, imported name or '', line)`` of module ``name``."""
    path, is_pkg = MODULES[name]
    out = []
    for node in _import_nodes(ast.parse(path.read_text()), typing_too):
        if isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names if a.name.startswith(PKG)]
            continue
        base = _resolve(name, is_pkg, node.level, node.module)
        if not base.startswith(PKG):
            continue
        for a in node.names:
            full = f"{base}.{a.name}"
            out.append((full, "", node.lineno) if full in MODULES else
                       (base, a.name, node.lineno))
    return out


GRAPH = {m: {k for t, _, _ in _edges(m) if (k := _known(t)) and k != m} for m in MODULES}
#: The same with the imports under ``if TYPE_CHECKING``: no circle even for the type
#: checker (topology.core <-> topology.routing was one; routing now reads a Protocol).
TYPED_GRAPH = {m: {k for t, _, _ in _edges(m, True) if (k := _known(t)) and k != m}
               for m in MODULES}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("graph", [GRAPH, TYPED_GRAPH], ids=["runtime", "with-typing"])
def test_import_graph_has_no_cycle(graph):
    _no_cycle(graph)


def _no_cycle(graph) -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:          # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    import sys
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_cycle():
    bad = {**GRAPH, "topocoll.a": {"topocoll.b"}, "topocoll.b": {"topocoll.a"}}
    with pytest.raises(AssertionError, match="topocoll.a <-> topocoll.b"):
        _no_cycle(bad)


def test_typing_imports_count_for_cycles():
    """An import under ``if TYPE_CHECKING`` is an edge of the typed graph only."""
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n")
    assert [n for n in _import_nodes(tree) if isinstance(n, ast.Import)] == []
    assert len([n for n in _import_nodes(tree, True) if isinstance(n, ast.Import)]) == 1


LAYER_FILES = sorted(m for m in MODULES if m != PKG)


@pytest.mark.parametrize("module", LAYER_FILES)
def test_layer_imports(module):
    layer = _layer(module)
    assert layer in ALLOWED, f"{layer} is not a known layer; add it to docs/architecture.md"
    imported = {_layer(k) for k in GRAPH[module]} - {layer, ""}
    assert "cli" not in imported or ALLOWED[layer] is None, f"{module} imports the cli"
    bad = imported & NEVER.get(layer, set())
    assert not bad, f"{module} ({layer}) imports {sorted(bad)}, which it must never import"
    allowed = ALLOWED[layer]
    if allowed is not None:
        bad = imported - allowed
        assert not bad, f"{module} ({layer}) imports {sorted(bad)}"


@pytest.mark.parametrize("module", LAYER_FILES)
def test_no_private_imports_across_modules(module):
    for target, name, line in _edges(module):
        if name.startswith("_") and not name.startswith("__") and _known(target) != module:
            pytest.fail(f"{module}:{line} imports private {name!r} from {target}")


def test_every_public_name_exists():
    for mod in pkgutil.walk_packages(topocoll.__path__, "topocoll."):
        if mod.name.endswith("__main__"):
            continue
        m = importlib.import_module(mod.name)
        for name in getattr(m, "__all__", []):
            assert hasattr(m, name), f"{mod.name}.__all__ lists missing name {name!r}"


def test_every_public_function_is_listed():
    """``__all__`` is complete: every public function and class defined in a module is in
    it (helpers that are not part of the API start with an underscore)."""
    missing = []
    for mod in pkgutil.walk_packages(topocoll.__path__, "topocoll."):
        if mod.name.endswith("__main__"):
            continue
        m = importlib.import_module(mod.name)
        listed = set(getattr(m, "__all__", ()))
        for name, obj in vars(m).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.name:
                continue
            if (callable(obj) or isinstance(obj, type)) and name not in listed:
                missing.append(f"{mod.name}.{name}")
    assert not missing, "not in __all__: " + ", ".join(sorted(missing))
