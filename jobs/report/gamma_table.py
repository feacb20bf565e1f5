"""The (batch size, context) → γ table: the draft length K a deployment should fix per batch size and context
bucket, predicted from the measured acceptance and the cost model, and checked against the live rows.

Model: ``jobs/report/gamma_model.py`` (tokens per step E_K = 1 + Σ_{i≤K} S_i, the step time t(B, K, C) with its
expected catch-up, the speedup t(B, 0, C)·E_K / t(B, K, C) and its interval over questions).

- **validation** at the sizes that ran live: for ``fixed`` γ = K at batch size B, the predicted speedup at the live
  ``ar`` rows' mean context (prompt + half the answer) with their mean prefill P and answer length N, (P + N·t₀) / (P
  + D + N·t_K / E), D = d₂ + d₃·B·(prompt − 1) the draft catching up on the batch's prompts in its first step (once
  per batch; 0 for K = 0), E the tokens a row emitted per step in those live rows (under greedy decoding the text's,
  the same in replay: the check tests the time model, and a short answer's last steps, capped by the token budget,
  emit less than 1 + Σ S_i), its interval from resampling the batches, beside the measured total-throughput speedup vs
  ``ar`` at B (``jobs/report/batches.py``, 95 % interval over batches); *within noise* when |predicted / measured − 1|
  ≤ the pair's live noise floor at B (``ar`` timed first and last, ``jobs/report/metrics.py``).
- **while every row runs** (the like-for-like check of a table made for a batch that stays full): a static batch is
  full from its first step until its first row ends, n_min = the fewest steps of its rows. Over that phase the live
  batch emitted Σ_rows Σ_{s ≤ n_min} (accepted + 1) tokens in W_min − P seconds (W_min: the first row's latency from
  the batch's start, P: the batch's prefill). Measured: the throughput of ``fixed`` γ = K over that of ``ar`` in their
  full phases, 95 % interval over batches; predicted: the same tokens over the seconds the cost model gives the same
  steps as they ran (each step's verified width, draft forwards, catch-up and context: ``jobs/report/live_costs.py``'s
  ``phase_seconds``; greedy: the text sets the steps, the budget-capped last ones included), K over ``ar``, batches
  resampled; within noise as above (the floor is the whole batches': a shorter phase carries more noise).
- **out of sample**: every check prices K with the cost model refitted on the pair's live steps at B
  (``jobs/report/live_costs.py``) *without* the ``fixed`` γ = K rows' own steps, so a prediction never reads the time
  it is checked against; the table itself is priced by the refit on every live step (calibrated sizes elsewhere).
- **the same batches as they ran** (beside the validation; the table itself is for a batch that stays full, as
  continuous batching keeps it): a live batch is static — it runs until its slowest row ends, shrinking as rows
  finish. Its time under the same cost model is P + Σ_phases (n_i − n_{i−1})·t(B_i, K, C), the rows' step counts n_1 ≤
  … ≤ n_B as measured (each row's own steps: greedy acceptance is the text's), B_i the rows still running; ``ar``'s
  rows take one step per token; a K batch adds D. Predicted = Σ ``ar`` batch times / Σ K batch times over the same
  batches.

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
from jobs.report.batches import (UNIT, ar_totals, base_pairs, batches, interval, speedup_samples, unit_totals,
                                 weights)
from jobs.report.costs import pair_cost_models, read_actor_infos
from jobs.report.gamma_model import (BUCKETS, acceptance_samples, best_k, catchup_time, expected_catchup,
                                     speedup_matrix, step_time)
from jobs.report.intervals import percentile_interval
from jobs.report.live_costs import live_models, phase_seconds, phases, refit
from jobs.report.text import interval as interval_text
from jobs.store.output import record_written
from policies.costs import CostModel

COLUMNS = ["pair", "costs", "batch_size", "bucket", "context", "K", "tokens_per_step", "step_ms", "speedup",
           "speedup_lo", "speedup_hi", "best", "best_share"]


def static_batch_time(model: CostModel, steps: list[int], k: int, context: float, s_k: float = 0.0) -> float:
    """Decoding seconds of one static batch whose rows take ``steps`` steps each (module docstring): every phase
    priced at the rows still running, each step with its expected catch-up at full-acceptance rate ``s_k``."""
    t, done = 0.0, 0
    ordered = sorted(int(n) for n in steps)
    for i, n in enumerate(ordered):
        rows = len(ordered) - i
        extra = float(expected_catchup(model, rows, s_k, context)) if k else 0.0
        t += (n - done) * (step_time(model, rows, k, context) + extra)
        done = n
    return t


def full_phase(rows: pd.DataFrame) -> tuple[int, float]:
    """(tokens, decoding seconds) of one static batch's ``rows`` while every row runs (module docstring); (0, 0) when
    a row has no step record."""
    if any(a is None for a in rows["accept_lengths"]):
        return 0, 0.0
    n_min = min(len(a) for a in rows["accept_lengths"])
    tokens = sum(int(sum(a[:n_min])) for a in rows["accept_lengths"])
    return tokens, float(rows["wall_time"].min()) - float(rows["prefill_time"].fillna(0).max())


def full_phase_totals(rows: pd.DataFrame, units: list) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, seconds) per batch of ``units`` (``UNIT`` tuples) in their full phases; 0 where a unit did not run."""
    index = {u: i for i, u in enumerate(units)}
    tok, t = np.zeros(len(units)), np.zeros(len(units))
    for u, batch in rows.groupby(UNIT):
        if u in index:
            tok[index[u]], t[index[u]] = full_phase(batch)
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
    """Predicted vs measured speedup of live ``fixed`` γ = K vs live ``ar`` at each batch size that ran (module rule);
    ``accept`` as :func:`acceptance_samples` gives it (each prediction's interval from its resamples). Each K is priced
    by ``models`` refitted on the pair's live steps at B without that config's (``jobs/report/live_costs.py``: out of
    sample)."""
    live = metrics.ok_rows(df[modes(df) == "live"])
    if live.empty:
        return pd.DataFrame()
    live = live.assign(batch_size=live["batch_size"].fillna(1).astype(int) if "batch_size" in live else 1)
    floor = metrics.noise_floor(live)
    floors = dict(zip(floor["pair"], floor["floor"])) if len(floor) else {}
    steps, out = phases(live), []
    for (pair, size), part in batches(live).groupby(["base_pair", "batch_size"]):
        if pair not in models or pair not in accept:
            continue
        n, totals = unit_totals(part)
        w = weights(n)
        ar_tok, ar_t = ar_totals(totals)
        ar_rows = live[(live["policy"] == "ar") & (base_pairs(live["pair"]) == pair)
                       & (live["batch_size"] == size) & (live["ar_timing"].fillna("") != "last")]
        if ar_rows.empty or not isinstance(ar_t, np.ndarray):
            continue
        prompt = float(np.mean([len(p) for p in ar_rows["prompt_ids"]]))
        ctx = prompt + float(ar_rows["new_tokens"].mean()) / 2
        pre, tokens = float(ar_rows["prefill_time"].fillna(0).mean()), float(ar_rows["new_tokens"].mean())
        point = accept[pair][:1]
        label = batch_label(pair, int(size))
        same = live[(base_pairs(live["pair"]) == pair) & (live["batch_size"] == size)
                    & (live["ar_timing"].fillna("") != "last")]
        ar_same = same[same["policy"] == "ar"]
        units = [tuple(u) for u in same[UNIT].drop_duplicates().itertuples(index=False)]
        ar_full = full_phase_totals(ar_same, units)
        ar_units = ar_same.groupby(UNIT).size()                                 # rows per batch (a last one may be short)
        per_row = ar_full[0].sum() / max(1, sum(int(ar_units.get(u, 0)) for u in units))
        full_ctx = prompt + per_row / 2
        for (policy, spec, gamma), (tok, t) in totals.items():
            k = int(gamma)
            if policy != "fixed" or k > point.shape[1]:
                continue
            # out of sample: the step costs refitted on this pair's live steps at B without this config's
            model = refit(models[pair], steps[(steps["pair"] == pair) & (steps["batch_size"] == size)
                                    & (steps["config"] != f"{spec}|{k}")])
            t_k = speedup_matrix(model, point, int(size), ctx)[0][0]
            ar_static = {u: pre + static_batch_time(model, list(rows["new_tokens"]), 0, ctx)
                         for u, rows in ar_same.groupby(UNIT)}
            thr, sp = speedup_samples(tok, t, ar_tok, ar_t, w)
            lo, hi = interval(sp[1:], n)
            # the draft catches up on the batch's prompts once, in its first step (a K = 0 step drafts nothing)
            d_p = float(catchup_time(model, int(size) * max(prompt - 1, 0), ctx)) if k else 0.0
            runs = same[(same["policy"] == "fixed") & (same["policy_spec"] == spec) & (same["gamma"] == gamma)]
            by_unit = runs.groupby(UNIT)
            emitted = emitted_per_step(by_unit["new_tokens"].sum().to_numpy(float),
                                       by_unit["decoding_steps"].sum().to_numpy(float))
            preds = (pre + tokens * t_k[0]) / (pre + d_p + tokens * t_k[k] / emitted)     # [1 + resamples]
            pred, (pred_lo, pred_hi) = float(preds[0]), resample_interval(preds)
            fl = floors.get(label, np.nan)
            s_k = float(accept[pair][0, k - 1]) if k else 0.0
            k_static = {u: pre + d_p + static_batch_time(model, [len(a) for a in rows["accept_lengths"]], k, ctx,
                                                         s_k) for u, rows in runs.groupby(UNIT)}
            both = [u for u in k_static if u in ar_static]
            static = (sum(ar_static[u] for u in both) / sum(k_static[u] for u in both)) if both else np.nan
            k_full = full_phase_totals(runs, units)
            _, full_msp = speedup_samples(*k_full, *ar_full, weights(len(units)))
            full_lo, full_hi = interval(full_msp[1:], int((k_full[1] > 0).sum()))
            # the model prices the full phases' steps as they ran; the tokens are as they emitted
            here = steps[(steps["pair"] == pair) & (steps["batch_size"] == size)]
            priced_k = priced(model, here[here["config"] == f"{spec}|{k}"], units, int(size))
            priced_ar = priced(model, here[(here["policy"] == "ar") & (here["timing"] != "last")], units, int(size))
            both = (priced_k > 0) & (priced_ar > 0) & (k_full[0] > 0) & (ar_full[0] > 0)
            w_u = weights(int(both.sum())) if both.sum() > 1 else np.ones((1, int(both.sum())))
            full_preds = ((w_u @ k_full[0][both]) / (w_u @ priced_k[both])) / (
                (w_u @ ar_full[0][both]) / (w_u @ priced_ar[both]))
            full_pred, (full_pred_lo, full_pred_hi) = float(full_preds[0]), resample_interval(full_preds)
            out.append({"pair": pair, "batch_size": int(size), "K": k, "context": round(ctx),
                        "predicted": pred, "predicted_lo": pred_lo, "predicted_hi": pred_hi,
                        "measured": float(sp[0]), "measured_lo": lo, "measured_hi": hi,
                        "floor": fl, "within_noise": within(pred, sp[0], fl), "as_run": static,
                        "as_run_within": within(static, sp[0], fl),
                        "full_context": round(full_ctx), "full_predicted": full_pred,
                        "full_predicted_lo": full_pred_lo, "full_predicted_hi": full_pred_hi,
                        "full_measured": float(full_msp[0]),
                        "full_lo": full_lo, "full_hi": full_hi, "full_within": within(full_pred, full_msp[0], fl)})
    return pd.DataFrame(out)


