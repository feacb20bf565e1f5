"""The (batch size, context) → γ table: the draft length K a deployment should fix per batch size and context
bucket, predicted from the measured acceptance and the cost model, and checked against the live rows.

Model: ``jobs/report/gamma_model.py`` (tokens per step E_K = 1 + Σ_{i≤K} S_i, the step time t(B, K, C) with its
expected catch-up, the speedup t(B, 0, C)·E_K / t(B, K, C) and its interval over questions).

- **validation** at the sizes that ran live, for ``fixed`` γ = K at batch size B against live ``ar`` at B, each as a
  throughput ratio (total tokens / total seconds), 95 % intervals from resampling the units (``jobs/report/
  batches.py``: a block's run, its turns together); *within noise* when |predicted / measured − 1| ≤ the pair's
  live noise floor at B (``ar`` timed first and last, ``jobs/report/metrics.py``). The cost model prices the live
  steps *as they ran* — each step's verified width, draft forwards, catch-up and context at the rows then running,
  the target's context being the slots its batch cache attends over, masked ones included
  (``jobs/report/live_costs.py``'s ``segment_seconds``, the same measure its refit reads) — and the tokens are
  those the rows emitted: under greedy decoding the text sets both (the
  budget-capped last steps of a short answer included, the same in replay), so the check tests the time model.
- **whole batches**: a live batch is static — it runs until its slowest row ends, shrinking as rows finish.
  Measured: its tokens over its longest latency (prefill included); predicted: the same tokens over its measured
  prefill + the priced steps, the steps after a row ends at the rows still running (sizes between the fitted ones
  interpolated, as ``CostModel`` does).
- **while every row runs** (the like-for-like check of a table made for a batch that stays full): a static batch is
  full from its first step until its first row ends, n_min = the fewest steps of its rows. Over that phase the live
  batch emitted Σ_rows Σ_{s ≤ n_min} (accepted + 1) tokens in W_min − P seconds (W_min: the first row's latency from
  the batch's start, P: the batch's prefill); predicted: the same tokens over the priced n_min steps (the floor is
  the whole batches': a shorter phase carries more noise).
- **out of sample**: every check prices K with the cost model refitted on the pair's live steps at B
  (``jobs/report/live_costs.py``) *without* the ``fixed`` γ = K rows' own steps, so a prediction never reads the time
  it is checked against; the table itself is priced by the refit on every live step (calibrated sizes elsewhere).
  A prediction's interval draws the units with replacement, refits on the drawn ones and prices them
  (:data:`FIT_RESAMPLES` refits), so it carries the fit's noise as well as the batches' (with the model held fixed,
  a B = 4 check's repeats of the same steps would price alike and the interval would shrink to a point).
- **the table's context** C (a bucket's midpoint) counts the positions each row's forward attends over, as the
  refit's measure does: the table prices a cache that holds no masked slots (a serving engine's paged cache).

``--costs roofline:GPU[:Q]`` gives the same table under a roofline cost model (``actors/plan/roofline.py``): a what-if,
labelled so, with no validation (nothing ran on that GPU).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from actors.plan.roofline import label as roofline_label, parse as parse_roofline, roofline_cost_model
from jobs.report import metrics
from actors.loading.schema import batch_label
from jobs.report.agreement import modes
from jobs.report.batches import (BATCH, UNIT, ar_totals, base_pairs, batches, interval, speedup_samples,
                                 unit_totals, weights)
from jobs.report.costs import pair_cost_models, read_actor_infos
from jobs.report.gamma_model import BUCKETS, acceptance_samples, best_k, speedup_matrix
from jobs.report.intervals import percentile_interval
from jobs.report.live_costs import live_models, live_segments, refit, segment_seconds, with_context_terms
from jobs.report.text import interval as interval_text
from jobs.store.output import record_written, write_texts
from policies.costs import CostModel

FIT_RESAMPLES = 100    # refits per checked row, each on a bootstrap resample of the batches (predictions' intervals)
CHECK_REPEATS = 5      # fewer live repeats per config: one slow batch can move a measured speedup past the floor
COLUMNS = ["pair", "costs", "batch_size", "bucket", "context", "K", "tokens_per_step", "step_ms", "speedup",
           "speedup_lo", "speedup_hi", "best", "best_share"]


def full_phase(rows: pd.DataFrame) -> tuple[int, float]:
    """(tokens, decoding seconds) of one static batch's ``rows`` while every row runs (module docstring); (0, 0) when
    a row has no step record."""
    if any(a is None for a in rows["accept_lengths"]):
        return 0, 0.0
    n_min = min(len(a) for a in rows["accept_lengths"])
    tokens = sum(int(sum(a[:n_min])) for a in rows["accept_lengths"])
    return tokens, float(rows["wall_time"].min()) - float(rows["prefill_time"].fillna(0).max())


def full_phase_totals(rows: pd.DataFrame, units: list) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, seconds) per unit of ``units`` (``UNIT`` tuples): the full phases of its batches (``BATCH``: each
    turn of a block's run) summed; 0 where a unit did not run."""
    index = {u: i for i, u in enumerate(units)}
    tok, t = np.zeros(len(units)), np.zeros(len(units))
    for key, batch in rows.groupby(BATCH):
        u = tuple(dict(zip(BATCH, key))[c] for c in UNIT)
        if u in index:
            tokens, seconds = full_phase(batch)
            tok[index[u]] += tokens
            t[index[u]] += seconds
    return tok, t


