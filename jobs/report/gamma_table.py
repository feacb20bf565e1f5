"""The (batch size, context) → γ table: the draft length K a deployment should fix per batch size and context
bucket, predicted from the measured acceptance and the cost model, and checked against the live rows.

Model (greedy chain drafting, K drafts per step, B rows, context C cached positions per row):

- **tokens per step.** S_i = the acceptance rate at draft position i as ``jobs/report/derived.py``'s
  ``position_tables`` counts it (steps whose first i drafts were all accepted / steps that drafted ≥ i), pooled
  over the ``fixed`` rows of the pair at every batch size (greedy acceptance depends on the text, not on the batch)
  and made non-increasing in i. A row emits E_K = 1 + Σ_{i=1..K} S_i tokens per step: the expectation of
  accepted drafts + the target's own token. With i.i.d. acceptance α, S_i = α^i and E_K = (1 − α^{K+1}) / (1 − α),
  Leviathan, Kalman & Matias 2023 ("Fast Inference from Transformers via Speculative Decoding", Eq. 1); the
  per-position product form needs no i.i.d. assumption. K ranges over 0 … the deepest position measured.
- **step time** (``policies/costs.py``, its measured forward times: ``CostModel.as_measured``): at B = 1 the
  single-row rule, t = draft(K, 0, C) + verify(K + 1, C) + o.
  At B > 1 the batch surface, measured at the calibration context C₀ (``CostModel.context``) and moved to C by the
  per-row context terms, once per row: t = [K > 0]·d₀(B) + K·[T_d(B) + B·d₄·ΔC/1000] + T_B(K + 1)
  + B·(v_C + v_mC·(K + 1))·ΔC/1000 + o_B, ΔC = C − C₀, with L = K + 1 verified tokens per row (``batch_verify``,
  ``batch_draft``, ``batch_overhead``: the surface each actor
  measured at the swept batch sizes, stored in ``actors.json`` after the tasks by ``jobs/sweep/actor_info.py``;
  without a measured batch table they fall back to the single-row model over B·L tokens, as the cost model says).
- **catch-up**: a row whose K drafts were all accepted (probability S_K) leaves its draft one token behind, which
  the next step's first draft forward feeds: the cost model's catch-up terms d₂·[e > 0] + d₃·e. Per B-row step,
  rows taken as independent, the expected extra is P_any·d₂ + d₃·B·S_K with P_any = 1 − (1 − S_K)^B (a width-2 first
  level costs 1–2 % of a step at B ≤ 8: ``python -m bench.batch_catchup``). Every K > 0 step carries it.
- **speedup vs K = 0** (decoding only): (t(B, 0, C) / 1) / (t(B, K, C) / E_K) — time per emitted token of ``ar``
  over that of K. The best K maximises it; each context bucket (≤ 512, ≤ 2k, ≤ 8k tokens) is evaluated at its
  midpoint (256, 1280, 5120).
- **intervals** over questions: the S_i come from a handful of questions, so each prediction carries the 95 %
  percentile interval of a bootstrap that resamples the questions (their per-position counts summed, the cost
  model held fixed: it does not carry the calibration's own spread), and each K the share of resamples in which it
  is the best (how settled the choice is).
- **validation** at the sizes that ran live: for ``fixed`` γ = K at batch size B, the predicted speedup at the live
  ``ar`` rows' mean context (prompt + half the answer) with their mean prefill P and answer length N,
  (P + N·t₀) / (P + D + N·t_K / E), D = d₂ + d₃·B·(prompt − 1) the draft catching up on the batch's prompts in
  its first step (once per batch; 0 for K = 0), E the tokens a row emitted per step in those live rows (under greedy
  decoding the text's, the same in replay: the check tests the time model, and a short answer's last steps, capped
  by the token budget, emit less than 1 + Σ S_i), its interval from resampling the batches, beside the measured total-throughput speedup vs ``ar`` at B (``jobs/report/batches.py``,
  95 % interval over batches); *within noise* when |predicted / measured − 1| ≤ the pair's live noise floor at B
  (``ar`` timed first and last, ``jobs/report/metrics.py``).
- **while every row runs** (the like-for-like check of a table made for a batch that stays full): a static batch is
  full from its first step until its first row ends, n_min = the fewest steps of its rows. Over that phase the
  live batch emitted Σ_rows Σ_{s ≤ n_min} (accepted + 1) tokens in W_min − P seconds (W_min: the first row's
  latency from the batch's start, P: the batch's prefill). Measured: the throughput of ``fixed`` γ = K over that
  of ``ar`` in their full phases, 95 % interval over batches; predicted: t(B, 0, C)·E / (t(B, K, C) + D / n_min) at
  C = the mean prompt + half the tokens a row emits in ``ar``'s full phase, n_min the live batches' mean and E the
  tokens per row-step in their full phases (greedy: the text sets both), D as above; within noise as above (the floor is the whole batches': a shorter phase
  carries more noise).
- **the same batches as they ran** (beside the validation; the table itself is for a batch that stays full, as
  continuous batching keeps it): a live batch is static — it runs until its slowest row ends, shrinking as rows
  finish. Its time under the same cost model is P + Σ_phases (n_i − n_{i−1})·t(B_i, K, C), the rows' step counts
  n_1 ≤ … ≤ n_B as measured (each row's own steps: greedy acceptance is the text's), B_i the rows still running;
  ``ar``'s rows take one step per token; a K batch adds D. Predicted = Σ ``ar`` batch times / Σ K batch times over
  the same batches.

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
from jobs.report.derived import position_tables
from jobs.report.intervals import RESAMPLES, SEED, bootstrap_weights, percentile_interval
from jobs.report.text import interval as interval_text
from jobs.store.output import record_written
from policies.costs import CostModel

BUCKETS = ((512, 256), (2048, 1280), (8192, 5120))        # (upper edge, context the bucket is evaluated at)
COLUMNS = ["pair", "costs", "batch_size", "bucket", "context", "K", "tokens_per_step", "step_ms", "speedup",
           "speedup_lo", "speedup_hi", "best", "best_share"]


def survival(accepted_per_pos, drafts_per_pos) -> list[float]:
    """S_1 … S_n from pooled counters: accepted / drafted per position, non-increasing, up to the last drafted one."""
    out = []
    for a, d in zip(accepted_per_pos, drafts_per_pos):
        if d <= 0:
            break
        out.append(min(a / d, out[-1] if out else 1.0))
    return out


def survival_samples(accepted: np.ndarray, drafted: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[resamples, n] S_1 … S_n of each weighting of the questions: ``accepted`` and ``drafted`` are [questions, n]
    per-position counts, ``weights`` [resamples, questions] multiplicities. Each row is :func:`survival` of its summed
    counts, except that a position no drawn question drafted keeps the previous position's rate."""
    acc, dr = weights @ accepted, weights @ drafted
    rate = np.divide(acc, dr, out=np.full(acc.shape, np.nan), where=dr > 0)
    out = np.empty_like(rate)
    prev = np.ones(len(rate))
    for i in range(rate.shape[1]):
        prev = np.minimum(prev, np.where(np.isnan(rate[:, i]), prev, rate[:, i]))
        out[:, i] = prev
    return out


