"""Structural tests: the layer rules of docs/architecture.md, and every __all__ name exists."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import topocoll

SRC = Path(topocoll.__file__).parent

# layer -> topocoll layers it may import (itself always allowed)
ALLOWED = {
    "errors": set(),
    "units": {"errors"},
    "topology": {"errors", "units"},
    "collective": {"errors"},
    "schedule": {"collective", "errors"},
    "synth": {"topology", "collective", "schedule", "errors", "units"},
    "verification": {"topology", "collective", "schedule", "errors"},
    "cost": {"topology", "collective", "schedule", "errors", "units"},
    "optimize": {"topology", "collective", "schedule", "synth", "cost", "verification", "errors",
                 "units"},
    "report": {"optimize", "cost", "units", "errors"},
    "sim": {"topology", "collective", "schedule", "errors", "units", "cost"},
    "studies": {"topology", "collective", "schedule", "synth", "cost", "verification",
                "optimize", "errors", "units"},
    "cli": None,   # may import anything; nothing imports it
    "runtime": {"schedule", "topology", "collective", "errors", "units"},
    "export": {"schedule", "topology", "collective", "errors", "units"},
    "testbed": {"topology", "collective", "schedule", "synth", "cost", "sim", "verification",
                "runtime", "errors", "units"},
}


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    layer_parts = path.relative_to(SRC).parts
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("topocoll."):
                found.add(node.module.split(".")[1])
            elif node.level > 0:
                depth = len(layer_parts) - node.level   # package parts left after going up
                if depth <= 0 and node.module:
                    found.add(node.module.split(".")[0])
                elif depth <= 0:
                    found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("topocoll."):
                    found.add(a.name.split(".")[1])
    return found


FILES = sorted(p for p in SRC.rglob("*.py") if p.name != "__init__.py" or p.parent != SRC)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_layer_imports(path):
    layer = _layer(path)
    assert layer in ALLOWED, f"{layer} is not a known layer; add it to docs/architecture.md"
    allowed = ALLOWED[layer]
    imported = _imports(path) - {layer}
    if allowed is None:
        return
    bad = imported - allowed
    assert not bad, f"{path.relative_to(SRC)} ({layer}) imports {sorted(bad)}"
    assert "cli" not in imported


def test_every_public_name_exists():
    for mod in pkgutil.walk_packages(topocoll.__path__, "topocoll."):
        if mod.name.endswith("__main__"):
            continue
        m = importlib.import_module(mod.name)
        for name in getattr(m, "__all__", []):
            assert hasattr(m, name), f"{mod.name}.__all__ lists missing name {name!r}"