def gamma_table(models: dict[str, CostModel], accept: dict[str, np.ndarray], sizes, label: str) -> pd.DataFrame:
    """One row per pair × batch size × bucket × K from :func:`acceptance_samples`' rows (``best`` marks the K of
    highest predicted speedup, ``best_share`` the share of resamples where that K is best; speedup_lo/hi the 95 %
    interval, NaN from a single question)."""
    rows = []
    for pair, s in sorted(accept.items()):
        if pair not in models:
            continue
        for b in sorted(sizes):
            for edge, c in BUCKETS:
                t, e, sp = speedup_matrix(models[pair], s, int(b), c)
                best = best_k(sp)
                n_k = sp.shape[1]
                lo, hi = (percentile_interval(sp[1:]) if len(sp) > 1 else
                          (np.full(n_k, np.nan), np.full(n_k, np.nan)))
                share = (np.bincount(best[1:], minlength=n_k) / (len(sp) - 1)) if len(sp) > 1 else \
                    np.full(n_k, np.nan)
                rows += [{"pair": pair, "costs": label, "batch_size": int(b), "bucket": f"<= {edge}", "context": c,
                          "K": k, "tokens_per_step": e[0, k], "step_ms": t[0, k] * 1e3, "speedup": sp[0, k],
                          "speedup_lo": lo[k], "speedup_hi": hi[k], "best": k == best[0], "best_share": share[k]}
                         for k in range(n_k)]
    return pd.DataFrame(rows, columns=COLUMNS)


