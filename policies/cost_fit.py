"""Fitting the one :class:`~policies.costs.CostModel` to measured live steps (replay's clock).

Rule. For one speculative step at context length C (prompt + tokens generated before
the step) that ran p draft forwards (proposals, a discarded one included), caught the
draft up on e extra tokens in its first forward (e = fed − 1: the draft's prompt
prefill on its first step, one more after a fully accepted draft) and verified
m = k + 1 tokens:

    draft_time  = d₀·[p > 0] + d₁·p + d₂·[e > 0] + d₃·e + d₄·p·C/1000
    verify_time = T(m) + v_C·C/1000 + v_mC·m·C/1000
    step_time   = draft_time + verify_time + o

T is a table over the verified lengths the fit saw (its knots), linear between knots and
beyond the last two. A forward's cost is far from linear in m on a CPU: measured here,
t(2)/t(1) = 1.7 and m = 3 slower than m = 5 (the kernels chosen per shape differ), so a line
in m missed single steps by 10–25 %. The context slopes v_C, v_mC and d₄ are kept ≥ 0 (a
slope a narrow context range cannot identify is dropped rather than fitted negative).

Both lines are fitted by least squares, refitted without outlier steps (``robust_lstsq``), on the
recorded ``draft_time`` and target time of live :class:`~policies.base.Step` records — the target
forward alone (``forward_time``) where the engine timed it apart, else the whole ``verify_time``;
``o`` (everything else a step spends: acceptance, cache crops, policy calls, bookkeeping) is
(Σ wall − Σ prefill − Σ draft − Σ target) / Σ steps over the fitted generations. A replayed
generation's wall time = its reference run's measured prefill + Σ predicted step times.
Predictions are clipped at 0. The fit is only as wide as its data: the actor fits on ``ar``
and ``fixed`` at every γ of ``actors.replay_task.FIT_GAMMAS``, so T has a knot at each
verified length up to 25.

The fit, its residuals (per step and per generation) and the number of steps are kept
in :meth:`~policies.costs.CostModel.to_dict` (JSON-able) so they can be stored with the actor's info.

Calibration to the turn's own ``ar`` run (:func:`turn_scale`), optional and off in sweeps:

    s = Σ_j t_ar(j) / Σ_j verify_time(1, C_j)        (j over the ``ar`` run's steps)

multiplies a turn's predicted step times. A single ``ar`` run is a noisy gauge of the
machine's speed (a few seconds, which on a shared VM can fall in a 20–30 % faster or slower
phase), and in three of four ``bench.replay`` runs it made the time error worse
(docs/replay.md, "Time").
"""
from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from policies.costs import DRAFT_FEATURES, CostModel, draft_features

CONTEXT_TERMS = ("per_kctx", "per_token_kctx")        # verify: v_C, v_mC
MIN_KNOT_STEPS = 3                                    # a verified length needs this many fitted steps to be a knot


def knot_weights(m: float, knots: Sequence[int]) -> list[float]:
    """Weights w with T(m) = Σ w_i·T(knot_i): linear interpolation, linear extrapolation past either end."""
    w = [0.0] * len(knots)
    if len(knots) == 1:
        return [1.0]
    i = int(np.clip(np.searchsorted(knots, m) - 1, 0, len(knots) - 2))     # the segment [k_i, k_i+1] used
    a, b = knots[i], knots[i + 1]
    t = (m - a) / (b - a)
    w[i], w[i + 1] = 1.0 - t, t
    return w


def verify_features(m: int, context: int, knots: Sequence[int]) -> list[float]:
    """Verify-time features: the knot weights of T(m), then C/1000 and m·C/1000."""
    return knot_weights(m, knots) + [context / 1000.0, m * context / 1000.0]


@dataclass
class StepSample:
    """One live step, as the fit sees it."""

    proposals: int
    catchup: int
    verified: int          # m = k + 1
    context: int
    draft_time: float
    verify_time: float


def draft_feeds(prompt_len: int, steps) -> list[int]:
    """Extra tokens the draft caught up on in each step's first forward (0 when it did not run).

    Reproduces the drafter's cache length: reset per generation; a step with p > 0
    proposals feeds everything the cache lacks, then p − 1 proposals; after a step
    with k > 0 drafts the cache is cropped to the accepted prefix.
    """
    out, dlen, length = [], 0, prompt_len
    for s in steps:
        p = s.proposed or s.drafted
        if p > 0:
            out.append(max(length - dlen - 1, 0))
            dlen = length + p - 1
            if s.drafted:
                dlen = min(dlen, length + s.accepted)
        else:
            out.append(0)
        length += s.emitted
    return out


