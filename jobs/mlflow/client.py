"""Opening the MLflow tracking store of a sweep or a report.

Rules:
- The store is checked reachable (one cheap query) before any model loads; an http(s) server
  that does not answer fails within seconds (no retries, 10 s timeout), as one line.
- A local sqlite store is created (and its schema migrated) by one process at a time, under the
  shared-cache lock of its path (``actors/loading/shared_cache.py``): two sweeps starting beside each other
  on a new ``mlflow.db`` would otherwise both create its tables.
- No message shows credentials (``redact``), and MLflow's own "View run at" lines are
  switched off (they would print ``user:token@``); specsweep prints a masked address instead.
"""
from __future__ import annotations

import logging
import os
from contextlib import nullcontext
from pathlib import Path

from actors.loading.shared_cache import exclusive
from jobs.mlflow.runs import first_line
from jobs.redact import redact
from policies.errors import SpecsweepError


def client_for(uri: str):
    """An MlflowClient on ``uri``, checked reachable; SpecsweepError (one line, masked) when it is not."""

    logging.getLogger("mlflow").setLevel(logging.ERROR)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")   # an unreachable server fails in seconds
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"   # its "View run at" line shows user:token@
    import mlflow  # heavy: mlflow
    from mlflow.tracking import MlflowClient  # heavy: mlflow

    mlflow.set_tracking_uri(uri)
    try:
        with _store_lock(uri):
            client = MlflowClient(tracking_uri=uri)
            client.search_experiments(max_results=1)     # creates and migrates a new sqlite store
    except Exception as e:
        raise SpecsweepError(f"cannot reach the MLflow tracking URI {redact(uri)!r} ({first_line(e)}); "
                             "default is sqlite:///mlflow.db") from None
    return client


def _store_lock(uri: str):
    """The lock a local sqlite store is created under; a no-op for servers and other stores."""
    if not uri.lower().startswith("sqlite:///"):
        return nullcontext()
    path = Path(uri[len("sqlite:///"):]).expanduser().resolve()
    return exclusive(f"mlflow-{path}", f"the MLflow store {path}")