def validation(df: pd.DataFrame, models: dict[str, CostModel], accept: dict[str, np.ndarray]) -> pd.DataFrame:
    """Predicted vs measured speedup of live ``fixed`` γ = K vs live ``ar`` at each batch size that ran (module rule):
    whole batches and their full phases, each K priced by ``models`` refitted on the pair's live steps at B without
    that config's (``jobs/report/live_costs.py``: out of sample) and without ``ar`` timed last (the noise control:
    every speedup here divides by ``ar`` timed first). Pairs without acceptance in ``accept``
    (:func:`acceptance_samples`) or without a model are left out."""
    live = metrics.ok_rows(df[modes(df) == "live"])
    if live.empty:
        return pd.DataFrame()
    live = live.assign(batch_size=live["batch_size"].fillna(1).astype(int) if "batch_size" in live else 1)
    floor = metrics.noise_floor(live)
    floors = dict(zip(floor["pair"], floor["floor"])) if len(floor) else {}
    steps, out = live_segments(live), []
    for (pair, size), part in batches(live).groupby(["base_pair", "batch_size"]):
        if pair not in models or pair not in accept:
            continue
        n, totals = unit_totals(part)
        ar_tok, ar_t = ar_totals(totals)
        first = live["ar_timing"].fillna("") != "last" if "ar_timing" in live else True   # older logs: no column
        same = live[(base_pairs(live["pair"]) == pair) & (live["batch_size"] == size) & first]
        ar_same = same[same["policy"] == "ar"]
        if ar_same.empty or not isinstance(ar_t, np.ndarray):
            continue
        prompt = float(np.mean([len(p) for p in ar_same["prompt_ids"]]))
        units = [tuple(u) for u in part[UNIT].drop_duplicates().itertuples(index=False)]    # unit_totals' order
        ar_full = full_phase_totals(ar_same, units)
        per_row = ar_full[0].sum() / max(1, len(ar_same))
        here = with_context_terms(models[pair], steps[(steps["pair"] == pair) & (steps["batch_size"] == size)])
        full_here = here[here["segment"] == 0]                                           # while every row runs
        ar_here = here[(here["policy"] == "ar") & (here["timing"] != "last")]
        for (policy, spec, gamma), (tok, t) in totals.items():
            k, config = int(gamma), f"{spec}|{int(gamma)}"
            if policy != "fixed" or k > accept[pair].shape[1]:
                continue
            fl = floors.get(batch_label(pair, int(size)), np.nan)
            _, sp = speedup_samples(tok, t, ar_tok, ar_t, weights(n))
            lo, hi = interval(sp[1:], n)
            runs = same[(same["policy"] == "fixed") & (same["policy_spec"] == spec) & (same["gamma"] == gamma)]
            k_full = full_phase_totals(runs, units)
            _, full_msp = speedup_samples(*k_full, *ar_full, weights(len(units)))
            full_lo, full_hi = interval(full_msp[1:], int((k_full[1] > 0).sum()))
            fit_on = here[(here["config"] != config) & (here["timing"] != "last")]   # out of sample; ar as compared
            pred, full = predictions(models[pair], fit_on, units, [
                (tok, here[here["config"] == config], ar_tok, ar_here, True),
                (k_full[0], full_here[full_here["config"] == config], ar_full[0], ar_here[ar_here["segment"] == 0],
                 False)])
            out.append({"pair": pair, "batch_size": int(size), "K": k,
                        "context": round(prompt + float(ar_same["new_tokens"].mean()) / 2),
                        "predicted": float(pred[0]), **dict(zip(("predicted_lo", "predicted_hi"),
                                                                resample_interval(pred, n))),
                        "measured": float(sp[0]), "measured_lo": lo, "measured_hi": hi,
                        "floor": fl, "within_noise": within(float(pred[0]), sp[0], fl),
                        "full_context": round(prompt + per_row / 2), "full_predicted": float(full[0]),
                        **dict(zip(("full_predicted_lo", "full_predicted_hi"), resample_interval(full, n))),
                        "full_measured": float(full_msp[0]), "full_lo": full_lo, "full_hi": full_hi,
                        "full_within": within(float(full[0]), full_msp[0], fl),
                        "repeats": int(runs["repeat"].nunique())})
    return pd.DataFrame(out)


def priced(model: CostModel, segments: list, units: list, prefill: bool = False) -> np.ndarray:
    """Seconds ``model`` gives each unit's ``segments`` (``jobs/report/live_costs.py``'s ``live_segments`` rows as
    tuples: the steps as they ran, ``segment_seconds``), over ``units``, with ``prefill`` the batch's measured prefill
    added; 0 where a unit has none."""
    index = {u: i for i, u in enumerate(units)}
    out = np.zeros(len(units))
    for p in segments:
        if p.unit in index:
            out[index[p.unit]] += segment_seconds(model, p) + (p.prefill if prefill else 0.0)
    return out


def resampled(steps: pd.DataFrame, units: list, counts: np.ndarray) -> pd.DataFrame:
    """``steps`` (``live_segments`` rows) of the batches that ``counts`` draws (one bootstrap resample of ``units``),
    each with ``draws``: how often its batch was drawn (the refit counts it that often, ``live_costs.fit_size``); a
    segment of a unit not in ``units`` kept once."""
    index = {u: i for i, u in enumerate(units)}
    draws = np.array([int(counts[index[u]]) if u in index else 1 for u in steps["unit"]], dtype=int)
    return steps.assign(draws=draws)[draws > 0]


def weighted_speedup(w: np.ndarray, tok: np.ndarray, seconds: np.ndarray, ar_tok: np.ndarray,
                     ar_seconds: np.ndarray) -> float:
    """(Σ w·tok / Σ w·seconds) / (Σ w·ar_tok / Σ w·ar_seconds) over the units where all four are positive; NaN when
    ``w`` draws none of them."""
    keep = w * ((tok > 0) & (seconds > 0) & (ar_tok > 0) & (ar_seconds > 0))
    if keep.sum() <= 0:
        return float("nan")
    return float(((keep @ tok) / (keep @ seconds)) / ((keep @ ar_tok) / (keep @ ar_seconds)))


