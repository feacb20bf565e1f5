"""``svip`` — SVIP, the self-verification length policy.

Source: Zhang et al., "Draft Model Knows When to Stop: A Self-Verification Length
Policy for Speculative Decoding" (arXiv 2411.18462); public code
``vanilla-sd/eval_specbench.py``, ``AssistantModel.generate``.

Rule: k_max = ``cap`` (the code's ``min(40, …)``); the initial γ is ignored. After
proposal i, with H_i = H(q_i) in nats the entropy of the draft distribution at that
position, stop drafting when

    √(c · H_i) > h            (equivalently H_i > h² / c = 0.6 nats with the defaults)

and verify the i tokens — the code appends the token, then breaks, so the token at
which the entropy was too high is still verified. Defaults from that script: c = 0.15
(the constant inside its square root), h = 0.3 (``entropy_threshold``), cap = 40.
Stateless: nothing carries over between steps or generations.

Entropy source, stated once: the code computes H from the raw logits (temperature 1);
here H is of the distribution the draft proposes from, which is the same under greedy
decoding and at temperature 1, top-p 1, and includes temperature and top-p otherwise.
"""
from __future__ import annotations

import math

from policies.base import MORE, STOP, SequencePolicy


class SVIP(SequencePolicy):
    """SVIP (Zhang et al. 2024, "Draft Model Knows When to Stop: A Self-Verification Length Policy for Speculative
    Decoding"): stop drafting after proposal i when √(c·H(q_i)) > h (H in nats), that token still verified;
    k_max = ``cap``, stateless."""

    name = "svip"

    def __init__(self, gamma: int = 0, c: float = 0.15, h: float = 0.3, cap: int = 40):
        self.c, self.h, self.cap = c, h, cap
        self.gamma = cap

    def max_draft(self) -> int:
        return self.cap

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        return STOP if math.sqrt(self.c * max(entropy, 0.0)) > self.h else MORE

    def params(self) -> dict:
        return {"c": self.c, "h": self.h, "cap": self.cap}
