"""A summarised sweep into its policy runs: per-γ points, speedups, across-γ metrics, γ curves.

Rules:
- A summary (or speedup) row belongs to the run of its ``mode`` column. Without that column
  (one mode per config, as the sweep's figures use) it belongs to the run of the sweep's
  preferred mode (``live`` for ``mode: both``, else ``replay``) when that config has rows in
  it, else to the config's other mode. ``ar`` rows belong to the live ``ar`` run. Rows of a
  run the sweep never had are not logged.
- Per-γ values are logged at step = γ, split so that the chart view holds the comparison:
  metrics are the curves named in ``CHARTED`` (``speedup`` is the summary's overall speedup vs
  ``ar``) and the acceptance rate at each draft position, ``positions/accept_rate_pos_{i}``
  where the summary has it, for i up to the sweep's largest initial γ (``jobs/report/positions.py``; a section of
  its own in the chart view, so the keys without a prefix are the ``CHARTED`` curves alone); every other per-γ
  value of the summary and of the speedup table (``questions``, the ``_lo``/``_hi`` bounds, ``noise_floor``,
  ``speedup_<group>[_lo|_hi]``) goes into the run's ``gamma_points.json``
  (``jobs/mlflow/points.py``), deeper positions included. The ``ar`` run and the oracle bound's, which have no γ,
  repeat their one measurement at each γ (a flat line), without across-γ metrics.
- Across-γ metrics (``across_gamma/...``, step 0; ``ACROSS_CHARTED`` as metrics, the rest in
  ``gamma_points.json``) go to a run only when it holds every γ of its (pair, policy spec) in the summary (per mode
  when the summary has a mode column): an across-γ figure never mixes live and replayed values.
  ``fraction_of_oracle`` = the run's mean throughput over γ / its reference's, over the rows the log's report
  compares (``jobs/report/bound_scope.py``'s ``oracle_scope`` of the summary, each row in its run's mode: the
  oracle bound against replayed chain configs at B = 1, else the ``oracle`` policy against rows of its mode; the
  reference the first of ``metrics.ORACLES`` there); a run outside that scope gets none.
- Every speculative run whose curve has a point gets ``gamma_curve.png``: its summary rows
  (with intervals), else its completed configs' running values (no intervals).
- Each point passes the tracker's once-only rule (``SweepTracker.new_points``).
- Every run's metrics are logged before any artifact, and each run's artifacts (``gamma_points.json``,
  ``gamma_curve.png``) are attempted on their own: an artifact store that refuses uploads costs no run its metrics
  and no other run its artifacts; the first such error is raised once all were attempted.
"""
from __future__ import annotations

import pandas as pd

from jobs.mlflow.artifacts import log_gamma_curve
from jobs.mlflow.points import log_points
from jobs.mlflow.runs import ACROSS, MODES, POSITIONS, finite, row_mode
from jobs.mlflow.stream import MAX_BATCH, measure
from jobs.report import metrics
from jobs.report.agreement import mode_shown
from jobs.report.bound_scope import oracle_scope
from jobs.report.derived import RATE_PREFIX
from policies.oracle import BOUND_LABEL

AT_COMPLETION = ("throughput", "mean_accepted_length", "acceptance_rate")     # logged when a config completes
CHARTED = AT_COMPLETION + ("speedup",)                                          # per-γ metrics (step = γ)
FROM_SUMMARY = ("questions", "throughput_lo", "throughput_hi", "mal_lo", "mal_hi", "speedup", "speedup_lo",
                "speedup_hi", "noise_floor")
ACROSS_CHARTED = tuple(ACROSS + k for k in ("table2_speedup_mean", "best_gamma", "fraction_of_oracle"))
_IDENTITY = ("policy", "pair", "policy_spec", "gamma", "mode")


