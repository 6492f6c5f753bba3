"""Commands that can run for seconds show progress on stderr when it is a terminal, and
nothing extra with --json (issue 28)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys

import pytest

COMMANDS = [
    ["compare", "-t", "ring:8", "-c", "allreduce", "-s", "1MiB", "--no-cache"],
    ["train", "-m", "gpt3-175b", "-t", "dgx-a100:8", "-p", "tp=8,pp=8", "-a", "ring",
     "--no-cache"],
    ["study", "validation", "--rows", "1"],
]


def _run(args: list[str], tmp_path) -> tuple[int, str, str]:
    """Run topocoll with stderr on a pseudo-terminal; (exit code, stdout, what the
    terminal saw)."""
    master, slave = pty.openpty()
    env = {**os.environ, "TOPOCOLL_CACHE": str(tmp_path / "cache"), "COLUMNS": "100"}
    p = subprocess.Popen([sys.executable, "-m", "topocoll", *args], stdout=subprocess.PIPE,
                         stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    seen = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    out = p.stdout.read().decode()
    p.wait()
    os.close(master)
    return p.returncode, out, seen.decode(errors="replace")


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_progress_on_a_terminal_and_none_with_json(args, tmp_path):
    if args[0] == "study":
        args = [*args, "-o", str(tmp_path / "out")]
    code, _, tty = _run(args, tmp_path)
    assert code == 0, tty
    assert "\x1b[" in tty, "no progress drawn on the terminal"      # rich's live display
    code, out, tty = _run([*args, "--json"], tmp_path)
    assert code == 0, tty
    json.loads(out)
    assert tty.strip() == "", f"--json drew on the terminal: {tty!r}"
