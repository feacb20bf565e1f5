"""``threshold`` — AssistantThreshold (Mamou et al. 2024; transformers'
``assistant_confidence_threshold``).

k_max = the initial γ; drafting stops right after a proposal with q(x_i) < τ (that
token is still verified). ``adaptive=true`` refits τ after every step from the
history of (q, accepted?) pairs — each accepted token is a positive, the first
rejected one a negative — by choosing, over the ROC thresholds, the τ that
minimises FPR + 3·(1 − TPR), as transformers does; the new τ applies from the
next step. The history restarts with each generation.
"""
from __future__ import annotations

import numpy as np

from policies.base import MORE, STOP, GenerationContext, Policy, StepOutcome


FN_WEIGHT = 3.0


def roc_best_threshold(scores: np.ndarray, labels: np.ndarray, fn_weight: float = FN_WEIGHT) -> float | None:
    """argmin over ROC thresholds t (predict positive iff score >= t) of FPR + w·(1 − TPR).

    Candidates are the distinct scores in decreasing order (plus +inf, predicting
    nothing); the first (highest) minimiser wins. None when one class is absent.
    """
    pos = int(labels.sum())
    neg = len(labels) - pos
    if pos == 0 or neg == 0:
        return None
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    tp = np.cumsum(y)
    fp = np.cumsum(1 - y)
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]   # index of the last entry of each distinct score
    tpr = np.r_[0.0, tp[last] / pos]
    fpr = np.r_[0.0, fp[last] / neg]
    thresholds = np.r_[np.inf, s[last]]
    cost = fpr + fn_weight * (1.0 - tpr)
    return float(thresholds[int(np.argmin(cost))])


BINS = 1000


class ConfidenceStop:
    """The τ stop shared by ``threshold`` and ``gammatune+``.

    The adaptive refit keeps the history as counts of positives and negatives per
    score bin of width 1/BINS (a score counts at its bin's lower edge), so each refit
    is one vectorised pass over BINS + 1 bins instead of a sort of the whole history;
    thresholds are multiples of 0.001. Same rule as :func:`roc_best_threshold`.
    """

    def __init__(self, tau: float, adaptive: bool):
        self.tau0 = tau
        self.tau = tau
        self.adaptive = adaptive
        self.pos = np.zeros(BINS + 1)
        self.neg = np.zeros(BINS + 1)

    def reset(self) -> None:
        self.tau = self.tau0
        self.pos[:] = 0
        self.neg[:] = 0

    def verdict(self, q_token: float) -> str:
        return STOP if q_token < self.tau else MORE

    def update(self, o: StepOutcome) -> None:
        if not self.adaptive or o.drafted == 0:
            return
        seen = min(o.accepted + 1, o.drafted)
        for i, q in enumerate(o.q_tokens[:seen]):
            b = min(BINS, int(q * BINS + 1e-9))
            (self.pos if i < o.accepted else self.neg)[b] += 1
        P, N = self.pos.sum(), self.neg.sum()
        if P == 0 or N == 0:
            return
        tp = np.cumsum(self.pos[::-1])            # predicted positive at threshold bin b: scores >= b
        fp = np.cumsum(self.neg[::-1])
        used = (self.pos + self.neg)[::-1] > 0     # only thresholds at observed scores, highest first
        cost = np.r_[FN_WEIGHT, (fp / N + FN_WEIGHT * (1 - tp / P))[used]]
        thresholds = np.r_[np.inf, (np.arange(BINS, -1, -1) / BINS)[used]]
        self.tau = float(min(thresholds[int(np.argmin(cost))], 1.0))


class Threshold(Policy):
    name = "threshold"

    def __init__(self, gamma: int, tau: float = 0.4, adaptive: bool = False):
        self.gamma = gamma
        self.stop = ConfidenceStop(tau, adaptive)

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self.stop.reset()

    def max_draft(self) -> int:
        return self.gamma

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        return self.stop.verdict(q_token)

    def update(self, o: StepOutcome) -> None:
        self.stop.update(o)

    @property
    def tau(self) -> float:
        return self.stop.tau

    def params(self) -> dict:
        return {"tau": self.stop.tau0, "adaptive": self.stop.adaptive}