def charted_position(key: str, top: int) -> bool:
    """``accept_rate_pos_{i}`` with i ≤ ``top`` (the sweep's largest initial γ): a metric of the ``positions/``
    section; deeper positions (an adaptive policy drafting past every initial γ) go to ``gamma_points.json``."""
    return key.startswith(RATE_PREFIX) and key[len(RATE_PREFIX):].isdigit() and int(key[len(RATE_PREFIX):]) <= top


def owners(configs: dict, sweep_mode: str, df: pd.DataFrame) -> list[tuple]:
    """The run, (pair, spec, mode), each row of ``df`` belongs to; ``configs``: (pair, spec, γ, mode) → Config."""
    prefer = mode_shown(sweep_mode)
    out = []
    for r in df[[c for c in ("pair", "policy_spec", "gamma", "policy", "mode") if c in df.columns]].to_dict("records"):
        pair, spec = r["pair"], r["policy_spec"]
        if r.get("policy") == "ar" or spec == "ar":
            out.append((pair, "ar", "live"))
        elif "mode" in r:
            out.append((pair, spec, row_mode(r["mode"])))
        else:
            confs = {m: configs.get((pair, spec, int(r["gamma"]), m)) for m in MODES}
            have = [m for m, cf in confs.items() if cf is not None and cf.parts] or \
                   [m for m, cf in confs.items() if cf is not None] or ["live"]
            out.append((pair, spec, prefer if prefer in have else have[0]))
    return out


def log_summary(tracker, summary: pd.DataFrame, speed: pd.DataFrame | None, now: int,
                table2: pd.DataFrame | None = None) -> None:
    """Log ``summary`` (index 0..n-1) and ``speed`` into ``tracker``'s policy runs (module docstring); ``table2``,
    when given, is the report's Table 2 (``metrics.table2``: each config against ``fixed`` on the questions both
    ran), else each mode's Table 2 is computed from the summary."""

    c, sweep_mode = tracker.client, getattr(tracker.cfg, "mode", "live")
    top = max(tracker.cfg.gammas, default=1)          # positions charted: 1 … the largest initial γ
    owner = owners(tracker.configs, sweep_mode, summary)
    speed_at = {}
    if speed is not None and len(speed):
        for rk, (_, row) in zip(owners(tracker.configs, sweep_mode, speed), speed.iterrows()):
            speed_at[(rk, int(row["gamma"]))] = row
    mode_of = pd.Series([o[2] for o in owner], index=summary.index)
    scopes = {m: summary[mode_of == m] for m in set(mode_of)} if "mode" in summary.columns else {None: summary}
    table2 = {m: metrics.table2_from_summary(s) if table2 is None else table2 for m, s in scopes.items()}
    compared = oracle_scope(summary.assign(mode=mode_of))     # the rows the report's fraction of oracle compares
    ar_of = {o[0]: float(r["throughput"]) for o, (_, r) in zip(owner, summary.iterrows())
             if o[1] == "ar" and finite(r["throughput"])}
    uploads = []                                       # (run id, per-γ detail, across detail, curve, ar, title)
    for rk, run in tracker.runs.items():
        pair, spec, mode = rk
        if run["id"] is None:
            continue
        part = summary[pd.Series([o == rk for o in owner], index=summary.index)]
        batch, detail, across_detail = [], {}, {}
        if spec in ("ar", BOUND_LABEL):
            if len(part):
                r = part.iloc[0]
                for g in tracker.cfg.gammas:   # one measurement (γ-free), drawn as a flat baseline across γ
                    batch += tracker.new_points(run["id"], {k: r[k] for k in ("throughput", "mean_accepted_length")
                                                            if k in r}, g, now)
                c.log_batch(run["id"], metrics=batch)
                uploads.append((run["id"], {0: {k: r[k] for k in FROM_SUMMARY if k in r}}, {}, None, None, ""))
            continue
        for _, r in part.iterrows():
            g = int(r["gamma"])
            vals = {k: r[k] for k in AT_COMPLETION + FROM_SUMMARY if k in r}
            vals.update({k: r[k] for k in r.index if k.startswith(RATE_PREFIX)})    # accept_rate_pos_{i}
            row = speed_at.get((rk, g))
            for col in row.index if row is not None else ():
                if col in _IDENTITY:
                    continue
                if col.startswith("overall"):      # overall = "speedup", unless the summary has it
                    vals.setdefault("speedup" + col[len("overall"):], row[col])
                else:
                    vals[f"speedup_{col}"] = row[col]
            charted = {k: v for k, v in vals.items() if k in CHARTED}
            charted.update({POSITIONS + k: v for k, v in vals.items() if charted_position(k, top)})
            detail[g] = {k: v for k, v in vals.items() if k not in CHARTED and not charted_position(k, top)}
            batch += tracker.new_points(run["id"], charted, g, now)
        key = mode if None not in scopes else None
        scope = scopes.get(key, summary.iloc[0:0])
        whole = scope[(scope["pair"] == pair) & (scope["policy_spec"] == spec)]
        if len(part) and len(part) == len(whole):      # never an across-γ figure that mixes modes
            figs = across(part, table2[key], compared, pair, spec)
            across_detail = {k: v for k, v in figs.items() if k not in ACROSS_CHARTED}
            batch += tracker.new_points(run["id"], {k: v for k, v in figs.items() if k in ACROSS_CHARTED}, 0, now)
        for i in range(0, len(batch), MAX_BATCH):
            c.log_batch(run["id"], metrics=batch[i:i + MAX_BATCH])
        uploads.append((run["id"], detail, across_detail, curve_points(tracker, rk, part), ar_of.get(pair),
                        f"{spec} · {pair}" + ("" if mode == "live" else f" · {mode}")))
    errors = []
    for run_id, detail, across_detail, curve, ar, title in uploads:     # each run's artifacts on their own
        try:
            log_points(c, run_id, detail, across_detail)
            log_gamma_curve(c, run_id, curve, ar, title)
        except Exception as e:
            errors.append(e)
    if errors:
        raise errors[0]


