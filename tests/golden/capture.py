"""Re-capture ``golden.json`` from the current code: ``python tests/golden/capture.py``.

Only run it when a number changes on purpose; say why in the commit.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from cases import CASES  # noqa: E402


def run_case(commands: list[list[str]]) -> list[object]:
    """Run a case's commands with ``--json`` in one temporary directory; their outputs."""
    from typer.testing import CliRunner

    from topocoll.cli import app

    runner = CliRunner()
    outs = []
    with tempfile.TemporaryDirectory() as tmp:
        for argv in commands:
            args = [a.replace("{tmp}", tmp) for a in argv] + ["--json"]
            res = runner.invoke(app, args, catch_exceptions=False)
            if res.exit_code != 0:
                raise RuntimeError(f"{args} exited {res.exit_code}: {res.output}")
            text = res.stdout.replace(tmp, "{tmp}")
            outs.append(json.loads(text))
    return outs


def main() -> None:
    names = sys.argv[1:] or list(CASES)
    path = HERE / "golden.json"
    golden = json.loads(path.read_text()) if path.exists() else {}
    for name in names:
        print(name, flush=True)
        golden[name] = run_case(CASES[name])
    path.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
