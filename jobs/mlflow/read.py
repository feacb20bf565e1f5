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
- A run tagged ``times = unreliable`` (``jobs/mlflow/tracking.py``: its rows' predicted times are not trusted, or
  the sweep's summary found its replayed times off) reads back with no time figure: ``throughput*`` and
  ``speedup*`` are NaN, whatever was streamed before the tag, and its token and step figures stay, as in the log's
  report (``jobs/report/derived.py``: ``trusted_times``).
- The fraction of oracle follows the log's report: the rows of ``jobs/report/bound_scope.py``'s ``oracle_scope``
  (the bound against replayed chain configs at B = 1, else the ``oracle`` policy against rows of its mode), the
  reference the first of ``metrics.ORACLES`` there (:func:`fractions`).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from jobs.dataset import GROUP_ORDER
from jobs.mlflow.client import client_for
from jobs.mlflow.points import read_points
from jobs.mlflow.runs import ACROSS_PREFIXES, POSITIONS, ROLE, SUPERSEDED, SWEEP_KEY
from jobs.mlflow.summary import AT_COMPLETION
from jobs.mlflow.tracking import TIMES_TAG, UNTRUSTED
from jobs.redact import redact
from jobs.report.agreement import mode_shown
from jobs.report.bound_scope import oracle_scope
from jobs.report.metrics import ORACLES
from policies.errors import SpecsweepError
from policies.oracle import BOUND_NAME

FLAT = ("ar", BOUND_NAME)        # runs logged as a flat line over γ (``jobs/mlflow/summary.py``)
TIMED = ("throughput", "speedup")   # a key starting so is a time figure (none for a run tagged times = unreliable)


def _pick_sweep(client, exp_id: str, experiment: str, output: str | None):
    sweeps = client.search_runs([exp_id], filter_string=f"tags.`{ROLE}` = 'sweep'",
                                order_by=["attributes.start_time DESC"], max_results=1000)
    sweeps = [s for s in sweeps if SUPERSEDED not in s.data.tags]      # replaced by a --fresh run of the same sweep
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
        untimed = t.get(TIMES_TAG) == UNTRUSTED          # no time figure, whatever was streamed before the tag
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
            if not any(k in vals for k in AT_COMPLETION):   # the config has not completed at this γ
                continue
            flat = t["policy"] in FLAT                     # γ-free: the same value at each γ, read once as γ 0
            base = {"pair": t["pair"], "policy": t["policy"], "policy_spec": t["policy_spec"],
                    "gamma": 0 if flat else int(step), "mode": t.get("mode", "live")}
            vals = {**detail.get(base["gamma"], {}), **vals}
            if untimed:
                vals = {**{k: (float("nan") if k.startswith(TIMED) else v) for k, v in vals.items()},
                        "throughput": float("nan")}
            rows.append({**base, **{k: v for k, v in vals.items() if not k.startswith("speedup_")}})
            if t["policy"] != "ar" and (untimed or any(k.startswith("speedup") for k in vals)):
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
    """Per config: throughput / its pair's reference throughput, over the rows the log's report compares with that
    reference (``jobs/report/bound_scope.py``'s ``oracle_scope``), the reference the first of ``ORACLES`` there (the
    mean of its configs; ``jobs/report/metrics.py``'s ``fraction_of_oracle``); a reference without a time gives
    no fraction."""
    out = []
    for pair, part in oracle_scope(summary).groupby("pair"):
        ref = next((o for o in ORACLES if (part["policy"] == o).any()), None)
        if ref is None:
            continue
        refs = part.loc[part["policy"] == ref, "throughput"].dropna()
        if refs.empty:
            continue
        scope = part[~part["policy"].isin([ref, "ar"]) & part["throughput"].notna()]
        out.append(scope.assign(fraction_of_oracle=scope["throughput"] / refs.mean()))
    cols = ["pair", "policy_spec", "gamma", "fraction_of_oracle"]
    return pd.concat(out)[cols] if out else pd.DataFrame(columns=cols)
