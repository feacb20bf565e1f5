"""A per-actor step-time model fitted to measured live steps, for replayed generations.

Rule. For one speculative step at context length C (prompt + tokens generated before
the step) that ran p draft forwards (proposals, a discarded one included), caught the
draft up on e extra tokens in its first forward (e = fed − 1: the draft's prompt
prefill on its first step, one more after a fully accepted draft) and verified
m = k + 1 tokens:

    draft_time  = d₀·[p > 0] + d₁·p + d₂·e + d₃·p·C/1000
    verify_time = v₀ + v₁·m + v₂·C/1000 + v₃·m·C/1000
    step_time   = draft_time + verify_time + o

Both lines are fitted by least squares, refitted without outlier steps (``_lstsq``), on the recorded ``draft_time`` /
``verify_time`` of live :class:`~actors.engine.StepRecord` s; ``o`` (the loop's own
per-step time: policy calls, bookkeeping — outside both timers) is
(Σ wall − Σ prefill − Σ step times) / Σ steps over the fitted generations. A
replayed generation's wall time = its reference run's measured prefill + Σ predicted
step times. Predictions are clipped at 0.

The fit, its residuals (per step and per generation) and the number of steps are kept
in :meth:`CostModel.to_dict` (JSON-able) so they can be stored with the actor's info.

Calibration to the turn's own ``ar`` run (:func:`turn_scale`). The fit is made once, when
the actor starts; a shared machine's speed drifts afterwards (one run here slowed 25 %
between the fit and the last question), and one question's contexts may lie outside the
fitted range. Every replayed turn was traced from a live, timed ``ar`` run of that very
turn, so its predicted step times are multiplied by

    s = Σ_j t_ar(j) / Σ_j verify_time(1, C_j)        (j over the ``ar`` run's steps)

the ratio of the ``ar`` run's measured step times to the model's prediction for them. The
replayed speedup over ``ar`` then depends only on the model's relative costs, as Spec-Bench's
speedup depends only on the ratio of two runs measured back to back. A what-if replay
under another actor's cost model (``--costs``) is not calibrated: its point is that
machine's speed.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

DRAFT_FEATURES = ("per_step", "per_proposal", "per_catchup_token", "per_proposal_kctx")
VERIFY_FEATURES = ("intercept", "per_token", "per_kctx", "per_token_kctx")


def draft_features(p: int, e: int, context: int) -> list[float]:
    return [1.0 if p > 0 else 0.0, float(p), float(e) if p > 0 else 0.0, p * context / 1000.0]


def verify_features(m: int, context: int) -> list[float]:
    return [1.0, float(m), context / 1000.0, m * context / 1000.0]


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
        p = s.proposed if getattr(s, "proposed", 0) else s.drafted
        if p > 0:
            out.append(max(length - dlen - 1, 0))
            dlen = length + p - 1
            if s.drafted:
                dlen = min(dlen, length + s.accepted)
        else:
            out.append(0)
        length += s.emitted
    return out


def samples_from_generation(prompt_len: int, gen) -> list[StepSample]:
    """Step samples of one live :class:`~actors.engine.Generation` (``proposed`` falls back to ``drafted``)."""
    out, context = [], prompt_len
    for s, e in zip(gen.steps, draft_feeds(prompt_len, gen.steps)):
        p = s.proposed if getattr(s, "proposed", 0) else s.drafted
        out.append(StepSample(p, e, s.drafted + 1, context, s.draft_time, s.verify_time))
        context += s.emitted
    return out


@dataclass
class CostModel:
    draft: dict[str, float]
    verify: dict[str, float]
    overhead: float = 0.0
    residuals: dict = field(default_factory=dict)
    n_steps: int = 0
    label: str = ""           # which actor / device it was measured on

    def draft_time(self, proposals: int, catchup: int, context: int) -> float:
        if proposals <= 0:
            return 0.0
        x = draft_features(proposals, catchup, context)
        return max(0.0, sum(c * v for c, v in zip((self.draft[k] for k in DRAFT_FEATURES), x)))

    def verify_time(self, verified: int, context: int) -> float:
        x = verify_features(verified, context)
        return max(0.0, sum(c * v for c, v in zip((self.verify[k] for k in VERIFY_FEATURES), x)))

    def to_dict(self) -> dict:
        return {"draft": dict(self.draft), "verify": dict(self.verify), "overhead": self.overhead,
                "residuals": dict(self.residuals), "n_steps": self.n_steps, "label": self.label,
                "rule": "draft = d0[p>0] + d1 p + d2 e + d3 p C/1000; verify = v0 + v1 m + v2 C/1000 + v3 m C/1000"}

    @classmethod
    def from_dict(cls, d: dict) -> "CostModel":
        return cls(draft={k: float(d["draft"][k]) for k in DRAFT_FEATURES},
                   verify={k: float(d["verify"][k]) for k in VERIFY_FEATURES}, overhead=float(d.get("overhead", 0.0)),
                   residuals=dict(d.get("residuals", {})), n_steps=int(d.get("n_steps", 0)), label=d.get("label", ""))


def _lstsq(X: np.ndarray, y: np.ndarray, rounds: int = 3, k: float = 3.0) -> np.ndarray:
    """Least squares, refitted without outliers; columns that are constant zero (a feature never
    exercised) get coefficient 0.

    Outliers: a step whose residual lies more than ``k`` scaled median absolute deviations
    (1.4826·MAD, a robust σ) from the median residual — a step slowed by another process or a
    page fault. Dropping them ``rounds`` times keeps one disturbed step from bending the fit
    (on a loaded 2-core machine a plain fit put a negative context slope on verify time).
    """
    used = np.abs(X).sum(0) > 0
    coef = np.zeros(X.shape[1])
    if not used.any() or not len(y):
        return coef
    keep = np.ones(len(y), dtype=bool)
    for _ in range(rounds + 1):
        coef[used] = np.linalg.lstsq(X[keep][:, used], y[keep], rcond=None)[0]
        r = y - X @ coef
        med = np.median(r[keep])
        sigma = 1.4826 * np.median(np.abs(r[keep] - med))
        new = np.abs(r - med) <= k * max(sigma, 1e-9)
        if new.sum() < max(used.sum() * 2, 1) or (new == keep).all():
            break
        keep = new
    return coef


def _rel_stats(pred: Sequence[float], meas: Sequence[float]) -> dict:
    err = [abs(p - m) / m for p, m in zip(pred, meas) if m > 0]
    if not err:
        return {"n": 0}
    return {"n": len(err), "median_abs_rel": statistics.median(err), "p90_abs_rel": float(np.percentile(err, 90)),
            "max_abs_rel": max(err)}


def fit_cost_model(runs: Sequence[tuple[int, object]], label: str = "") -> CostModel:
    """Fit on live runs: ``runs`` = [(prompt length, Generation), …] of one actor (any policies, ``ar`` included)."""
    samples = [s for plen, gen in runs for s in samples_from_generation(plen, gen)]
    if len(samples) < len(VERIFY_FEATURES):
        raise ValueError(f"a cost model needs at least {len(VERIFY_FEATURES)} live steps, got {len(samples)}")
    Xd = np.array([draft_features(s.proposals, s.catchup, s.context) for s in samples])
    Xv = np.array([verify_features(s.verified, s.context) for s in samples])
    yd = np.array([s.draft_time for s in samples])
    yv = np.array([s.verify_time for s in samples])
    drafting = Xd[:, 0] > 0
    cd = _lstsq(Xd[drafting], yd[drafting])
    cv = _lstsq(Xv, yv)
    steps = sum(len(g.steps) for _, g in runs)
    gap = sum(g.wall_time - g.prefill_time - sum(s.draft_time + s.verify_time for s in g.steps) for _, g in runs)
    model = CostModel(dict(zip(DRAFT_FEATURES, map(float, cd))), dict(zip(VERIFY_FEATURES, map(float, cv))),
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
        p = s.proposed if getattr(s, "proposed", 0) else s.drafted
        total += model.draft_time(p, e, context) + model.verify_time(s.drafted + 1, context) + model.overhead
        context += s.emitted
    return total
