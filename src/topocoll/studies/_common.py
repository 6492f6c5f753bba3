"""What every study's writer does: a JSON artifact and, where matplotlib is installed, a
headless pyplot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_json", "headless_pyplot"]


def write_json(path: Path, data: Any) -> Path:
    """``data`` as sorted, indented JSON with a final newline (byte-stable artifacts)."""
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def headless_pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or None without the plot extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:   # pragma: no cover - the plot extra
        return None
    return plt
