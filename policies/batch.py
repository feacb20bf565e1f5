"""Batch-level policies (docs/definitions.md, Batches): one decision for every row of a batch each step.

``batch-schedule``
    γ as a function of the batch size, in TensorRT-LLM's or vLLM's form (``policies/batch_schedule.py``).
``tetris``
    Tetris (Wu et al., "TETRIS: Optimal Draft Token Selection for Batch Speculative Decoding",
    ACL 2025): every row drafts γ; a budget of ``round(per_row · B)`` verified draft tokens goes to
    the (row, position) candidates with the highest estimated acceptance Π_{j ≤ i} q(x_j) — greedily,
    so each row gets a prefix (its products only fall along the row).
``gt-batch``
    **Our extension** of the GT principle ("Max-Speedup Speculative Sampling: A Generic Tree Construction
    Principle") to a batch of chains. The paper has no batch equation: its batch results (§4.5.2, Table 5;
    A.6, Table 9) run its single-sequence / tree rule inside a batching engine. What we take from it is the
    test of Eq. 5 with the price of Eq. 2 / 18: a drafted level is worth verifying while its estimated yield
    exceeds its price. What is ours:

    - the price of level L in plain batch steps, c_B(L) = (T_d(B) + Φ_B(L) − Φ_B(L − 1)) / (T_B(1) + o):
      one batched draft forward plus the level's verify growth Φ_B on the B-row table (the paper's Φ,
      zero below that table's knee; ``policies/phi.py``), over a plain batch step with the per-step
      overhead o counted (``policies/costs.py::level_price``); ``c=params`` puts the parameter ratio in
      place of T_d(B) / (T_B(1) + o), a number replaces the whole price;
    - ``rule=mean``: the rows' level-L drafts are verified while Σ_b α̂_b / B > c_B(L) — a plain batch step
      yields B tokens, so Σ α̂_b / B is the level's expected yield in plain batch steps; the first level failing
      it is not verified by any row and drafting stops;
    - ``rule=row``: each row's level-L token is judged on its own α̂_b against the same level price; a row
      whose token fails stops and does not verify it, the others go on;
    - the test runs on every drafted level in ``select`` — also the level at which every row stopped at its
      cap, which no ``keep_drafting`` call sees — and ``keep_drafting`` only stops drafting early.

    At B = 1 with the single-row costs both rules are ``gt``'s test (``policies/gt.py``), token for token.
    Greedy only drops drafts: under sampling every drafted token is verified.
"""
from __future__ import annotations

from typing import Sequence

from policies.base import BatchPolicy, GenerationContext
from policies.batch_schedule import BatchSchedule  # noqa: F401  (the registry's batch policies live here)
from policies.errors import SpecsweepError
from policies.gt import C_CHOICES, read_c

RULES = ("mean", "row")


class Tetris(BatchPolicy):
    """Tetris: draft γ per row, verify the ``round(per_row · B)`` candidates with the highest Π q (module docstring)."""

    name = "tetris"

    def __init__(self, gamma: int = 6, per_row: float = 2.0):
        self.gamma, self.per_row = gamma, per_row

    def caps(self, caps: Sequence[int]) -> list[int]:
        return [min(c, self.gamma) for c in caps]

    def select(self, q_tokens: Sequence[Sequence[float]]) -> list[int]:
        budget = int(round(self.per_row * len(q_tokens)))
        cands = []                               # (−Π q, row, position): best first, ties by row then position
        for b, qs in enumerate(q_tokens):
            alpha = 1.0
            for i, q in enumerate(qs):
                alpha *= q
                cands.append((-alpha, b, i))
        keep = [0] * len(q_tokens)
        for _, b, i in sorted(cands)[:budget]:
            keep[b] = max(keep[b], i + 1)         # Π q falls along a row, so the chosen positions form a prefix
        return keep

    def params(self) -> dict:
        return {"per_row": self.per_row}


class GTBatch(BatchPolicy):
    """Our batch extension of the GT principle: verify level L while the rows' yield beats c_B(L) (module docstring)."""

    name = "gt-batch"

    def __init__(self, gamma: int = 0, c: float | str = "auto", cap: int = 16, rule: str = "mean"):
        if rule not in RULES:
            raise SpecsweepError(f"gt-batch: rule={rule!r} must be one of {', '.join(RULES)}")
        self.c_param, self.cap, self.rule = c, cap, rule
        self.c = None if c in C_CHOICES else float(c)
        self.needs_costs = self.c is None
        self.rows, self.cut = 1, None
        self._prices: dict[tuple[int, int], float] = {}
        self._knees: dict[int, int] = {}

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self._prices, self._knees = {}, {}
        self.c_base = read_c(self.name, self.c_param, ctx) if self.c is None else self.c

    def level_cost(self, rows: int, level: int) -> float:
        """c_B(L): level L's price in plain batch steps (module docstring)."""
        if self.c is not None:
            return self.c
        key = (rows, level)
        if key not in self._prices:
            m = self.ctx.costs
            if rows not in self._knees:
                self._knees[rows] = m.batch_knee(rows)
            price = m.level_price(rows, level, self._knees[rows])
            if self.c_param == "params":         # the parameter ratio replaces the measured draft share
                plain = m.batch_verify(rows, 1) + m.overhead
                price += self.c_base - (m.batch_draft(rows) / plain if plain > 0 else 0.0)
            self._prices[key] = price
        return self._prices[key]

    def caps(self, caps: Sequence[int]) -> list[int]:
        self.rows, self.cut = len(caps), None
        return [min(c, self.cap) for c in caps]

    def keep_drafting(self, level: int, alphas: dict[int, float]) -> set[int]:
        price = self.level_cost(self.rows, level)
        if self.rule == "row":
            return {b for b, a in alphas.items() if a > price}
        return set(alphas) if sum(alphas.values()) / self.rows > price else set()

    def select(self, q_tokens: Sequence[Sequence[float]]) -> list[int]:
        """How many drafts each row verifies: the rule applied to every drafted level (module docstring)."""
        rows = len(q_tokens)
        alpha = [1.0] * rows
        keep = [len(q) for q in q_tokens]
        going = [b for b in range(rows) if keep[b] > 0]
        level = 0
        while going:
            level += 1
            for b in going:
                alpha[b] *= q_tokens[b][level - 1]
            price = self.level_cost(rows, level)
            if self.rule == "row":
                failed = [b for b in going if alpha[b] <= price]
            else:
                failed = going if sum(alpha[b] for b in going) / rows <= price else []
            for b in failed:
                keep[b] = level - 1               # the failing level is not verified
            going = [b for b in going if b not in failed and keep[b] > level]
        return keep

    def params(self) -> dict:
        return {"c": self.c_param if self.c is None else round(self.c, 6), "cap": self.cap, "rule": self.rule}
