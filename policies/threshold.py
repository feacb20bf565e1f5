"""``threshold`` — AssistantThreshold (Mamou et al. 2024, "Dynamic Speculation Lookahead
Accelerates Speculative Decoding of Large Language Models"; transformers'
``assistant_confidence_threshold``).

k_max = the initial γ; drafting stops right after a proposal with q(x_i) < τ (that
token is still verified). ``adaptive=true`` refits τ after every step exactly as
transformers' ``AssistedCandidateGenerator.update_candidate_strategy`` does: the
history holds one (q, label) pair per verified proposal — each accepted token a
positive, the first rejected one a negative, later ones dropped; once the history
holds more than 5 samples with both classes, τ becomes the threshold of the ROC curve
(scikit-learn's ``roc_curve``, intermediate points dropped) minimising
FPR + 3·(1 − TPR), the first such threshold in decreasing order (+inf, predicting
nothing, costs 3 and the lowest score costs at most 1, so τ is always an observed
score). The new τ applies from the next step; history and τ
restart with each generation.
"""
from __future__ import annotations

import numpy as np

from policies.base import MORE, STOP, GenerationContext, SequencePolicy, Step

FN_WEIGHT = 3.0       # transformers: costs = fpr + 3 * fnr
MIN_SAMPLES = 5       # transformers: refit only when len(probs) > 5 and both classes are present


def roc_curve(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds) as scikit-learn's ``roc_curve(labels, scores)`` with its defaults
    (drop_intermediate=True): thresholds are the distinct scores in decreasing order, preceded
    by +inf; a point is dropped when it lies on the straight line of equal steps between its
    neighbours (second differences of both FP and TP counts zero). Both classes must be present."""
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=float)
    order = np.argsort(scores, kind="mergesort")[::-1]
    s, y = scores[order], labels[order]
    idx = np.r_[np.where(np.diff(s))[0], y.size - 1]      # last index of each distinct score
    tps = np.cumsum(y)[idx]
    fps = 1 + idx - tps
    thresholds = s[idx]
    if len(fps) > 2:
        keep = np.where(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])[0]
        fps, tps, thresholds = fps[keep], tps[keep], thresholds[keep]
    tps, fps = np.r_[0, tps], np.r_[0, fps]
    thresholds = np.r_[np.inf, thresholds]
    return fps / fps[-1], tps / tps[-1], thresholds


def roc_best_threshold(scores, labels, fn_weight: float = FN_WEIGHT) -> float | None:
    """argmin over the ROC thresholds of FPR + w·(1 − TPR) (first minimiser, i.e. the highest
    threshold among ties); None when a class is absent."""
    labels = np.asarray(labels)
    if labels.size == 0 or labels.min() == labels.max():
        return None
    fpr, tpr, thresholds = roc_curve(labels, scores)
    cost = fpr + fn_weight * (1 - tpr)
    return float(thresholds[int(np.argmin(cost))])


class ConfidenceStop:
    """The τ stop shared by ``threshold`` and ``gammatune+``.

    ``score="token"`` tests the draft's probability of the proposed token q(x_i);
    ``score="max"`` tests the draft's top probability max q at that position. The
    adaptive refit learns τ from the same score it tests.
    """

    def __init__(self, tau: float, adaptive: bool, score: str = "token"):
        if score not in ("token", "max"):
            raise ValueError(f"score must be token or max, got {score!r}")
        self.tau0 = tau
        self.tau = tau
        self.adaptive = adaptive
        self.score = score
        self.scores: list[float] = []
        self.labels: list[int] = []

    def reset(self) -> None:
        self.tau = self.tau0
        self.scores.clear()
        self.labels.clear()

    def verdict(self, q_token: float, q_max: float | None = None) -> str:
        value = q_max if self.score == "max" and q_max is not None else q_token
        return STOP if value < self.tau else MORE

    def update(self, o: Step) -> None:
        if not self.adaptive or o.drafted == 0:
            return
        seen = min(o.accepted + 1, o.drafted)
        values = o.q_max if self.score == "max" else o.q_tokens
        if len(values) < seen:      # every drafter records both per proposal (actors.drafting.drafters.record_proposal)
            raise ValueError(f"the step records {len(values)} {'q_max' if self.score == 'max' else 'q_tokens'} "
                             f"values for {seen} verified proposals")
        self.scores.extend(float(v) for v in values[:seen])
        self.labels.extend([1] * min(o.accepted, seen) + [0] * (seen - min(o.accepted, seen)))
        if len(self.scores) > MIN_SAMPLES and 0 in self.labels and 1 in self.labels:
            self.tau = roc_best_threshold(self.scores, self.labels)


class Threshold(SequencePolicy):
    """AssistantThreshold (Mamou et al. 2024, "Dynamic Speculation Lookahead Accelerates Speculative Decoding of Large
    Language Models"; transformers' ``assistant_confidence_threshold``): k_max = the initial γ, stop right after a
    proposal with q(x_i) < τ; ``adaptive`` refits τ to the ROC threshold minimising FPR + 3·(1 − TPR)."""

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
        return self.stop.verdict(q_token)             # AssistantThreshold tests the proposed token's q

    def update(self, o: Step) -> None:
        self.stop.update(o)

    @property
    def tau(self) -> float:
        return self.stop.tau

    def params(self) -> dict:
        return {"tau": self.stop.tau0, "adaptive": self.stop.adaptive}
