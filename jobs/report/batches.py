"""Results by batch size (docs/definitions.md, Batches): one row per batch size, the best config at each (the GT
paper's Table 5 layout itself — EAGLE-2 and GT(d) side by side with Δ — is ``jobs/report/gt_tables.py``).

Rows decoded in a batch of B carry ``batch_size`` = B and ``pair`` = ``label@B{B}`` (``actors/loading/schema.py``), and a
row's ``wall_time`` runs from its batch's start to its own last token — the request's latency. Rules:

- a *batch* is the rows of one (task, config, repeat, ``ar`` timing, turn): they started together;
  its time is the longest latency among them and its tokens their sum;
- the *unit* the intervals resample (``UNIT``) is one run of a block: its task and repeat, every config's batches of
  every turn in it together. A block's turns decode the same questions back to back in one timed run (a later turn
  prompted with the earlier answers), so its turns are not independent draws; a block of single-turn questions is
  one batch per unit;
- total throughput of a config at B = Σ tokens / Σ batch times over its batches (tokens per second of
  the whole batch, what a server delivers);
- latency = the mean of the rows' wall times; mean accepted length = per row, as everywhere;
- speedup vs ``ar`` at B = total throughput(config) / total throughput(``ar`` timed first) over the same
  batches, with a 95 % paired-bootstrap interval over units (``jobs/report/intervals.py``) — none from a
  single unit (a resample of one unit is that unit: a zero-width interval would claim a certainty one
  measurement cannot give);
- padding = the share of a config's verified slots that were padding (:func:`pad_share`), shown beside its time:
  the batch forward pads every row to 1 + the longest row's drafts, a cost a ragged runner would not pay;
- the best config at B is the one with the highest total throughput (a replay's oracle bound is no config);
  speculation stops paying at the smallest B whose best config's interval lies at or below 1 (said so only when a
  smaller B's interval lay above 1: it paid there).

A config both replayed and run live must come in one mode (``jobs/report/agreement.py::primary_rows``), as the
report's other figures take it: a batch mixing both modes would count its rows twice.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from jobs.report.intervals import RESAMPLES, SEED, bootstrap_weights, percentile_interval
from policies.oracle import BOUND_NAME

BATCH = ["task_key", "turn", "repeat"]      # one batch of a config: the rows that started together
UNIT = ["task_key", "repeat"]               # what the intervals resample: one run of a block, all its turns


def base_pairs(pairs: pd.Series) -> pd.Series:
    """Each row's pair label without the ``@B{B}`` batch suffix (``actors/loading/schema.py``'s ``batch_label`` undone)."""
    return pairs.str.replace(r"@B\d+$", "", regex=True)


def batches(df: pd.DataFrame) -> pd.DataFrame:
    """One row per batch: pair label, B, config, tokens, time (the longest latency), latency sum, rows, accept sums;
    ``ar`` timed last (the noise control) left out, where the log has ``ar_timing``."""
    ok = df[df["status"] == "ok"]
    if "ar_timing" in ok:                         # logs written before ar was timed twice lack the column
        ok = ok[ok["ar_timing"].fillna("") != "last"]
    ok = ok.copy()
    if "batch_size" not in ok:
        ok["batch_size"] = 1
    ok["base_pair"] = base_pairs(ok["pair"])
    ok["al_sum"] = ok["accept_lengths"].map(lambda a: int(sum(a)) if a is not None else 0)
    ok["steps"] = ok["accept_lengths"].map(lambda a: len(a) if a is not None else 0)
    ok["slots"] = ok["drafted"].map(lambda d: int(sum(d)) + len(d) if d is not None else 0) if "drafted" in ok else 0
    ok["pad"] = ok["pad_slots"].fillna(0).astype(int) if "pad_slots" in ok else 0
    keys = ["base_pair", "batch_size", "policy", "policy_spec", "gamma"] + BATCH
    return ok.groupby(keys, as_index=False).agg(tokens=("new_tokens", "sum"), time=("wall_time", "max"),
                                                latency=("wall_time", "sum"), rows=("new_tokens", "size"),
                                                al_sum=("al_sum", "sum"), steps=("steps", "sum"),
                                                slots=("slots", "sum"), pad=("pad", "sum"))


def pad_share(rows: pd.DataFrame) -> float:
    """The padding share of a config's verified slots (rows of :func:`batches`): padding / (each row's 1 + its
    verified drafts per step, + padding). A padded batch forward (``actors/runtime/batch_runner.py``, the replay clock) feeds
    every row 1 + the longest row's drafts, so a policy that verifies ragged rows (``tetris``) pays this share as
    well; a ragged runner would not. 0 at B = 1; NaN without the column (logs written before it)."""
    total = rows["slots"].sum() + rows["pad"].sum()
    return float(rows["pad"].sum() / total) if total > 0 else float("nan")


def unit_totals(part: pd.DataFrame) -> tuple[int, dict]:
    """The batches of one pair × B (rows of :func:`batches`) summed per ``UNIT`` (the turns of a block's run
    together): (units, {(policy, spec, γ): (tokens, time)}), each vector over the units (0 where the config did not
    run), the units in the order ``part[UNIT].drop_duplicates()`` gives."""
    units = part[UNIT].drop_duplicates().reset_index(drop=True)
    index = {tuple(u): i for i, u in enumerate(units.itertuples(index=False))}
    out = {}
    for key, rows in part.groupby(["policy", "policy_spec", "gamma"]):
        tok, t = np.zeros(len(units)), np.zeros(len(units))
        for r in rows.itertuples(index=False):
            i = index[tuple(getattr(r, c) for c in UNIT)]
            tok[i] += r.tokens
            t[i] += r.time
        out[key] = (tok, t)
    return len(units), out


def weights(units: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """[1 + resamples, units]: row 0 the point estimate (every batch once), then the bootstrap resamples."""
    return np.vstack([np.ones((1, units)), bootstrap_weights(units, resamples, seed)])


def speedup_samples(tok: np.ndarray, t: np.ndarray, ar_tok: np.ndarray, ar_t: np.ndarray,
                    w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(total throughput, speedup vs ``ar``) of one config under each weighting of :func:`weights`: ``ar`` over the
    batches the config ran (module docstring)."""
    ran = t > 0
    with np.errstate(divide="ignore", invalid="ignore"):     # a resample that draws none of its batches: NaN
        thr = (w @ tok) / np.maximum(w @ t, 1e-12)
        base = (w @ (ar_tok * ran)) / np.maximum(w @ (ar_t * ran), 1e-12)
        return thr, thr / base


