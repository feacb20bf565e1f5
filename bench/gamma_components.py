"""Where a γ-table prediction misses: per pair, batch size and live config, the measured milliseconds per step of the
draft, the target forward and the rest while every row of a batch runs, beside the cost model's terms for the same
steps.

Why: the γ table's live check (``jobs/report/gamma_table.py``) compares one ratio; when it misses, this says which
part of a step the cost model got wrong and by how much.

Rule: each live batch's steps while every row runs (the first of ``jobs/report/live_costs.py``'s ``live_segments``:
the first-ending row's clocks are the batch's; a B = 1 row is a batch of one) give the measured draft, verify and
rest seconds; beside them the seconds two cost models give the same steps as they ran (each step's width, draft
forwards, catch-up and context: ``segment_parts``) — the calibration the sweep stored, and the refit on the pair's
live steps at that B without this config's own (out of sample, as the γ table's live checks price K). Per config:
sums over batches per step; the measured step with its 95 % percentile bootstrap interval over batches, each
model's step error against its mean.

    python -m bench.gamma_components OUTPUT           # a sweep folder with live rows (seconds, no model loaded)
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from bench.sweep_output import run_on_output
from jobs.report.costs import pair_cost_models, read_actor_infos
from jobs.report.intervals import bootstrap_weights, percentile_interval
from jobs.report.live_costs import live_segments, refit, segment_parts, segment_seconds
from jobs.store.parquet_log import ParquetLog

PARTS = ("draft", "verify", "rest")


def components(folder: str, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per (pair, B, config): measured and calibrated ms per step by part, the refit's step, the measured step's
    interval over batches and each model's step error."""
    df = ParquetLog(folder).read()
    steps = live_segments(df)
    if steps.empty:
        return pd.DataFrame()
    models = {p: m.as_measured() for p, m in pair_cost_models(read_actor_infos(folder)).items()}
    out = []
    full = steps[(steps["timing"] != "last") & (steps["segment"] == 0)]
    for (pair, b, config), part in full.groupby(["pair", "batch_size", "config"]):
        if pair not in models:
            continue
        refitted = refit(models[pair], steps[(steps["pair"] == pair) & (steps["batch_size"] == b)
                                             & (steps["config"] != config) & (steps["timing"] != "last")])
        n = part["n"].to_numpy(float)
        measured = part[list(PARTS)].to_numpy(float)                                   # [batches, 3] seconds
        calibrated = np.array([segment_parts(models[pair], p) for p in part.itertuples(index=False)])
        out_of_sample = sum(segment_seconds(refitted, p) for p in part.itertuples(index=False)) / n.sum()
        per_step, predicted = measured.sum(axis=0) / n.sum(), calibrated.sum(axis=0) / n.sum()
        lo = hi = np.nan
        if len(part) > 1:
            w = bootstrap_weights(len(part), resamples, seed)
            lo, hi = (x[0] for x in percentile_interval(((w @ measured.sum(axis=1)) / (w @ n))[:, None]))
        row = {"pair": pair, "B": int(b), "policy": part["policy"].iloc[0], "config": config, "batches": len(part),
               "steps": int(n.sum())}
        for name, m, p in zip(PARTS, per_step, predicted):
            row[f"{name}_ms"], row[f"model_{name}_ms"] = m * 1e3, p * 1e3
        row.update(step_ms=per_step.sum() * 1e3, step_lo=lo * 1e3, step_hi=hi * 1e3,
                   model_step_ms=predicted.sum() * 1e3, error=predicted.sum() / per_step.sum() - 1,
                   refit_step_ms=out_of_sample * 1e3, refit_error=out_of_sample / per_step.sum() - 1)
        out.append(row)
    return pd.DataFrame(out)


def table(t: pd.DataFrame) -> str:
    lines = ["| pair | B | config | batches | steps | draft ms (calibrated) | verify ms (calibrated) | rest ms "
             "(calibrated) | step ms [95 %] | calibrated step ms | error | refit, out of sample | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        ci = f" [{r.step_lo:.1f}, {r.step_hi:.1f}]" if r.step_lo == r.step_lo else ""
        config = r.config.replace("|", " γ ")
        lines.append(f"| {r.pair} | {r.B} | {config} | {r.batches} | {r.steps} | {r.draft_ms:.1f} "
                     f"({r.model_draft_ms:.1f}) | {r.verify_ms:.1f} ({r.model_verify_ms:.1f}) | {r.rest_ms:.2f} "
                     f"({r.model_rest_ms:.2f}) | {r.step_ms:.1f}{ci} | {r.model_step_ms:.1f} | {r.error:+.1%} | "
                     f"{r.refit_step_ms:.1f} | {r.refit_error:+.1%} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    return run_on_output("gamma_components", __doc__, argv, components, table,
                         "live chain rows with a stored cost model")


if __name__ == "__main__":
    sys.exit(main())
