"""Every leaf command of the ``topocoll`` app, as word lists (``["sweep", "run"]``)."""

from __future__ import annotations


def leaf_commands() -> list[tuple[list[str], object]]:
    """``(words, click command)`` for every command that runs (groups walked through)."""
    import typer.main

    from topocoll.cli import app

    out = []

    def walk(c, path):
        subs = getattr(c, "commands", None)
        if subs:
            for n, s in subs.items():
                walk(s, [*path, n])
        else:
            out.append((path, c))

    walk(typer.main.get_command(app), [])
    return out