def on_ar_batches(totals: dict) -> tuple[dict, list]:
    """:func:`unit_totals`' ``totals`` kept to the batches ``ar`` ran, and the configs left out because they did not
    run every one of them (a failed config's batches), as [(key, batches it ran, ar's batches)]: ranking configs
    whose throughputs cover different batches would set easy batches against hard ones."""
    ar_ran = ar_totals(totals)[1] > 0
    kept, partial = {}, []
    for key, (tok, t) in totals.items():
        if key[0] == "ar" or key[0] == BOUND_NAME or not np.all(np.isfinite(t)) or bool(np.all(t[ar_ran] > 0)):
            kept[key] = (tok * ar_ran, t * ar_ran)
        else:
            partial.append((key, int((t[ar_ran] > 0).sum()), int(ar_ran.sum())))
    return kept, partial


def interval(samples: np.ndarray, units: int) -> tuple[float, float]:
    """The 95 % interval of the resamples (``samples`` without its point row); NaN from a single unit."""
    return _interval(samples) if units > 1 else (np.nan, np.nan)


def by_batch_size(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per pair × B: ``ar``'s total tok/s, the best config's (spec, γ, total tok/s, MAL, latency) and its speedup vs
    ``ar`` at the same B with its interval (module docstring)."""
    b = batches(df)
    out = []
    for (pair, size), part in b.groupby(["base_pair", "batch_size"]):
        ar = part[part["policy"] == "ar"]
        if ar.empty:
            continue
        n, totals = unit_totals(part)
        totals, _ = on_ar_batches(totals)             # a config that missed one of ar's batches is not ranked
        w = weights(n, resamples, seed)
        ar_tok, ar_t = ar_totals(totals)
        n = int((ar_t > 0).sum())                     # the batches compared
        best = None
        for (policy, spec, gamma), (tok, t) in sorted(totals.items(), key=lambda kv: (kv[0][1], kv[0][2])):
            if policy in ("ar", BOUND_NAME):
                continue
            thr, sp = speedup_samples(tok, t, ar_tok, ar_t, w)
            if not np.isfinite(thr[0]):               # untrusted replayed times (NaN): no throughput to rank
                continue
            if best is None or thr[0] > best["throughput"]:
                cp = part[(part["policy_spec"] == spec) & (part["gamma"] == gamma)]
                lo, hi = interval(sp[1:], n)
                best = {"spec": spec, "gamma": int(gamma), "throughput": float(thr[0]), "speedup": float(sp[0]),
                        "speedup_lo": lo, "speedup_hi": hi, "mal": cp["al_sum"].sum() / max(cp["steps"].sum(), 1),
                        "latency": cp["latency"].sum() / max(cp["rows"].sum(), 1), "pad": pad_share(cp)}
        row = {"pair": pair, "batch_size": int(size), "batches": n,
               "ar_throughput": float(ar_tok.sum() / max(ar_t.sum(), 1e-12)),
               "ar_latency": ar["latency"].sum() / max(ar["rows"].sum(), 1)}
        if best is not None:
            row.update({f"best_{k}": v for k, v in best.items()})
        out.append(row)
    return pd.DataFrame(out)


def ar_totals(totals: dict) -> tuple[np.ndarray, np.ndarray]:
    """``ar``'s (tokens, time) per batch from :func:`unit_totals` (every ``ar`` row, timed first)."""
    parts = [v for k, v in totals.items() if k[0] == "ar"]
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    """The 95 % percentile interval of bootstrap ``samples``."""
    lo, hi = percentile_interval(samples[:, None])
    return float(lo[0]), float(hi[0])


def _pct(share: float) -> str:
    return f"{share:.1%}" if np.isfinite(share) else "–"


def paying_text(part: pd.DataFrame) -> str:
    """Where speculation stops paying for one pair (its :func:`by_batch_size` rows): the smallest B whose best
    config's interval lies at or below 1, and whether a smaller B's interval lay above 1 (it paid) or not."""
    hi = part.get("best_speedup_hi", pd.Series(np.nan, index=part.index))
    lo = part.get("best_speedup_lo", pd.Series(np.nan, index=part.index))
    stop = part[hi <= 1.0]["batch_size"]
    if not len(stop):
        return "pays or is unresolved at every batch size measured"
    first = int(stop.min())
    paid = sorted(int(b) for b in part[(lo > 1.0) & (part["batch_size"] < first)]["batch_size"])
    if paid:
        return (f"stops paying at batch size {first} (best config's interval at or below 1; it paid at batch size "
                f"{', '.join(map(str, paid))})")
    return (f"does not pay at batch size {first} (best config's interval at or below 1)"
            + (" and was not shown to pay below it" if (part["batch_size"] < first).any() else ""))


def batch_table_md(t: pd.DataFrame) -> str:
    """Markdown: one row per pair × batch size, the best config's speedup vs ``ar`` at that size with its interval,
    and where speculation stops paying; empty when the sweep ran at batch size 1 only."""
    if t.empty or set(t["batch_size"]) == {1}:
        return ""
    lines = ["| pair | B | batches | ar tok/s (batch) | best config | tok/s | MAL | latency s | padding | "
             "speedup vs ar at B |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in t.sort_values(["pair", "batch_size"]).itertuples():
        if not isinstance(getattr(r, "best_spec", None), str):
            continue
        lines.append(f"| {r.pair} | {r.batch_size} | {r.batches} | {r.ar_throughput:.1f} | {r.best_spec} γ={r.best_gamma} "
                     f"| {r.best_throughput:.1f} | {r.best_mal:.2f} | {r.best_latency:.2f} | {_pct(getattr(r, 'best_pad', np.nan))} "
                     f"| {r.best_speedup:.2f}× "
                     + (f"[{r.best_speedup_lo:.2f}, {r.best_speedup_hi:.2f}] |" if np.isfinite(r.best_speedup_hi)
                        else "(1 batch: no interval) |"))
    for pair, part in t.groupby("pair"):
        lines.append(f"\n{pair}: speculation {paying_text(part)}")
    return "\n".join(lines)
