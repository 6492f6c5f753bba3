"""The ``topocoll`` command line: one module per command group, the only code that prints.

Every command takes ``--json`` for machine-readable output. Library errors are printed as
one line on stderr and exit with status 2; ``verify`` exits with status 1 when the
schedule has violations.
"""

from . import (
    bound,
    compare,
    demo,
    design,
    dlcp,
    export,
    importer,
    libra,
    listing,
    schedules,
    simulate,
    study,
    sweep,
    testbed,
    topology,
    topoopt,
    train,
)
from .app import app

__all__ = ["app", "main", "bound", "compare", "demo", "export", "listing", "schedules", "simulate",
           "study", "testbed", "topology", "train", "libra", "sweep", "topoopt", "dlcp",
           "importer", "design"]


def main() -> None:
    """Console-script entry point. SIGTERM (``timeout``, a scheduler's kill) ends the
    command as SIGINT does: by an exception, so every ``finally`` runs (the testbed takes
    down its namespaces and delay line) before the process exits with 128 + 15."""
    import signal

    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)    # clean-up is not interrupted
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    app(prog_name="topocoll")