def target_time(step) -> float:
    """A live step's target time as the fit reads it: the forward alone when timed apart, else the verify phase."""
    return step.forward_time or step.verify_time


def samples_from_generation(prompt_len: int, gen) -> list[StepSample]:
    """Step samples of one live :class:`~actors.core.step.Generation` (``proposed`` falls back to ``drafted``)."""
    out, context = [], prompt_len
    for s, e in zip(gen.steps, draft_feeds(prompt_len, gen.steps)):
        p = s.proposed or s.drafted
        out.append(StepSample(p, e, s.drafted + 1, context, s.draft_time, target_time(s)))
        context += s.emitted
    return out


def robust_lstsq(X: np.ndarray, y: np.ndarray, rounds: int = 3, k: float = 3.0,
                 weights: np.ndarray | None = None, smooth: np.ndarray | None = None) -> np.ndarray:
    """Least squares, refitted without outliers; columns that are constant zero (a feature never
    exercised) get coefficient 0.

    Outliers: a step whose residual lies more than ``k`` scaled median absolute deviations
    (1.4826·MAD, a robust σ) from the median residual — a step slowed by another process or a
    page fault. Dropping them ``rounds`` times keeps one disturbed step from bending the fit
    (on a loaded 2-core machine a plain fit put a negative context slope on verify time).
    ``weights``: each row's multiplicity (a bootstrap resample's draws): the fit counts a row that
    often, the median and σ count it once — copies of a few rows would otherwise make σ zero and
    drop every other row.
    ``smooth``: a matrix D; where the rows leave some combinations of the coefficients undetermined (columns
    that always enter together in the same proportions, or a column never exercised), they are set so
    that |D·coef| is least — among the coefficients that fit the rows equally well, the smoothest.
    """
    used = np.abs(X).sum(0) > 0 if smooth is None else np.ones(X.shape[1], dtype=bool)
    coef = np.zeros(X.shape[1])
    if not used.any() or not len(y):
        return coef
    root = np.sqrt(np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float))
    keep = np.ones(len(y), dtype=bool)
    for _ in range(rounds + 1):
        coef[used] = _least_squares((X[keep] * root[keep, None])[:, used], y[keep] * root[keep], smooth)
        r = y - X @ coef
        med = np.median(r[keep])
        sigma = 1.4826 * np.median(np.abs(r[keep] - med))
        new = np.abs(r - med) <= k * max(sigma, 1e-9)
        if new.sum() < max(used.sum() * 2, 1) or (new == keep).all():
            break
        keep = new
    return coef


def _least_squares(A: np.ndarray, b: np.ndarray, smooth: np.ndarray | None) -> np.ndarray:
    """argmin |A·x − b|; with ``smooth`` (D), the one of least |D·x| among them: the minimum-norm solution plus the
    null-space component of A that minimises |D·x|."""
    if smooth is None or not len(b):
        return np.linalg.lstsq(A, b, rcond=None)[0]
    u, sv, vt = np.linalg.svd(A)                        # one decomposition: min-norm solution and null space
    rank = int((sv > sv.max() * max(A.shape) * np.finfo(float).eps).sum()) if sv.size and sv.max() > 0 else 0
    x = vt[:rank].T @ ((u[:, :rank].T @ b) / sv[:rank])
    free = vt[rank:].T                                  # directions the rows do not determine
    if free.shape[1]:
        x = x + free @ np.linalg.lstsq(smooth @ free, -(smooth @ x), rcond=None)[0]
    return x


def _rel_stats(pred: Sequence[float], meas: Sequence[float]) -> dict:
    err = [abs(p - m) / m for p, m in zip(pred, meas) if m > 0]
    if not err:
        return {"n": 0}
    return {"n": len(err), "median_abs_rel": statistics.median(err), "p90_abs_rel": float(np.percentile(err, 90)),
            "max_abs_rel": max(err)}


def _lstsq_nonneg(X: np.ndarray, y: np.ndarray, nonneg: Sequence[int]) -> np.ndarray:
    """:func:`robust_lstsq`, then any column of ``nonneg`` fitted negative is dropped (coefficient 0) and the rest refitted."""
    cols = list(range(X.shape[1]))
    while True:
        coef = np.zeros(X.shape[1])
        coef[cols] = robust_lstsq(X[:, cols], y)
        bad = [c for c in nonneg if c in cols and coef[c] < 0]
        if not bad:
            return coef
        cols.remove(bad[0])