def tokens_per_step(s: list[float], k: int) -> float:
    """E_K = 1 + Σ_{i ≤ K} S_i (module docstring)."""
    return 1.0 + float(sum(s[:k]))


def step_time(model: CostModel, rows: int, k: int, context: float) -> float:
    """Seconds of one step of ``rows`` rows drafting k and verifying k + 1 tokens each at ``context``
    (``CostModel.batch_step_time``, the module rule)."""
    return model.batch_step_time(rows, k, context)


def catchup_time(model: CostModel, tokens, context: float):
    """Seconds a draft forward adds to catch up on ``tokens`` committed tokens it has not seen (an array gives an
    array): the cost model's catch-up terms d₂·[e > 0] + d₃·e (``CostModel.draft_time``), never below 0."""
    c = int(round(context))
    e = np.asarray(tokens, dtype=float)
    return np.maximum(0.0, model.draft_time(1, e, c) - model.draft_time(1, 0, c))


def expected_catchup(model: CostModel, rows: int, s_k, context: float):
    """Expected catch-up seconds per step of ``rows`` rows drafting K (module docstring): a row whose K drafts were
    all accepted (probability S_K, rows taken as independent) feeds its draft one token it has not seen; the
    batch's first draft level pays d₂ once if any row does and d₃ per such token."""
    s_k = np.asarray(s_k, dtype=float)
    p_any = 1.0 - (1.0 - s_k) ** rows
    tokens = np.divide(rows * s_k, p_any, out=np.zeros_like(p_any), where=p_any > 0)
    return p_any * catchup_time(model, tokens, context)


