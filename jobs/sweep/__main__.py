"""``python -m jobs.sweep CONFIG.yaml``: the sweep driver's command line (``ray job submit`` runs this).

The signal handlers go in before the driver (and torch) is imported, so SIGINT and SIGTERM during start-up stop
as cleanly as later ones (``jobs/sweep/signals.py``)."""
import sys

from jobs.sweep.signals import run_main


def _driver_main():
    """The driver's ``main``, imported only now that the handlers are in."""
    from jobs.sweep.command import main  # heavy: torch

    return main


sys.exit(run_main(_driver_main))
