"""``gammatune`` / ``gammatune+`` — GammaTune (Gautam et al. 2025, Alg. 1, Eq. 7–8).

After each step with k drafted and n accepted:
    A = n;  if A = γ:  A ← A + δ                      (Eq. 7, §4.1: γ = the k_max of that step)
    γ̄ ← min(γmax, max(γmin, (1 − η)·γ̄ + η·A))         (Eq. 8)
    γ ← ⌈γ̄⌉                                          (Alg. 1, line 5)
γ̄ starts at the initial γ each generation, and the first step drafts that γ
unclipped; the clip of Eq. 8 applies from the first update on. ``expand=jump`` is the other reading of
Alg. 1 line 2: on full acceptance the next γ is A + δ (clipped to [γmin, γmax])
while γ̄ is updated with the plain A.
``gammatune+`` (§4.2) adds a confidence stop (τ = 0.4): drafting stops right after a
proposal whose draft *top* probability max q is below τ (§4.2: "the top logit
probability" of the draft) — ``stop_on=max``, the default. ``stop_on=token`` is the
other reading: stop on the proposed token's own probability q(x_i), as ``threshold``
does. The two coincide under greedy drafting (the proposal is the argmax); they differ
when the draft samples. ``adaptive=true`` refits τ on the same score.
Defaults η = 0.3, δ = 2, γmin = 1, γmax = 10 come from a public re-implementation
(the paper gives none) and are logged with every run.
"""
from __future__ import annotations

import math

from policies.base import GenerationContext, SequencePolicy, Step
from policies.threshold import ConfidenceStop


class GammaTune(SequencePolicy):
    """GammaTune (Gautam, Shrestha and Reddy 2025, "Token-Driven GammaTune: Adaptive Calibration for Enhanced
    Speculative Decoding", Alg. 1): after a step with n drafts accepted, A = n (+ δ when A = γ, the step's k_max, Eq. 7),
    γ̄ ← min(γmax, max(γmin, (1 − η)·γ̄ + η·A)) (Eq. 8), k_max = ⌈γ̄⌉; ``expand=jump`` instead sets k_max = A + δ
    (clipped) on full acceptance and updates γ̄ with the plain A."""

    name = "gammatune"

    def __init__(self, gamma: int, eta: float = 0.3, delta: float = 2, gamma_min: int = 1, gamma_max: int = 10,
                 expand: str = "ema"):
        self.initial = gamma
        self.eta, self.delta = eta, delta
        self.gamma_min, self.gamma_max = gamma_min, gamma_max
        self.expand = expand
        self._start()

    def _start(self) -> None:
        # Alg. 1 drafts the initial γ as given on the first step; Eq. 8's clip to [γmin, γmax] applies from the
        # first update on (so γ0 = 24 with γmax = 10 drafts 24 once, then at most 10).
        self.gamma_bar = float(self.initial)
        self.gamma = int(self.initial)

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self._start()

    def max_draft(self) -> int:
        return self.gamma

    def update(self, o: Step) -> None:
        if o.drafted == 0:
            return
        full = o.accepted == o.k_max           # Eq. 7 / Alg. 1 line 1: A = γ (a draft stopped early never expands)
        a = o.accepted + (self.delta if full and self.expand == "ema" else 0)
        self.gamma_bar = min(self.gamma_max, max(self.gamma_min, (1 - self.eta) * self.gamma_bar + self.eta * a))
        if full and self.expand == "jump":
            self.gamma = int(min(self.gamma_max, max(self.gamma_min, o.accepted + self.delta)))
        else:
            self.gamma = int(math.ceil(self.gamma_bar - 1e-12))

    def params(self) -> dict:
        return {"eta": self.eta, "delta": self.delta, "gamma_min": self.gamma_min, "gamma_max": self.gamma_max,
                "expand": self.expand}


class GammaTunePlus(GammaTune):
    """GammaTune+ (same paper, §4.2): GammaTune's schedule plus a confidence stop — drafting ends right after a proposal
    whose top draft probability max q < τ (``stop_on=token``: q(x_i) < τ); ``adaptive`` refits τ online."""

    name = "gammatune+"

    def __init__(self, gamma: int, tau: float = 0.4, adaptive: bool = False, stop_on: str = "max", **kw):
        super().__init__(gamma, **kw)
        self.stop = ConfidenceStop(tau, adaptive, score=stop_on)

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self.stop.reset()

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        return self.stop.verdict(q_token, q_max)

    def update(self, o: Step) -> None:
        super().update(o)
        self.stop.update(o)

    def params(self) -> dict:
        return {**super().params(), "tau": self.stop.tau0, "adaptive": self.stop.adaptive, "stop_on": self.stop.score}