def priced(model: CostModel, part: pd.DataFrame, units: list, rows: int) -> np.ndarray:
    """Seconds ``model`` gives each unit's phase in ``part`` (``jobs/report/live_costs.py``'s ``phases`` rows: the steps
    as they ran, ``phase_seconds``), over ``units``; 0 where a unit has none."""
    index = {u: i for i, u in enumerate(units)}
    out = np.zeros(len(units))
    for p in part.itertuples(index=False):
        if p.unit in index:
            out[index[p.unit]] += phase_seconds(model, p, rows)
    return out


def emitted_per_step(tokens: np.ndarray, row_steps: np.ndarray) -> np.ndarray:
    """[1 + resamples] tokens a row emitted per step over live batches (``tokens`` and row-steps per batch): row 0 all
    batches, then their bootstrap resamples (``jobs/report/batches.py``'s ``weights``; none from one batch)."""
    w = weights(len(tokens)) if len(tokens) > 1 else np.ones((1, len(tokens)))
    return (w @ tokens) / np.maximum(w @ row_steps, 1e-12)


def resample_interval(samples: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of ``samples``' resamples (row 0, the point estimate, left out); NaN without resamples."""
    return interval(np.asarray(samples[1:], dtype=float), len(samples) - 1)


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
        lines += ["\nChecked against the live rows (fixed γ = K vs ar at the batch sizes that ran; prefill included; "
                  "each K priced by the cost model refitted on the live steps without its own rows; "
                  "within noise: |predicted / measured − 1| ≤ the live noise floor):\n",
                  "| pair | B | K | context | predicted [95 %] | measured [95 %] | floor | within noise | the same batches "
                  "as they ran (static, each row's measured steps) | within noise |",
                  "|---|---|---|---|---|---|---|---|---|---|"]

        def yes(flag) -> str:
            return "–" if flag is None else ("yes" if flag else "no")

        def floor_text(r) -> str:
            return f"{r.floor:.1%}" if r.floor == r.floor else "–"

        for r in v.sort_values(["pair", "batch_size", "K"]).itertuples():
            ci, fl = interval_text(r.measured_lo, r.measured_hi), floor_text(r)
            run = f"{r.as_run:.2f}×" if r.as_run == r.as_run else "–"
            pred = f"{r.predicted:.2f}×{interval_text(r.predicted_lo, r.predicted_hi)}"
            lines.append(f"| {r.pair} | {r.batch_size} | {r.K} | {r.context} | {pred} | {r.measured:.2f}×{ci} "
                         f"| {fl} | {yes(r.within_noise)} | {run} | {yes(r.as_run_within)} |")
        lines.append(f"\n{tally(v['within_noise'])} The table's prediction is for a batch that stays full (continuous "
                     "batching); a live batch here is static and runs until its slowest row ends, which the last two "
                     "columns price with the same cost model.")
        lines += ["\nThe like-for-like check: the same live batches while every row runs (from the first step until "
                  "the first row ends), decoding only; predicted: their tokens over the seconds the cost model (refitted "
                  "without K's rows) gives their steps as they ran:\n",
                  "| pair | B | K | context | predicted [95 %] | measured while full [95 %] | floor | within noise |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in v.sort_values(["pair", "batch_size", "K"]).itertuples():
            lines.append(f"| {r.pair} | {r.batch_size} | {r.K} | {r.full_context} | {r.full_predicted:.2f}×"
                         f"{interval_text(r.full_predicted_lo, r.full_predicted_hi)} | "
                         f"{r.full_measured:.2f}×{interval_text(r.full_lo, r.full_hi)} | {floor_text(r)} | "
                         f"{yes(r.full_within)} |")
        lines.append(f"\n{tally(v['full_within'])}")
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
    """The report section, and ``gamma_table.csv`` (``gamma_table-roofline-GPU[-Q].csv`` for a what-if) in ``folder``."""
    ok = metrics.ok_rows(df)
    if ok.empty:
        return ""
    accept = acceptance_samples(ok)
    models, label = folder_models(folder, ok, costs)
    roof = parse_roofline(costs)
    steps = None if roof else phases(ok)
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
    t.to_csv(Path(folder) / name, index=False)
    return table_md(t, None if roof else validation(ok, models, accept), label)
