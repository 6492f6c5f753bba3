"""``python -m topocoll``: the command line (same as the ``topocoll`` script)."""

from .cli import main

main()