def fit_cost_model(runs: Sequence[tuple[int, object]], label: str = "", knots: Sequence[int] | None = None,
                   context_terms: bool = True, draft_nonneg: Sequence[str] = ("per_proposal_kctx",)) -> CostModel:
    """Fit on live runs: ``runs`` = [(prompt length, Generation), …] of one actor (any policies, ``ar`` included).
    ``knots``: the verified lengths T is tabulated at (default: every length with ``MIN_KNOT_STEPS`` steps).
    ``context_terms=False``: no context slopes (d₄ = v_C = v_mC = 0). ``draft_nonneg``: draft coefficients that are
    dropped and the rest refitted when fitted negative (``_lstsq_nonneg``)."""
    samples = [s for plen, gen in runs for s in samples_from_generation(plen, gen)]
    if not context_terms:
        samples = [dataclasses.replace(s, context=0) for s in samples]
    counts: dict[int, int] = {}
    for s in samples:
        counts[s.verified] = counts.get(s.verified, 0) + 1
    if knots is None:
        knots = sorted(m for m, n in counts.items() if n >= MIN_KNOT_STEPS) or sorted(counts)[:1]
    knots = sorted(int(k) for k in knots)
    if len(samples) < len(knots) + len(CONTEXT_TERMS):
        raise ValueError(f"a cost model needs at least {len(knots) + len(CONTEXT_TERMS)} live steps, "
                         f"got {len(samples)}")
    Xd = np.array([draft_features(s.proposals, s.catchup, s.context) for s in samples])
    Xv = np.array([verify_features(s.verified, s.context, knots) for s in samples])
    yd = np.array([s.draft_time for s in samples])
    yv = np.array([s.verify_time for s in samples])
    drafting = Xd[:, 0] > 0
    cd = _lstsq_nonneg(Xd[drafting], yd[drafting], nonneg=[DRAFT_FEATURES.index(k) for k in draft_nonneg]) \
        if drafting.any() else np.zeros(len(DRAFT_FEATURES))
    cv = _lstsq_nonneg(Xv, yv, nonneg=[len(knots), len(knots) + 1])
    steps = sum(len(g.steps) for _, g in runs)
    gap = sum(g.wall_time - g.prefill_time - sum(s.draft_time + target_time(s) for s in g.steps) for _, g in runs)
    verify = {"knots": knots, "values": [float(c) for c in cv[:len(knots)]],
              "per_kctx": float(cv[len(knots)]), "per_token_kctx": float(cv[len(knots) + 1])}
    model = CostModel(dict(zip(DRAFT_FEATURES, map(float, cd))), verify,
                      overhead=max(0.0, gap / steps) if steps else 0.0, n_steps=len(samples), label=label)
    pd = [model.draft_time(s.proposals, s.catchup, s.context) for s in samples]
    pv = [model.verify_time(s.verified, s.context) for s in samples]
    model.residuals = {
        "draft": _rel_stats([p for p, s in zip(pd, samples) if s.proposals],
                            [s.draft_time for s in samples if s.proposals]),
        "verify": _rel_stats(pv, yv.tolist()),
        "step": _rel_stats([a + b for a, b in zip(pd, pv)], (yd + yv).tolist()),
        "wall": _rel_stats([predict_wall(model, plen, g) for plen, g in runs], [g.wall_time for _, g in runs]),
    }
    return model


def turn_scale(model: CostModel, prompt_len: int, ar_step_times: Sequence[float]) -> float:
    """s = Σ measured ``ar`` step times / Σ predicted ones (m = 1, C = prompt_len + j); 1.0 when undefined."""
    measured = float(sum(ar_step_times))
    predicted = sum(model.verify_time(1, prompt_len + j) for j in range(len(ar_step_times)))
    if measured <= 0 or predicted <= 0:
        return 1.0
    return measured / predicted


def predict_wall(model: CostModel, prompt_len: int, gen) -> float:
    """Predicted wall time of a generation with ``gen``'s steps: its measured prefill + Σ predicted steps."""
    total, context = gen.prefill_time, prompt_len
    for s, e in zip(gen.steps, draft_feeds(prompt_len, gen.steps)):
        p = s.proposed or s.drafted
        total += model.draft_time(p, e, context) + model.verify_time(s.drafted + 1, context) + model.overhead
        context += s.emitted
    return total
