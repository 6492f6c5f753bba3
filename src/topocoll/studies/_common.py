"""What every study's writer does: a JSON artifact and, where matplotlib is installed, a
headless pyplot and a figure saved without a clock or a version in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_json", "write_tables", "headless_pyplot", "save_figure"]


def write_json(path: Path, data: Any) -> Path:
    """``data`` as sorted, indented JSON with a final newline (byte-stable artifacts)."""
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def write_tables(directory: str | Path, stem: str, data: Any, markdown: str) -> list[Path]:
    """``stem.json`` (:func:`write_json`) and ``stem.md`` (``markdown``) in ``directory``,
    made if missing."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pm = d / f"{stem}.md"
    pj = write_json(d / f"{stem}.json", data)
    pm.write_text(markdown)
    return [pj, pm]


def headless_pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or None without the plot extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:   # pragma: no cover - the plot extra
        return None
    return plt


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Lay out ``fig``, write it to ``path`` as PNG without the Software tag (same bytes
    from every matplotlib build of the pin) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return path