def predictions(model: CostModel, others: pd.DataFrame, units: list, checks: list,
                resamples: int = FIT_RESAMPLES) -> list[np.ndarray]:
    """Per check (tokens, K's segments, ar tokens, ar's segments, prefill counted) over ``units``: [1 + resamples]
    predicted speedups (K vs ``ar``). Row 0: ``model`` refitted on ``others`` (``live_costs.refit``), pricing every
    batch. Each further row draws the batches with replacement (``jobs/report/batches.py``'s ``weights``), refits on
    the drawn batches' segments of ``others`` and prices the drawn batches: the interval carries the fit's noise as
    well as the batches'. No resamples from one batch."""
    w = weights(len(units), resamples if len(units) > 1 else 0)
    out = np.full((len(checks), len(w)), np.nan)
    checks = [(tok, list(k.itertuples(index=False)), ar_tok, list(ar.itertuples(index=False)), prefill)
              for tok, k, ar_tok, ar, prefill in checks]                   # segments as tuples: priced per resample
    for r, wr in enumerate(w):
        fitted = refit(model, others if r == 0 else resampled(others, units, wr))
        drawn = {u for u, c in zip(units, wr) if c > 0}                        # an undrawn batch weighs nothing

        def price(segments: list, prefill: bool) -> np.ndarray:
            return priced(fitted, [p for p in segments if p.unit in drawn], units, prefill)

        for i, (tok, steps, ar_tok, ar_steps, prefill) in enumerate(checks):
            out[i, r] = weighted_speedup(wr, tok, price(steps, prefill), ar_tok, price(ar_steps, prefill))
    return list(out)


def resample_interval(samples: np.ndarray, units: int) -> tuple[float, float]:
    """The 95 % interval of ``samples``' resamples (row 0, the point estimate, left out); NaN from one unit."""
    return interval(np.asarray(samples[1:], dtype=float), units)


def within(predicted: float, measured: float, floor: float) -> bool | None:
    """|predicted / measured − 1| ≤ ``floor``; None when there is no floor or no prediction."""
    if floor != floor or predicted != predicted:
        return None
    return bool(abs(predicted / measured - 1) <= floor)


def tally(flags) -> str:
    """"n of m rows within the live noise floor." over the rows that have a verdict (a floor)."""
    judged = [bool(f) for f in flags if f is not None and f == f]
    return f"{sum(judged)} of {len(judged)} rows within the live noise floor."


