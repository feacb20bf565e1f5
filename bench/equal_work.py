"""Do configs doing the same work take the same time? Per pair and batch size, each live config's target forwards and
draft phases against every config's at the same width, from a sweep's own per-step clocks.

Why: the γ table's live check (``jobs/report/gamma_table.py``) prices ``fixed`` γ = K from the other configs' steps.
If configs that verify the same widths and run the same draft forwards take different times within one run, no cost
model of the work can price one config from the others closer than that spread; this measures it, beside the noise
floor the check judges by.

Rule: the steps while every row of a batch runs (the first segment of ``jobs/report/live_costs.py``'s
``live_segments``; a B = 1 row is a batch of one), ``ar`` timed last kept as a config of its own. Verify: per verified
width L, the pooled mean seconds of every config's steps at L; a config's offset = Σ its verify seconds / Σ over its
steps of the pooled mean at their widths − 1. Draft: the same over the drafting steps, keyed by draft forwards ℓ.
Widths (forwards) only one config ran are left out: nothing does the same work. The 95 % percentile bootstrap
interval draws batches (task × turn × repeat) with replacement, every config with the same draws, the pooled means
recomputed per draw. Needs a log written with per-step clocks (``draft_times``, ``verify_times``, from 2026-11-29).

    python -m bench.equal_work OUTPUT          # a sweep folder with live rows (seconds, no model loaded)
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from actors.loading.schema import batch_label
from bench.sweep_output import run_on_output
from jobs.report import metrics
from jobs.report.intervals import bootstrap_weights, percentile_interval
from jobs.report.live_costs import live_segments
from jobs.store.parquet_log import ParquetLog

PHASES = (("verify", "widths", "step_verify"), ("draft", "levels", "step_draft"))


def offsets(part: pd.DataFrame, key: str, clock: str, resamples: int, seed: int) -> dict[str, tuple]:
    """{config: (steps compared, offset, lo, hi)} of one phase over one pair and batch size's full segments
    (module rule); a config with no step at a shared width is absent."""
    units = sorted(set(part["unit"]))
    labels = sorted(set(part["label"]))
    recs = []
    for r in part.itertuples(index=False):
        keys, seconds = np.asarray(getattr(r, key), int), np.asarray(getattr(r, clock), float)
        for k, t in zip(keys, seconds):
            if k > 0 and t == t:
                recs.append((labels.index(r.label), units.index(r.unit), int(k), float(t)))
    if not recs:
        return {}
    rec = np.array(recs)
    shared = [k for k in sorted(set(rec[:, 2].astype(int))) if len(set(rec[rec[:, 2] == k, 0])) > 1]
    if not shared:
        return {}
    S = np.zeros((len(labels), len(units), len(shared)))              # seconds [config, batch, width]
    N = np.zeros_like(S)                                               # steps
    for lab, unit, k, t in recs:
        if k in shared:
            S[lab, unit, shared.index(k)] += t
            N[lab, unit, shared.index(k)] += 1

    def ratio(w: np.ndarray) -> np.ndarray:                            # w [draws, batches] → [draws, configs]
        with np.errstate(all="ignore"):
            mean = np.einsum("ru,luk->rk", w, S) / np.einsum("ru,luk->rk", w, N)
            return np.einsum("ru,luk->rl", w, S) / np.einsum("ru,luk,rk->rl", w, N, mean) - 1

    point = ratio(np.ones((1, len(units))))[0]
    lo, hi = percentile_interval(ratio(bootstrap_weights(len(units), resamples, seed)))
    steps = N.sum(axis=(1, 2))
    return {lab: (int(steps[i]), point[i], lo[i], hi[i]) for i, lab in enumerate(labels) if steps[i] > 0}


def equal_work(df: pd.DataFrame, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per (pair, B, config): steps compared, offset and its interval for verify and draft; the pair's noise floor."""
    segs = live_segments(df)
    if segs.empty:
        return pd.DataFrame()
    full = segs[segs["segment"] == 0]
    full = full[[not np.all(np.isnan(np.asarray(v, float))) for v in full["step_verify"]]]
    if full.empty:
        return pd.DataFrame()
    full = full.assign(label=full["config"] + np.where(full["timing"] == "last", " (ar last)", ""))
    floor = metrics.noise_floor(df)
    floors = dict(zip(floor["pair"], floor["floor"])) if len(floor) else {}
    out = []
    for (pair, b), part in full.groupby(["pair", "batch_size"]):
        found = {phase: offsets(part, key, clock, resamples, seed) for phase, key, clock in PHASES}
        for label in sorted(set(part["label"])):
            row = {"pair": pair, "B": int(b), "config": label, "floor": floors.get(batch_label(pair, int(b)), np.nan)}
            for phase, _, _ in PHASES:
                n, x, lo, hi = found[phase].get(label, (0, np.nan, np.nan, np.nan))
                row.update({f"{phase}_steps": n, phase: x, f"{phase}_lo": lo, f"{phase}_hi": hi})
            out.append(row)
    return pd.DataFrame(out)


def table(t: pd.DataFrame) -> str:
    def cell(r, phase: str) -> str:
        x = getattr(r, phase)
        return "–" if x != x else f"{x:+.2%} [{getattr(r, phase + '_lo'):+.2%}, {getattr(r, phase + '_hi'):+.2%}]"

    lines = ["| pair | B | config | verify steps | verify vs equal work [95 %] | drafting steps | "
             "draft vs equal work [95 %] |", "|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        lines.append(f"| {r.pair} | {r.B} | {r.config.replace('|', ' γ ')} | {r.verify_steps} | {cell(r, 'verify')} | "
                     f"{r.draft_steps} | {cell(r, 'draft')} |")
    lines.append("")
    for (pair, b), g in t.groupby(["pair", "B"]):
        v = g["verify"].dropna()
        spread = f"{v.max() - v.min():.2%}" if len(v) > 1 else "–"
        fl = g["floor"].iloc[0]
        lines.append(f"{pair} B = {b}: verify offsets span {spread} across configs; live noise floor "
                     f"{'–' if fl != fl else f'{fl:.1%}'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    return run_on_output("equal_work", __doc__, argv, lambda folder: equal_work(ParquetLog(folder).read()), table,
                         "live chain rows with per-step clocks (draft_times, verify_times: logs written from "
                         "2026-11-29 on)")


if __name__ == "__main__":
    sys.exit(main())
