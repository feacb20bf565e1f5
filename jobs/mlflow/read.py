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
  summary makes; the other mode's run is not mixed in, even where the preferred one has no time (untrusted).
- The fraction of oracle follows the log's report: the bound where replay computed it, else the ``oracle``
  policy, over the configs measured in that reference's mode (:func:`fractions`).
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
from jobs.report.metrics import ORACLES
from policies.errors import SpecsweepError
from policies.oracle import BOUND_NAME

FLAT = ("ar", BOUND_NAME)        # runs logged as a flat line over γ (``jobs/mlflow/summary.py``)


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
    shown = {(r.data.tags["pair"], r.data.tags["policy_spec"]) for r in runs
             if r.data.tags.get("mode", "live") == prefer}
    rows, speed = [], []
    for r in runs:
        t = r.data.tags
        if t.get("mode", "live") != prefer and (t["pair"], t["policy_spec"]) in shown:
            continue                  # never the other mode's figures, even where the shown mode has no time
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
            flat = t["policy"] in FLAT                     # γ-free: the same value at each γ, read once as γ 0
            base = {"pair": t["pair"], "policy": t["policy"], "policy_spec": t["policy_spec"],
                    "gamma": 0 if flat else int(step), "mode": t.get("mode", "live")}
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
            if flat:
                break
    if not rows:
        raise SpecsweepError(f"experiment {experiment!r}: the sweep into {sweep.data.tags.get('output')} has no "
                             "per-γ metrics yet")
    config = ["pair", "policy_spec", "gamma"]
    summary = pd.DataFrame(rows).drop_duplicates(config)
    speed = pd.DataFrame(speed).drop_duplicates(config) if speed else pd.DataFrame()
    return summary, speed, fractions(summary)


def fractions(summary: pd.DataFrame) -> pd.DataFrame:
    """Per config: throughput / its pair's reference throughput, the reference chosen as the log's report chooses it
    (``jobs/report/metrics.py``'s ``fraction_of_oracle``: the oracle bound where replay computed it, else the mean of
    the ``oracle`` policy's configs), over the configs measured in the reference's mode only."""
    out = []
    for pair, part in summary.groupby("pair"):
        ref = next((o for o in ORACLES if (part["policy"] == o).any()), None)
        if ref is None:
            continue
        refs = part[(part["policy"] == ref) & part["throughput"].notna()]
        if refs.empty:
            continue
        scope = part[(part["mode"] == refs["mode"].iloc[0]) & ~part["policy"].isin([ref, "ar"])
                     & part["throughput"].notna()]
        out.append(scope.assign(fraction_of_oracle=scope["throughput"] / refs["throughput"].mean()))
    cols = ["pair", "policy_spec", "gamma", "fraction_of_oracle"]
    return pd.concat(out)[cols] if out else pd.DataFrame(columns=cols)
