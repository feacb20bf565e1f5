"""``adaedl`` — AdaEDL, early draft stopping on an entropy-based acceptance bound.

Source: Agrawal, Jeon and Lee, "AdaEDL: Early Draft Stopping for Speculative Decoding
of Large Language Models via an Entropy-based Lower Bound on Token Acceptance
Probability" (arXiv 2410.18351, NeurIPS ENLSP 2024): the bound 1 − √(γ_e·H(q)) on the
acceptance probability of a token drafted from q, and a stopping threshold λ adapted
online from observed acceptance (its Algorithm 1, which uses the threshold update of
Draft & Verify — see ``policies/dv_threshold.py``).

Rule, per step (H_i = H(q_i) in nats, the entropy of the draft distribution at
proposal i):

* k_max = ``cap``; the initial γ is ignored.
* Proposal i ≥ 2: if 1 − √(γ_e·H_i) < λ, drafting stops and x_i is **not** verified
  (``discard``): the bound says the token drawn from q_i is unlikely to be accepted,
  so it is not sent.
* Proposal 1: if the bound is below λ, drafting stops after it but x_1 **is**
  verified (``stop``). See "ambiguities" below.
* After a step with k ≥ 1 verified drafts, n accepted (``adaptive=true``): the
  recursion of :class:`policies.dv_threshold.AdaptiveThreshold` on λ,
  m ← β1·m + (1 − β1)·n/k; λ' = λ + ε if m < target, λ if m ≥ target and k ≥ cap,
  λ − ε otherwise; λ ← β2·λ + (1 − β2)·λ'; m starts at 0 each generation.

Defaults: γ_e = 0.2, λ0 = 0.7, β1 = 0.5, β2 = 0.9, ε = 0.01, target = 0.9, cap = 8.
β1, β2, ε and target are Draft & Verify's constants. γ_e = 0.2 and λ0 = 0.7 are the
values of a public re-implementation from the paper's source; they could not be checked
against the paper's text here — they are parameters and are logged with every run.

Ambiguities, resolved:

1. Where the check sits. The bound is a statement about the token about to be drawn
   from q_i, so failing it at i ≥ 2 drops x_i (its draft forward is spent, the token
   is not verified). Under sampling the engine verifies a dropped token instead
   (``actors/drafting/drafters.py::record_proposal`` turns ``discard`` into ``stop`` for sampled
   drafts); that keeps the output exact and costs one extra verified position.
2. The first proposal. Dropping x_1 would verify nothing and make the update's n/k a
   0/0; like the re-implementation we always verify at least one draft, and a failed
   check at i = 1 ends the draft after x_1.
3. The cap clause (λ unchanged when the draft hit its cap and acceptance is on
   target) is taken from Draft & Verify's code.
"""
from __future__ import annotations

import math

from policies.base import DISCARD, MORE, STOP
from policies.dv_threshold import AdaptiveStop


class AdaEDL(AdaptiveStop):
    """AdaEDL (Agrawal, Jeon and Lee 2024, "AdaEDL: Early Draft Stopping for Speculative Decoding of Large Language
    Models via an Entropy-based Lower Bound on Token Acceptance Probability"): drafting stops once the acceptance bound
    1 − √(γ_e·H(q_i)) < λ — proposal i ≥ 2 is then dropped, proposal 1 still verified; k_max = ``cap``, and λ follows
    Draft & Verify's threshold recursion (:class:`~policies.dv_threshold.AdaptiveThreshold`)."""

    name = "adaedl"

    def __init__(self, gamma: int = 0, gamma_e: float = 0.2, lam: float = 0.7, cap: int = 8, adaptive: bool = True,
                 target: float = 0.9, beta1: float = 0.5, beta2: float = 0.9, eps: float = 0.01):
        super().__init__(lam, target, cap, adaptive, beta1, beta2, eps)
        self.gamma_e = gamma_e

    @property
    def lam(self) -> float:
        return self.th.value

    def bound(self, entropy: float) -> float:
        """AdaEDL's lower bound on the acceptance probability of a token drawn from q with H(q) = entropy."""
        return 1.0 - math.sqrt(self.gamma_e * max(entropy, 0.0))

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        if self.bound(entropy) >= self.th.value:
            return MORE
        return STOP if i == 1 else DISCARD

    def params(self) -> dict:
        t = self.th
        return {"gamma_e": self.gamma_e, "lam": t.start, "cap": self.cap, "adaptive": t.adaptive,
                "target": t.target, "beta1": t.beta1, "beta2": t.beta2, "eps": t.eps}