def table_md(t: pd.DataFrame, v: pd.DataFrame, label: str) -> str:
    """The report section: best K per pair × batch size × bucket, then the validation rows."""
    if t.empty:
        return ""
    what_if = label.startswith("what-if")
    head = (f"\n## ({label}) Best K by batch size and context (predicted)\n\n" if what_if else
            f"\n## Best K by batch size and context (predicted; {label})\n\n")
    lines = ["Model: E_K = 1 + Σ_{i≤K} S_i tokens per step from the measured acceptance by draft position (i.i.d. "
             "acceptance: (1 − α^{K+1}) / (1 − α), Leviathan et al. 2023); step time from the cost model at that B, "
             "L = K + 1 and the bucket's midpoint context; speedup = decoding time per token of K = 0 over that of K. "
             "Intervals: 95 %, resampling the questions whose acceptance is pooled (the cost model held fixed); "
             "best in: the share of those resamples in which this K is the best.\n",
             "| pair | B | context | best K | tokens/step | predicted speedup vs K = 0 [95 %] | best in |",
             "|---|---|---|---|---|---|---|"]
    for r in t[t["best"]].sort_values(["pair", "batch_size", "context"]).itertuples():
        k = f"{r.K}" if r.K else "0 (off)"
        share = f"{r.best_share:.0%}" if r.best_share == r.best_share else "–"
        lines.append(f"| {r.pair} | {r.batch_size} | {r.bucket} | {k} | {r.tokens_per_step:.2f} | "
                     f"{r.speedup:.2f}×{interval_text(r.speedup_lo, r.speedup_hi)} | {share} |")
    if v is not None and len(v):
        lines += ["\nChecked against the live rows (fixed γ = K vs ar at the batch sizes that ran, whole static "
                  "batches, prefill included; predicted: their tokens over their prefill + the seconds the cost "
                  "model, refitted on the live steps without K's own and ar's closing run, gives every step as it "
                  "ran; its interval refits on each resample of the batches; within noise: |predicted / measured − 1| "
                  "≤ the live noise floor):\n",
                  "| pair | B | K | context | predicted [95 %] | measured [95 %] | floor | within noise |",
                  "|---|---|---|---|---|---|---|---|"]

        def yes(flag) -> str:
            return "–" if flag is None else ("yes" if flag else "no")

        def floor_text(r) -> str:
            return f"{r.floor:.1%}" if r.floor == r.floor else "–"

        for r in v.sort_values(["pair", "batch_size", "K"]).itertuples():
            lines.append(f"| {r.pair} | {r.batch_size} | {r.K} | {r.context} | {r.predicted:.2f}×"
                         f"{interval_text(r.predicted_lo, r.predicted_hi)} | {r.measured:.2f}×"
                         f"{interval_text(r.measured_lo, r.measured_hi)} | {floor_text(r)} | {yes(r.within_noise)} |")
        lines.append(f"\n{tally(v['within_noise'])} The table's prediction is for a batch that stays full (continuous "
                     "batching); a live batch here is static and shrinks as its rows end, priced so above.")
        lines += ["\nThe like-for-like check: the same live batches while every row runs (from the first step until "
                  "the first row ends), decoding only, priced the same way:\n",
                  "| pair | B | K | context | predicted [95 %] | measured while full [95 %] | floor | within noise |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in v.sort_values(["pair", "batch_size", "K"]).itertuples():
            lines.append(f"| {r.pair} | {r.batch_size} | {r.K} | {r.full_context} | {r.full_predicted:.2f}×"
                         f"{interval_text(r.full_predicted_lo, r.full_predicted_hi)} | "
                         f"{r.full_measured:.2f}×{interval_text(r.full_lo, r.full_hi)} | {floor_text(r)} | "
                         f"{yes(r.full_within)} |")
        lines.append(f"\n{tally(v['full_within'])}")
        fewest = int(v["repeats"].min())
        if fewest < CHECK_REPEATS:
            lines.append(f"\nThe checked configs ran {fewest} repeat(s), fewer than {CHECK_REPEATS}: one slow batch "
                         "can move a measured speedup past the floor (`repeats` in the sweep config).")
    return head + "\n".join(lines) + "\n"


def folder_models(folder: str, df: pd.DataFrame, costs: str | None) -> tuple[dict[str, CostModel], str]:
    """({base pair: cost model}, label): the sweep's stored models with their batch cost surface (``actors.json``,
    ``jobs/report/costs.py``'s ``pair_cost_models``; untrusted ones left out), or a roofline what-if."""
    roof = parse_roofline(costs)
    out = {}
    if roof:
        for pair, part in df.assign(base=base_pairs(df["pair"])).groupby("base"):
            r = part.iloc[0]
            out[pair] = roofline_cost_model(roof[0], r["target"], (r["draft"] or None), "bfloat16", roof[1])
        return out, roofline_label(*roof)
    out = pair_cost_models(read_actor_infos(folder))
    return {p: m.as_measured() for p, m in out.items() if m.reliable}, "the sweep's fitted cost model"


def gamma_section(folder: str, df: pd.DataFrame, costs: str | None = None) -> str:
    """The report section, and ``gamma_table.csv`` (``gamma_table-roofline-GPU[-Q].csv`` for a what-if) in
    ``folder``."""
    ok = metrics.ok_rows(df)
    if ok.empty:
        return ""
    accept = acceptance_samples(ok)
    models, label = folder_models(folder, ok, costs)
    roof = parse_roofline(costs)
    steps = None if roof else live_segments(ok)
    table_models = models
    if steps is not None and len(steps):
        table_models = live_models(models, steps)
        label = "the sweep's cost model, refitted per batch size on its live steps"
    sizes = sorted({int(b) for b in ok["batch_size"].fillna(1)}) if "batch_size" in ok else [1]
    t = gamma_table(table_models, accept, sizes, label)
    if t.empty:
        return ""
    name = "gamma_table" + ("-roofline-" + "-".join(x for x in roof if x) if roof else "") + ".csv"
    record_written(Path(folder) / name)
    write_texts({Path(folder) / name: t.to_csv(index=False)})
    return table_md(t, None if roof else validation(ok, models, accept), label)
