"""Where the γ table's live check errs: each config's steps priced out of sample, split into draft, verify and rest.

Why: the check (``jobs/report/gamma_table.py``) prices ``fixed`` γ = K with the cost model refitted on the other
configs' live steps. Where only one other config ran K's widths (at B = 4 while every row runs, `batch-schedule`
beside `fixed`), K's prediction is that config's measured clock at the same work, and the error is the distance
between two configs doing the same forwards. This prints, for every live config, what the same rule gives it.

Rule: per pair, batch size B and live speculative config c (``ar``'s closing run left out), the model refitted on
the segments of every other config at B (``jobs/report/live_costs.py``'s ``refit``) prices c's segments as they ran
(``segment_parts``: draft, verify, rest seconds). Error of a part = (Σ priced − Σ measured) / Σ measured seconds of
c's steps (draft + verify + rest), so the three parts add up to the total; phase "full": the first segment of each
batch (every row running), "whole": every segment. The 95 % percentile interval draws the batches (task × turn ×
repeat) with replacement, refits on the drawn batches of the other configs and sums the drawn batches of c.

    python -m bench.priced_parts OUTPUT        # a sweep folder with live rows (seconds, no model loaded)
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from bench.sweep_output import run_on_output
from jobs.report.batches import weights
from jobs.report.gamma_table import folder_models, resampled
from jobs.report.intervals import percentile_interval
from jobs.report.live_costs import live_segments, refit, segment_parts, with_context_terms
from jobs.store.parquet_log import ParquetLog

PARTS = ("draft", "verify", "rest")


def errors(model, others: pd.DataFrame, mine: pd.DataFrame) -> np.ndarray:
    """[draft, verify, rest, total] error of ``mine``'s segments priced by ``model`` refitted on ``others``."""
    fitted = refit(model, others)
    priced = np.sum([segment_parts(fitted, p) for p in mine.itertuples(index=False)], axis=0)
    measured = mine[list(PARTS)].to_numpy(float).sum(axis=0)
    err = (priced - measured) / measured.sum()
    return np.append(err, err.sum())


def priced_parts(df: pd.DataFrame, models: dict, resamples: int = 100, seed: int = 0) -> pd.DataFrame:
    """One row per (pair, B, config, phase): each part's error and the total's, with the total's interval."""
    steps = live_segments(df)
    steps = steps[steps["timing"] != "last"]
    out = []
    for (pair, size), part in steps.groupby(["pair", "batch_size"]):
        if pair not in models:
            continue
        here = with_context_terms(models[pair], part)
        units = sorted(set(here["unit"]))
        draws = weights(len(units), resamples, seed)[1:] if len(units) > 1 else np.empty((0, len(units)))
        for config in sorted(set(here[here["policy"] != "ar"]["config"])):      # ar is never priced out of sample
            others = here[here["config"] != config]
            for phase in ("full", "whole"):
                mine = here[(here["config"] == config) & ((here["segment"] == 0) if phase == "full" else True)]
                if mine.empty or others.empty:
                    continue
                point = errors(models[pair], others, mine)
                totals = []
                for w in draws:
                    kept = resampled(mine, units, w)
                    if len(kept):
                        totals.append(errors(models[pair], resampled(others, units, w), kept)[-1])
                lo, hi = percentile_interval(np.asarray(totals)) if totals else (np.nan, np.nan)
                out.append({"pair": pair, "B": int(size), "config": config, "phase": phase,
                            "steps": int(mine["n"].sum()), **dict(zip(PARTS + ("total",), point)),
                            "total_lo": lo, "total_hi": hi})
    return pd.DataFrame(out)


def table(t: pd.DataFrame) -> str:
    lines = ["| pair | B | config | phase | steps | draft | verify | rest | total [95 %] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        total = f"{r.total:+.2%}" + ("" if r.total_lo != r.total_lo else f" [{r.total_lo:+.2%}, {r.total_hi:+.2%}]")
        lines.append(f"| {r.pair} | {r.B} | {r.config.replace('|', ' γ ')} | {r.phase} | {r.steps} | {r.draft:+.2%} | "
                     f"{r.verify:+.2%} | {r.rest:+.2%} | {total} |")
    lines.append("\n(priced − measured) / measured seconds of the config's steps; positive: priced slower than it "
                 "ran.")
    return "\n".join(lines)


def build(folder: str) -> pd.DataFrame:
    df = ParquetLog(folder).read()
    return priced_parts(df, folder_models(folder, df, None)[0])


def main(argv=None) -> int:
    return run_on_output("priced_parts", __doc__, argv, build, table,
                         "live chain rows priced by a trusted cost model (actors.json)")


if __name__ == "__main__":
    sys.exit(main())
