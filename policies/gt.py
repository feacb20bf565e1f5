"""``gt`` — the sequence GT principle (GT paper, Eq. 5).

Keep drafting while the estimated acceptance of the whole prefix,
α̂_i = Π_{j ≤ i} q(x_j), stays above c − ε, where c = T_draft per token / T_target
per forward is the pair's cost ratio (measured by the actor: ``c=auto``). The first
token with α̂_i ≤ c − ε is not verified (it costs more to check than it is
expected to return). The initial γ is ignored; ``cap`` bounds a draft.

Under sampling the engine verifies that last token instead of dropping it: dropping
a sampled token because of its own probability would bias the output (see
``actors/drafters.py::record_proposal``); greedy decoding drops it as Eq. 5 says.
"""
from __future__ import annotations

from policies.base import DISCARD, MORE, GenerationContext, SequencePolicy
from policies.errors import SpecsweepError


class GT(SequencePolicy):
    """Sequence GT principle ("Max-Speedup Speculative Sampling: A Generic Tree Construction Principle", Eq. 5): draft
    while α̂_i = Π_{j≤i} q(x_j) > c − ε with c = M_D / M_T; the first token failing it is not verified;
    k_max = ``cap``."""

    name = "gt"

    def __init__(self, gamma: int = 0, c: float | str = "auto", eps: float = 0.0, cap: int = 32):
        self.c_param, self.eps, self.cap = c, eps, cap
        self.c = None if c == "auto" else float(c)
        self.gamma = cap
        self.needs_costs = self.c is None

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        if self.c_param == "auto":
            if ctx.costs is None:
                raise SpecsweepError("policy gt with c=auto needs the actor's cost calibration; pass c=<number> or calibrate")
            self.c = float(ctx.costs.c)
        self.alpha = 1.0

    def max_draft(self) -> int:
        return self.cap

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        self.alpha = q_token if i == 1 else self.alpha * q_token     # α̂_i = Π_{j ≤ i} q(x_j)
        return MORE if self.alpha > self.c - self.eps else DISCARD

    def params(self) -> dict:
        return {"c": self.c_param if self.c is None else round(self.c, 6), "eps": self.eps, "cap": self.cap}
