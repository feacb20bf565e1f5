"""The γ table's model: what K drafts per step buy a batch of B rows at context C, from the measured
acceptance and the cost model (``jobs/report/gamma_table.py`` builds the table and checks it against live rows).

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
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from jobs.report.batches import base_pairs
from jobs.report.derived import position_tables
from jobs.report.intervals import RESAMPLES, SEED, bootstrap_weights
from policies.costs import CostModel

BUCKETS = ((512, 256), (2048, 1280), (8192, 5120))        # (upper edge, context the bucket is evaluated at)


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
