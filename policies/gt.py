"""``gt`` — the sequence GT principle ("Max-Speedup Speculative Sampling: A Generic Tree Construction Principle").

Keep drafting while the estimated acceptance of the whole prefix, α̂_i = Π_{j ≤ i} q(x_j), stays above the
i-th token's price minus ε (Eq. 5 with the price of Eq. 2 / 15 / 18): price_i = (M_D + Φ(i) − Φ(i − 1)) / M_T,
Φ the target's extra verify time, zero below the measured knee K (``policies/phi.py``), so below K the test
is Eq. 5's α̂_i > c − ε with c = M_D / M_T. The first token failing it is not verified (it costs more to
check than it is expected to return). The initial γ is ignored; ``cap`` bounds a draft.

``c`` picks M_D / M_T: ``auto`` = the pair's measured cost model, Φ priced; ``params`` = draft parameters /
target parameters (the paper's A.8 / Table 10 for a draft inside the target, e.g. an EAGLE head), Φ priced
from the cost model; a number = a fixed threshold as the paper's Table 4 sweeps it, no Φ (no cost model).

``ahead`` = q̂ in (0, 1] (0, the default, is off) adds a look-ahead stop (ours, not in the GT paper): after token i
passes, the next is drafted only if it could pass with q(x_{i+1}) = q̂, i.e. STOP (verify the i drafted) when
α̂_i·q̂ ≤ price_{i+1} − ε. In a chain the draft forward that reveals q(x_{i+1}) is paid before Eq. 5 can judge it,
so a proposal that fails is a draft forward spent for nothing; q̂ = 1 skips only the proposals that no q could let
pass (the verified tokens are exactly GT's), q̂ < 1 also those a typical q would not.

Under sampling the engine verifies that last token instead of dropping it: dropping a sampled token because
of its own probability would bias the output (``actors/drafting/drafters.py::record_proposal``); greedy decoding drops
it as Eq. 5 says.
"""
from __future__ import annotations

from policies import phi as gt_phi
from policies.base import DISCARD, MORE, STOP, GenerationContext, SequencePolicy
from policies.errors import SpecsweepError

C_CHOICES = ("auto", "params")


def read_c(name: str, c_param, ctx: GenerationContext, tree: bool = False) -> float:
    """M_D / M_T for ``c_param`` (auto | params | a number), from the context's cost model where it needs one."""
    if c_param not in C_CHOICES:
        return float(c_param)
    m = ctx.costs
    if m is None:
        raise SpecsweepError(f"policy {name} with c={c_param} needs the pair's cost model; pass c=<number> or calibrate")
    if c_param == "params":
        if m.c_params is None:
            raise SpecsweepError(f"policy {name} with c=params needs both models' parameter counts (recorded when "
                                 "the pair calibrates); pass c=auto or c=<number>")
        return float(m.c_params)
    return float(m.c_tree if tree else m.c)


def phi_share(m, i: int, k_knee: int) -> float:
    """(Φ(i) − Φ(i − 1)) / M_T on cost model ``m``'s verify table: ``policies/phi.py::share``, the one definition."""
    return gt_phi.share(m.verify, m.t_target, i, k_knee)


class GT(SequencePolicy):
    """Sequence GT principle (the GT paper, Eq. 5 with Eq. 2's price): draft while α̂_i = Π_{j≤i} q(x_j) >
    c + (Φ(i) − Φ(i − 1)) / M_T − ε; the first token failing it is not verified; k_max = ``cap``. With ``ahead`` = q̂ > 0:
    STOP after token i when α̂_i·q̂ ≤ price_{i+1} − ε (the module docstring's look-ahead)."""

    name = "gt"

    def __init__(self, gamma: int = 0, c: float | str = "auto", eps: float = 0.0, cap: int = 32, ahead: float = 0.0):
        self.c_param, self.eps, self.cap, self.ahead = c, eps, cap, ahead
        self.c = None if c in C_CHOICES else float(c)
        self.gamma = cap
        self.needs_costs = self.c is None
        self.prices: list[float] = []

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self.c = read_c(self.name, self.c_param, ctx)
        if self.c_param in C_CHOICES:          # the price of token i = 1 … cap (Φ from the cost model)
            m, k = ctx.costs, ctx.costs.knee()
            self.prices = [self.c + phi_share(m, i, k) for i in range(1, self.cap + 1)]
        else:
            self.prices = [self.c] * self.cap
        self.alpha = 1.0

    def max_draft(self) -> int:
        return self.cap

    def price(self, i: int) -> float:
        """The i-th token's price in plain target steps (module docstring)."""
        return self.prices[min(i, len(self.prices)) - 1]

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        self.alpha = q_token if i == 1 else self.alpha * q_token     # α̂_i = Π_{j ≤ i} q(x_j)
        return self.judge(i)

    def judge(self, i: int) -> str:
        """Eq. 5 on the forecast ``self.alpha`` of the first i tokens: DISCARD token i when α̂_i ≤ price_i − ε, else
        STOP when the look-ahead says token i + 1 could not pass, else MORE."""
        if self.alpha <= self.price(i) - self.eps:
            return DISCARD
        if self.ahead > 0 and i < self.cap and self.alpha * self.ahead <= self.price(i + 1) - self.eps:
            return STOP                                               # token i + 1 could not pass with q = q̂
        return MORE

    def params(self) -> dict:
        return {"c": self.c_param if self.c is None else round(self.c, 6), "eps": self.eps, "cap": self.cap,
                "ahead": self.ahead}
