"""``goodput`` — ours: pick the draft length that maximises expected tokens per second.

Estimator. a_i = P(draft i accepted | drafts 1..i−1 accepted). Every verified step
with k drafts and n accepted is a run of Bernoulli trials: positions 1..min(n+1, k)
were each tried, positions 1..n succeeded. We keep exponentially forgotten counts
(factor ``decay`` per step, so the estimate follows regime changes) of trials T_i
and successes S_i per position and shrink each towards the pooled rate ā = ΣS/ΣT
with ``prior`` pseudo-trials: a_i = (S_i + prior·ā) / (T_i + prior). Positions never
tried get ā, which lets the policy explore longer drafts when acceptance is high.

Decision. With the actor's cost model (``policies.costs.CostModel``: T_step(k) = ``step_time(k)``,
the draft phase of k proposals + the target forward over k + 1 tokens + the per-step overhead),
choose each step
    k* = argmax_{1 ≤ k ≤ cap} (1 + Σ_{i ≤ k} Π_{j ≤ i} a_j) / T_step(k),
the expected tokens emitted per step (accepted prefix + bonus) over the step's time.
k = 0 is never chosen: with no drafts the estimates could not recover.
``tau`` > 0 also stops drafting after a proposal with q(x_i) < τ.
"""
from __future__ import annotations

import numpy as np

from policies.base import MORE, STOP, GenerationContext, SequencePolicy, Step
from policies.errors import SpecsweepError


class Goodput(SequencePolicy):
    """Ours (no paper): k_max = argmax_{1 ≤ k ≤ cap} (1 + Σ_{i≤k} Π_{j≤i} a_j) / T_step(k), the
    expected tokens per second, with per-position acceptance a_j from decayed counts shrunk towards the pooled rate;
    ``tau`` > 0 adds a q(x_i) < τ stop."""

    name = "goodput"
    needs_costs = True

    def __init__(self, gamma: int = 4, cap: int = 16, decay: float = 0.95, prior: float = 2.0, tau: float = 0.0):
        self.initial, self.cap, self.decay, self.prior, self.tau = gamma, cap, decay, prior, tau
        self.trials = np.zeros(cap)
        self.succ = np.zeros(cap)
        self.gamma = min(gamma, cap)

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        if ctx.costs is None:
            raise SpecsweepError("policy goodput needs the actor's cost calibration (run through an actor or --calibrate)")
        costs = ctx.costs
        self.k_range = np.arange(self.cap + 1)
        self.step_time = np.array([costs.step_time(int(k)) for k in self.k_range])   # draft + T(k+1) + overhead
        self.trials[:] = 0
        self.succ[:] = 0
        self.gamma = min(self.initial, self.cap)

    def estimates(self) -> np.ndarray:
        total_t = self.trials.sum()
        pooled = self.succ.sum() / total_t if total_t > 0 else 0.5
        return (self.succ + self.prior * pooled) / (self.trials + self.prior)

    def max_draft(self) -> int:
        return self.gamma

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        return STOP if q_token < self.tau else MORE

    def update(self, o: Step) -> None:
        if o.drafted:
            self.trials *= self.decay
            self.succ *= self.decay
            tried = min(o.accepted + 1, o.drafted)
            self.trials[:tried] += 1
            self.succ[: o.accepted] += 1
        expected = 1.0 + np.r_[0.0, np.cumsum(np.cumprod(self.estimates()))]
        rate = expected / self.step_time
        self.gamma = 1 + int(np.argmax(rate[1:]))   # k >= 1: a zero draft would stop the estimates learning

    def params(self) -> dict:
        return {"cap": self.cap, "decay": self.decay, "prior": self.prior, "tau": self.tau}
