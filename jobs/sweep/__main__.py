"""``python -m jobs.sweep CONFIG.yaml``: the sweep driver's command line (``ray job submit`` runs this)."""
import sys

from jobs.sweep.driver import main

sys.exit(main())
