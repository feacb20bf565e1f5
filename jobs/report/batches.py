"""Results by batch size (the GT paper's Table 5 layout: one row per batch size).

Rows decoded in a batch of B carry ``batch_size`` = B and ``pair`` = ``label@B{B}`` (``actors/schema.py``), and a
row's ``wall_time`` runs from its batch's start to its own last token — the request's latency. Rules:

- a *batch* is the rows of one (task, config, repeat, ``ar`` timing, turn): they started together;
  its time is the longest latency among them and its tokens their sum;
- total throughput of a config at B = Σ tokens / Σ batch times over its batches (tokens per second of
  the whole batch, what a server delivers);
- latency = the mean of the rows' wall times; mean accepted length = per row, as everywhere;
- speedup vs ``ar`` at B = total throughput(config) / total throughput(``ar`` timed first) over the same
  batches, with a 95 % paired-bootstrap interval over batches (``jobs/report/intervals.py``) — none from a
  single batch (a resample of one batch is that batch: a zero-width interval would claim a certainty one
  measurement cannot give);
- the best config at B is the one with the highest total throughput (a replay's oracle bound is no config);
  speculation stops paying at the smallest B whose best config's interval lies at or below 1.

A config both replayed and run live must come in one mode (``jobs/report/agreement.py::primary_rows``), as the
report's other figures take it: a batch mixing both modes would count its rows twice.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from jobs.report.intervals import RESAMPLES, SEED, bootstrap_weights, percentile_interval
from policies.oracle import BOUND_NAME

UNIT = ["task_key", "turn", "repeat"]


def batches(df: pd.DataFrame) -> pd.DataFrame:
    """One row per batch: pair label, B, config, tokens, time (the longest latency), latency sum, rows, accept sums."""
    ok = df[(df["status"] == "ok") & (df["ar_timing"].fillna("") != "last")].copy()
    if "batch_size" not in ok:
        ok["batch_size"] = 1
    ok["base_pair"] = ok["pair"].str.replace(r"@B\d+$", "", regex=True)
    ok["al_sum"] = ok["accept_lengths"].map(lambda a: int(sum(a)) if a is not None else 0)
    ok["steps"] = ok["accept_lengths"].map(lambda a: len(a) if a is not None else 0)
    keys = ["base_pair", "batch_size", "policy", "policy_spec", "gamma"] + UNIT
    return ok.groupby(keys, as_index=False).agg(tokens=("new_tokens", "sum"), time=("wall_time", "max"),
                                                latency=("wall_time", "sum"), rows=("new_tokens", "size"),
                                                al_sum=("al_sum", "sum"), steps=("steps", "sum"))


def by_batch_size(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per pair × B: ``ar``'s total tok/s, the best config's (spec, γ, total tok/s, MAL, latency) and its speedup vs
    ``ar`` at the same B with its interval (module docstring)."""
    b = batches(df)
    out = []
    for (pair, size), part in b.groupby(["base_pair", "batch_size"]):
        units = part[UNIT].drop_duplicates().reset_index(drop=True)
        index = {tuple(u): i for i, u in enumerate(units.itertuples(index=False))}
        w = np.vstack([np.ones((1, len(units))), bootstrap_weights(len(units), resamples, seed)])

        def totals(rows: pd.DataFrame):
            """(tokens, time) per unit as vectors over ``units``."""
            tok, t = np.zeros(len(units)), np.zeros(len(units))
            for r in rows.itertuples(index=False):
                i = index[(r.task_key, r.turn, r.repeat)]
                tok[i] += r.tokens
                t[i] += r.time
            return tok, t

        ar = part[part["policy"] == "ar"]
        if ar.empty:
            continue
        ar_tok, ar_t = totals(ar)
        best = None
        for (spec, gamma), cp in part[~part["policy"].isin(["ar", BOUND_NAME])].groupby(["policy_spec", "gamma"]):
            tok, t = totals(cp)
            ran = t > 0
            thr = (w @ tok) / np.maximum(w @ t, 1e-12)
            base = (w @ (ar_tok * ran)) / np.maximum(w @ (ar_t * ran), 1e-12)
            sp = thr / base
            if not np.isfinite(thr[0]):               # untrusted replayed times (NaN): no throughput to rank
                continue
            if best is None or thr[0] > best["throughput"]:
                lo, hi = _interval(sp[1:]) if len(units) > 1 else (np.nan, np.nan)
                best = {"spec": spec, "gamma": int(gamma), "throughput": float(thr[0]), "speedup": float(sp[0]),
                        "speedup_lo": lo, "speedup_hi": hi, "mal": cp["al_sum"].sum() / max(cp["steps"].sum(), 1),
                        "latency": cp["latency"].sum() / max(cp["rows"].sum(), 1)}
        row = {"pair": pair, "batch_size": int(size), "batches": len(units),
               "ar_throughput": float(ar_tok.sum() / max(ar_t.sum(), 1e-12)),
               "ar_latency": ar["latency"].sum() / max(ar["rows"].sum(), 1)}
        if best is not None:
            row.update({f"best_{k}": v for k, v in best.items()})
        out.append(row)
    return pd.DataFrame(out)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    """The 95 % percentile interval of bootstrap ``samples``."""
    lo, hi = percentile_interval(samples[:, None])
    return float(lo[0]), float(hi[0])


def batch_table_md(t: pd.DataFrame) -> str:
    """Markdown: one row per pair × batch size, the best config's speedup vs ``ar`` at that size with its interval,
    and where speculation stops paying; empty when the sweep ran at batch size 1 only."""
    if t.empty or set(t["batch_size"]) == {1}:
        return ""
    lines = ["| pair | B | batches | ar tok/s (batch) | best config | tok/s | MAL | latency s | speedup vs ar at B |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in t.sort_values(["pair", "batch_size"]).itertuples():
        if not isinstance(getattr(r, "best_spec", None), str):
            continue
        lines.append(f"| {r.pair} | {r.batch_size} | {r.batches} | {r.ar_throughput:.1f} | {r.best_spec} γ={r.best_gamma} "
                     f"| {r.best_throughput:.1f} | {r.best_mal:.2f} | {r.best_latency:.2f} | {r.best_speedup:.2f}× "
                     + (f"[{r.best_speedup_lo:.2f}, {r.best_speedup_hi:.2f}] |" if np.isfinite(r.best_speedup_hi)
                        else "(1 batch: no interval) |"))
    for pair, part in t.groupby("pair"):
        stop = part[part.get("best_speedup_hi", pd.Series(np.nan, index=part.index)) <= 1.0]["batch_size"]
        lines.append(f"\n{pair}: speculation " + (f"stops paying at batch size {int(stop.min())} (best config's interval "
                                                  "at or below 1)" if len(stop) else "pays or is unresolved at every "
                                                  "batch size measured"))
    return "\n".join(lines)