def curve_points(tracker, rk: tuple, part: pd.DataFrame) -> pd.DataFrame:
    """The γ-curve points of run ``rk``: its summary rows, else its completed configs' running values."""
    if len(part):
        return part[[c for c in ("gamma", "throughput", "throughput_lo", "throughput_hi") if c in part.columns]]
    return pd.DataFrame([{"gamma": cf.gamma, "throughput": measure(cf.parts)["throughput"]}
                         for cf in tracker.configs.values() if cf.run == rk and cf.parts and tracker.complete(cf)],
                        columns=["gamma", "throughput"])


def across(part: pd.DataFrame, t2: pd.DataFrame, compared: pd.DataFrame, pair: str, spec: str) -> dict:
    """Across-γ metrics of one run: best γ, its throughput, the mean, Table 2 mean/std, fraction of oracle
    (``compared``: the summary's rows in the report's fraction-of-oracle scope, indexed as ``part``)."""
    out = {}
    best = part.loc[part["throughput"].idxmax()] if part["throughput"].notna().any() else None
    if best is not None:
        out.update({ACROSS + "best_gamma": int(best["gamma"]), ACROSS + "throughput_best": best["throughput"],
                    ACROSS + "throughput_mean": part["throughput"].mean()})
    if len(t2):
        row = t2[(t2["pair"] == pair) & (t2["policy_spec"] == spec)]
        if len(row):
            out[ACROSS + "table2_speedup_mean"] = row["mean"].iloc[0]
            out[ACROSS + "table2_speedup_std"] = row["std"].iloc[0]
    mine = compared[compared["pair"] == pair]
    own = part[part.index.isin(mine.index)]                  # none: the report sets this run against no reference
    ref = next((o for o in metrics.ORACLES if (mine["policy"] == o).any()), None)   # the report's reference
    if ref is not None and len(own) and not (own["policy"] == ref).all():
        out[ACROSS + "fraction_of_oracle"] = own["throughput"].mean() / mine.loc[mine["policy"] == ref,
                                                                                 "throughput"].mean()
    return out
