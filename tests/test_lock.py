"""The pinned dependency set is what `make` installs (requirements.lock, pip -c)."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, ver = line.partition("==")
            assert ver, f"requirements.lock: {line!r} is not name==version"
            out[name.lower().replace("_", "-")] = ver
    return out


def test_makefile_installs_through_the_lock():
    text = (ROOT / "Makefile").read_text()
    assert "LOCK   := requirements.lock" in text
    assert text.count("-c $(LOCK)") == 2             # demo's and test's installs
    assert "\nlock:" in text                           # the documented refresh


def test_every_dependency_is_pinned():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [d for d in deps["dependencies"]]
    names += [d for ds in deps["optional-dependencies"].values() for d in ds]
    pins = _pins()
    for d in names:
        name = d.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower()
        assert name.replace("_", "-") in pins, f"{name} is not in requirements.lock"


@pytest.mark.skipif(Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
                    reason="only the project's own .venv is installed from the lock")
def test_the_venv_holds_the_pinned_versions():
    pins = _pins()
    wrong = []
    for dist in metadata.distributions():
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name in pins and dist.version != pins[name]:
            wrong.append(f"{name} {dist.version} (lock: {pins[name]})")
    assert not wrong, ", ".join(wrong)
