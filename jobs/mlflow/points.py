"""The per-γ detail of a policy run that is not charted: one JSON artifact, ``gamma_points.json``.

Rules:
- The chart view of MLflow draws one chart per metric key, so a policy run keeps as metrics only
  the curves a reader compares (``jobs/mlflow/summary.py``: ``CHARTED``, ``ACROSS_CHARTED`` and
  the ``accept_rate_pos_{i}`` keys). Everything else the summary holds per γ (``questions``,
  the interval bounds ``*_lo``/``*_hi``, ``noise_floor``, the per-group speedups
  ``speedup_<group>[_lo|_hi]``) and the remaining across-γ figures go into this artifact:
  ``{"per_gamma": [{"gamma": γ, key: value, ...}, ...], "across_gamma": {key: value}}``.
- The artifact is rewritten whole at every summary (a resume replaces it; metric histories are
  untouched). Values that are not finite numbers are written as null and read back as NaN.
- :func:`read_points` returns ``{}`` for a run without the artifact (a sweep still running).
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from jobs.mlflow.runs import finite

POINTS = "gamma_points.json"


def _num(v):
    return float(v) if finite(v) else None


def log_points(client, run_id: str, per_gamma: dict, across: dict) -> None:
    """Write ``gamma_points.json``: ``per_gamma`` γ → {key: value}, ``across`` key → value."""
    if not per_gamma and not across:
        return
    doc = {"per_gamma": [{"gamma": int(g), **{k: _num(v) for k, v in sorted(vals.items())}}
                         for g, vals in sorted(per_gamma.items())],
           "across_gamma": {k: _num(v) for k, v in sorted(across.items())}}
    client.log_dict(run_id, doc, POINTS)


def read_points(client, run_id: str) -> dict:
    """γ → {key: value} from a run's ``gamma_points.json`` (NaN where null); ``{}`` without it."""
    if POINTS not in {a.path for a in client.list_artifacts(run_id)}:
        return {}
    with tempfile.TemporaryDirectory(prefix="specsweep-points-") as d:
        doc = json.loads(Path(client.download_artifacts(run_id, POINTS, d)).read_text())
    return {int(row["gamma"]): {k: float("nan") if v is None else v for k, v in row.items() if k != "gamma"}
            for row in doc.get("per_gamma", [])}
