"""Reading one sweep back from MLflow (``specsweep report --experiment``).

Rules:
- The sweep read is the one whose output folder is ``output``, else the latest started; with
  more than one sweep in the experiment a line on stderr names the one read.
- Per-γ values are the latest point at each step of each policy run's metrics (a changed value
  is appended, so the latest wins), joined with that γ's row of the run's ``gamma_points.json``
  (intervals, ``questions``, per-group speedups; ``jobs/mlflow/points.py``); the
  ``positions/`` section's keys are read back as the summary's ``accept_rate_pos_{i}`` columns.
- When a config was measured both live and replayed, the rows come from the sweep's preferred
  mode (``live`` for a ``mode: both`` sweep, else ``replay``), the same choice the sweep's own
  summary makes; the other mode's run is not mixed in.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from jobs.dataset import GROUP_ORDER
from jobs.mlflow.client import client_for
from jobs.mlflow.points import read_points
from jobs.mlflow.runs import ACROSS_PREFIXES, POSITIONS, ROLE, SWEEP_KEY
from jobs.redact import redact
from jobs.report.agreement import mode_shown
from policies.errors import SpecsweepError


def _pick_sweep(client, exp_id: str, experiment: str, output: str | None):
    sweeps = client.search_runs([exp_id], filter_string=f"tags.`{ROLE}` = 'sweep'",
                                order_by=["attributes.start_time DESC"], max_results=1000)
    if output is not None:
        want = str(Path(output).resolve())
        chosen = [s for s in sweeps if s.data.tags.get("output") == want]
        if not chosen:
            outs = sorted({s.data.tags.get("output", "?") for s in sweeps})
            raise SpecsweepError(f"experiment {experiment!r} holds no sweep with output {want}; "
                                 f"outputs: {', '.join(outs) or 'none'}")
        sweeps = chosen
    if not sweeps:
        raise SpecsweepError(f"experiment {experiment!r} has no specsweep sweep runs")
    if len(sweeps) > 1:
        print(f"report: experiment {experiment!r} holds {len(sweeps)} sweeps; reading the latest, output "
              f"{sweeps[0].data.tags.get('output')} (choose with --output DIR)", file=sys.stderr)
    return sweeps[0]


def check_store_exists(uri: str) -> None:
    """Refuse to read a local SQLite store that is not there (opening it would create an empty ``mlflow.db``)."""
    if uri.lower().startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///"):])
        if str(path) not in ("", ":memory:") and not path.exists():
            raise SpecsweepError(f"no MLflow store at {path} (from --tracking-uri {redact(uri)}): pass the sweep's "
                                 "tracking_uri, or read its output folder with `specsweep report DIR`")


def read_experiment(experiment: str, uri: str, output: str | None = None):
    """(summary, speedups, fraction of oracle) of one sweep in ``experiment`` (see the module docstring)."""

    check_store_exists(uri)
    client = client_for(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = [e.name for e in client.search_experiments()]
        raise SpecsweepError(f"no MLflow experiment {experiment!r} at {redact(uri)}; "
                             f"experiments: {', '.join(names) or 'none'}")
    sweep = _pick_sweep(client, exp.experiment_id, experiment, output)
    prefer = mode_shown(sweep.data.tags.get("mode", "live"))
    runs = client.search_runs([exp.experiment_id], max_results=10000, filter_string=
                              f"tags.`{SWEEP_KEY}` = '{sweep.data.tags[SWEEP_KEY]}' and tags.`{ROLE}` = 'policy'")
    runs = sorted(runs, key=lambda r: r.data.tags.get("mode", "live") != prefer)   # preferred mode first
    rows, speed = [], []
    for r in runs:
        t = r.data.tags
        hist = {}
        for key in r.data.metrics:
            if key.startswith(ACROSS_PREFIXES):
                continue
            for m in sorted(client.get_metric_history(r.info.run_id, key), key=lambda m: m.timestamp):
                hist.setdefault(m.step, {})[key.removeprefix(POSITIONS)] = m.value
        detail = read_points(client, r.info.run_id) if hist else {}
        for step, vals in sorted(hist.items()):
            if "throughput" not in vals:
                continue
            base = {"pair": t["pair"], "policy": t["policy"], "policy_spec": t["policy_spec"],
                    "gamma": 0 if t["policy"] == "ar" else int(step)}
            vals = {**detail.get(base["gamma"], {}), **vals}
            rows.append({**base, **{k: v for k, v in vals.items() if not k.startswith("speedup_")}})
            if t["policy"] != "ar" and ("speedup" in vals or any(k.startswith("speedup_") for k in vals)):
                sp = {**base}
                for g in GROUP_ORDER:
                    name = "speedup" if g == "overall" else f"speedup_{g}"
                    for suffix in ("", "_lo", "_hi"):
                        if name + suffix in vals:
                            sp[g + suffix] = vals[name + suffix]
                    sp.setdefault(g, float("nan"))
                speed.append(sp)
            if t["policy"] == "ar":
                break
    if not rows:
        raise SpecsweepError(f"experiment {experiment!r}: the sweep into {sweep.data.tags.get('output')} has no "
                             "per-γ metrics yet")
    config = ["pair", "policy_spec", "gamma"]
    summary = pd.DataFrame(rows).drop_duplicates(config)
    speed = pd.DataFrame(speed).drop_duplicates(config) if speed else pd.DataFrame()
    orc = summary[summary["policy"] == "oracle"]
    frac = pd.DataFrame()
    if len(orc):
        best = orc.groupby("pair")["throughput"].mean()
        f = summary[~summary["policy"].isin(["oracle", "ar"])].copy()
        f["fraction_of_oracle"] = f["throughput"] / f["pair"].map(best)
        frac = f[["pair", "policy_spec", "gamma", "fraction_of_oracle"]]
    return summary, speed, frac