def speedup_matrix(model: CostModel, s: np.ndarray, rows: int, context: float) -> tuple[np.ndarray, np.ndarray,
                                                                                           np.ndarray]:
    """(step seconds, E_K, speedup vs K = 0), each [m, K + 1], for K = 0 … n of each of the m rows of ``s`` ([m, n]
    S_1 … S_n): a step is ``step_time`` plus its expected catch-up (:func:`expected_catchup`)."""
    s = np.atleast_2d(np.asarray(s, dtype=float))
    base = np.array([step_time(model, rows, k, context) for k in range(s.shape[1] + 1)])
    catch = np.zeros((len(s), len(base)))
    for k in range(1, len(base)):
        catch[:, k] = expected_catchup(model, rows, s[:, k - 1], context)
    t = base[None, :] + catch
    e = 1.0 + np.concatenate([np.zeros((len(s), 1)), np.cumsum(s, axis=1)], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sp = np.where(t > 0, t[:, :1] * e / t, np.nan)
    return t, e, sp


def speedups(model: CostModel, s: list[float], rows: int, context: float) -> list[tuple[int, float, float, float]]:
    """[(K, E_K, step seconds, speedup vs K = 0)] for K = 0 … len(s)."""
    t, e, sp = speedup_matrix(model, np.asarray([s], dtype=float).reshape(1, -1), rows, context)
    return [(k, float(e[0, k]), float(t[0, k]), float(sp[0, k])) for k in range(t.shape[1])]


def best_k(speedup: np.ndarray) -> np.ndarray:
    """Index of the highest speedup per row of ``speedup`` [m, K + 1], the smallest K among equals."""
    return np.argmax(np.nan_to_num(speedup, nan=-np.inf), axis=1)


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


def question_counts(df: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{base pair: (accepted, drafted)}, each [questions, n]: the per-position counters of the ``fixed`` rows of every
    batch size and mode (greedy: the same tokens), one row per question."""
    fixed = df[df["policy"] == "fixed"] if len(df) else df
    if not len(fixed):
        return {}
    if "question_id" not in fixed:
        fixed = fixed.assign(question_id=0)                   # rows without ids: one question
    out = {}
    for base, part in fixed.assign(base=base_pairs(fixed["pair"])).groupby("base"):
        counts = []
        for _, rows in part.groupby("question_id", sort=True):
            pos, _ = position_tables(rows)
            if len(pos):
                counts.append((sum_lists(pos["num_accepted_tokens_per_pos"]), sum_lists(pos["num_drafts_per_pos"])))
        n = max((len(d) for _, d in counts), default=0)
        if n:
            out[base] = tuple(np.array([np.pad(c, (0, n - len(c))) for c in side], dtype=float)
                              for side in zip(*counts))
    return out


def sum_lists(lists) -> np.ndarray:
    """Element-wise sum of lists of unequal lengths."""
    n = max((len(x) for x in lists), default=0)
    out = np.zeros(n)
    for x in lists:
        out[:len(x)] += x
    return out


def acceptance_samples(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, np.ndarray]:
    """{base pair: [1 + resamples, n]}: row 0 the pooled S_1 … S_n (:func:`acceptance`), then one row per bootstrap
    resample of the questions (:func:`survival_samples`)."""
    out = {}
    for base, (acc, dr) in question_counts(df).items():
        point = survival(acc.sum(axis=0), dr.sum(axis=0))
        if not point:
            continue
        n = len(point)
        w = np.ones((1, len(acc)))
        if len(acc) > 1:                                     # one question: no interval
            w = np.vstack([w, bootstrap_weights(len(acc), resamples, seed)])
        out[base] = survival_samples(acc[:, :n], dr[:, :n], w)
    return out


def acceptance(df: pd.DataFrame) -> dict[str, list[float]]:
    """{base pair: S_1 … S_n} pooled over the questions of the ``fixed`` rows (:func:`question_counts`)."""
    return {base: s for base, (acc, dr) in question_counts(df).items() if (s := survival(acc.sum(axis=0),
                                                                                           dr.sum(axis=0)))}


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
    ``accept`` as :func:`acceptance_samples` gives it (each prediction's interval from its resamples)."""
    live = metrics.ok_rows(df[modes(df) == "live"])
    if live.empty:
        return pd.DataFrame()
    live = live.assign(batch_size=live["batch_size"].fillna(1).astype(int) if "batch_size" in live else 1)
    floor = metrics.noise_floor(live)
    floors = dict(zip(floor["pair"], floor["floor"])) if len(floor) else {}
    out = []
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
        t_k = speedup_matrix(models[pair], point, int(size), ctx)[0][0]
        label = batch_label(pair, int(size))
        same = live[(base_pairs(live["pair"]) == pair) & (live["batch_size"] == size)
                    & (live["ar_timing"].fillna("") != "last")]
        ar_same = same[same["policy"] == "ar"]
        ar_static = {u: pre + static_batch_time(models[pair], list(rows["new_tokens"]), 0, ctx)
                     for u, rows in ar_same.groupby(UNIT)}
        units = [tuple(u) for u in same[UNIT].drop_duplicates().itertuples(index=False)]
        ar_full = full_phase_totals(ar_same, units)
        ar_units = ar_same.groupby(UNIT).size()                                 # rows per batch (a last one may be short)
        per_row = ar_full[0].sum() / max(1, sum(int(ar_units.get(u, 0)) for u in units))
        full_ctx = prompt + per_row / 2
        full_t = speedup_matrix(models[pair], point, int(size), full_ctx)[0][0]
        for (policy, spec, gamma), (tok, t) in totals.items():
            k = int(gamma)
            if policy != "fixed" or k >= len(t_k):
                continue
            thr, sp = speedup_samples(tok, t, ar_tok, ar_t, w)
            lo, hi = interval(sp[1:], n)
            # the draft catches up on the batch's prompts once, in its first step (a K = 0 step drafts nothing)
            d_p = float(catchup_time(models[pair], int(size) * max(prompt - 1, 0), ctx)) if k else 0.0
            runs = same[(same["policy"] == "fixed") & (same["policy_spec"] == spec) & (same["gamma"] == gamma)]
            by_unit = runs.groupby(UNIT)
            emitted = emitted_per_step(by_unit["new_tokens"].sum().to_numpy(float),
                                       by_unit["decoding_steps"].sum().to_numpy(float))
            preds = (pre + tokens * t_k[0]) / (pre + d_p + tokens * t_k[k] / emitted)     # [1 + resamples]
            pred, (pred_lo, pred_hi) = float(preds[0]), resample_interval(preds)
            fl = floors.get(label, np.nan)
            s_k = float(accept[pair][0, k - 1]) if k else 0.0
            k_static = {u: pre + d_p + static_batch_time(models[pair], [len(a) for a in rows["accept_lengths"]], k, ctx,
                                                         s_k) for u, rows in runs.groupby(UNIT)}
            both = [u for u in k_static if u in ar_static]
            static = (sum(ar_static[u] for u in both) / sum(k_static[u] for u in both)) if both else np.nan
            k_full = full_phase_totals(runs, units)
            _, full_msp = speedup_samples(*k_full, *ar_full, weights(len(units)))
            full_lo, full_hi = interval(full_msp[1:], int((k_full[1] > 0).sum()))
            # the full phase's steps (greedy: the text sets them) share the prompt catch-up
            steps_min = np.array([min(len(a) for a in rows["accept_lengths"]) * len(rows) if all(
                a is not None for a in rows["accept_lengths"]) else 0 for _, rows in by_unit], dtype=float)
            n_full = (steps_min.sum() / len(runs)) if steps_min.sum() else np.inf     # the phase's steps, batch mean
            d_full = float(catchup_time(models[pair], int(size) * max(prompt - 1, 0), full_ctx)) if k else 0.0
            full_tok = np.array([full_phase(rows)[0] for _, rows in by_unit], dtype=float)
            full_preds = full_t[0] * emitted_per_step(full_tok, steps_min) / (full_t[k] + d_full / max(n_full, 1))
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


def emitted_per_step(tokens: np.ndarray, row_steps: np.ndarray) -> np.ndarray:
    """[1 + resamples] tokens a row emitted per step over live batches (``tokens`` and row-steps per batch): row 0 all
    batches, then their bootstrap resamples (``jobs/report/batches.py``'s ``weights``; none from one batch)."""
    w = weights(len(tokens)) if len(tokens) > 1 else np.ones((1, len(tokens)))
    return (w @ tokens) / np.maximum(w @ row_steps, 1e-12)


def resample_interval(samples: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of ``samples``' resamples (row 0, the point estimate, left out); NaN without resamples."""
    if len(samples) < 2:
        return np.nan, np.nan
    lo, hi = percentile_interval(np.asarray(samples[1:], dtype=float)[:, None])
    return float(lo[0]), float(hi[0])


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
                  "the first row ends), decoding only, against the table's speedup at that context:\n",
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
    sizes = sorted({int(b) for b in ok["batch_size"].fillna(1)}) if "batch_size" in ok else [1]
    t = gamma_table(models, accept, sizes, label)
    if t.empty:
        return ""
    roof = parse_roofline(costs)
    name = "gamma_table" + ("-roofline-" + "-".join(x for x in roof if x) if roof else "") + ".csv"
    record_written(Path(folder) / name)
    t.to_csv(Path(folder) / name, index=False)
    return table_md(t, None if roof else validation(ok, models, accept), label)
