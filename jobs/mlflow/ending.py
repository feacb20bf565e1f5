"""The end of a sweep in MLflow: the summary, the sweep run's tags, artifacts and tables, then every run's status.

Rules:
- Each step is attempted on its own: one refused call (an artifact store that rejects uploads, a server that
  times out once) never keeps the steps after it from running, and the statuses are set last, always.
- A table goes to ``tables/NAME.json`` in the layout of ``MlflowClient.log_table`` (pandas ``orient="split"``, no
  index, ISO dates) and is listed in the run's ``mlflow.loggedArtifacts`` tag (the UI shows it as a table), but the
  file is replaced, never appended to: a repeated summary leaves one copy of each row.
- Statuses: a policy run whose configs all completed is FINISHED (KILLED stays KILLED); the sweep run takes the
  sweep's status, FAILED instead of FINISHED when part of the end could not be logged.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pandas as pd

from jobs.mlflow.summary import log_summary

LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"      # MLflow's tag listing a run's table artifacts


def log_table_json(client, run_id: str, table: pd.DataFrame, artifact_file: str) -> None:
    """Write ``table`` as ``artifact_file`` (``log_table``'s JSON layout), replacing an older file of that name."""
    from mlflow.entities import RunTag  # heavy: mlflow

    folder, _, name = artifact_file.rpartition("/")
    with tempfile.TemporaryDirectory(prefix="specsweep-table-") as d:
        path = Path(d) / name
        table.to_json(path, orient="split", index=False, date_format="iso")
        client.log_artifact(run_id, str(path), artifact_path=folder or None)
    listed = json.loads(client.get_run(run_id).data.tags.get(LOGGED_ARTIFACTS, "[]"))
    entry = {"path": artifact_file, "type": "table"}
    if entry not in listed:
        client.log_batch(run_id, tags=[RunTag(LOGGED_ARTIFACTS, json.dumps(listed + [entry]))])


def log_end(tracker, summary, speed, failed_rows: int, artifacts, tables, table2=None) -> list[BaseException]:
    """Log the summary into the policy runs, the sweep run's tags, artifacts and tables; returns the errors met
    (each step runs whatever failed before it)."""
    from mlflow.entities import RunTag  # heavy: mlflow

    c, errors = tracker.client, []

    def attempt(fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except Exception as e:
            errors.append(e)

    if summary is not None and len(summary):
        attempt(log_summary, tracker, summary.reset_index(drop=True), speed, int(time.time() * 1000), table2)
    attempt(c.log_batch, tracker.parent, tags=[RunTag("configs", str(0 if summary is None else len(summary))),
                                               RunTag("failed_rows", str(failed_rows))])   # tags: no chart of their own
    for path in artifacts:
        attempt(c.log_artifact, tracker.parent, str(path))
    for name, table in (tables or {}).items():     # MLflow tables, viewable in the UI's artifact pane
        if table is not None and len(table):
            attempt(log_table_json, c, tracker.parent, table.reset_index(), f"tables/{name}.json")
    return errors


def set_statuses(tracker, status: str) -> None:
    """End every policy run (FINISHED when all its configs completed, else the sweep's status) and the sweep run."""
    c = tracker.client
    for key, run in tracker.runs.items():
        if run["id"] is None:
            continue
        done = all(tracker.complete(cf) for cf in tracker.configs.values() if cf.run == key)
        s = status if status == "KILLED" else ("FINISHED" if done or status == "FINISHED" else "FAILED")
        c.set_terminated(run["id"], status=s)
    c.set_terminated(tracker.parent, status=status)
