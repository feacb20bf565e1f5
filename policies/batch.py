"""Batch-level policies: one decision for every row of a batch each step.

``batch-schedule``
    γ as a function of the batch size, vLLM's speculative config keyed by batch size: the γ of the
    largest listed size ≤ B, and no speculation above ``off_above`` rows.
``tetris``
    Tetris (Wu et al., "TETRIS: Optimal Draft Token Selection for Batch Speculative Decoding",
    ACL 2025): every row drafts γ; a budget of ``round(per_row · B)`` verified draft tokens goes to
    the (row, position) candidates with the highest estimated acceptance Π_{j ≤ i} q(x_j) — greedily,
    so each row gets a prefix (its products only fall along the row).
``gt-batch``
    The GT principle ("Max-Speedup Speculative Sampling: A Generic Tree Construction Principle",
    Eq. 5: verify a token while its estimated acceptance α̂ exceeds its cost c) over the batch:
    the rows' level-L drafts are verified while Σ_b α̂_b / B > c_B(L), the price of that level in
    plain batch steps, c_B(L) = (T_d(B) + T_B(L + 1) − T_B(L)) / T_B(1) from the pair's batch cost
    surface (``policies/costs.py``), or a fixed ``c``. A plain batch step yields B tokens, so
    Σ α̂_b / B is the level's expected yield in plain steps; at B = 1 the rule is Eq. 5 with the
    verify slope counted. The level that fails the test is not verified (greedy).
"""
from __future__ import annotations

from typing import Sequence

from policies.base import BatchPolicy, GenerationContext
from policies.errors import SpecsweepError


def parse_schedule(text: str) -> dict[int, int] | None:
    """``"1:4/8:2/32:1"`` → {1: 4, 8: 2, 32: 1} (batch size ≥ 1 : γ ≥ 0), or None when malformed."""
    out: dict[int, int] = {}
    try:
        for item in str(text).split("/"):
            b, _, g = item.partition(":")
            b, g = int(b), int(g)
            if b < 1 or g < 0 or b in out:
                return None
            out[b] = g
    except ValueError:
        return None
    return out or None


class BatchSchedule(BatchPolicy):
    """γ(B) from a batch-size schedule; no speculation above ``off_above`` rows (vLLM's batch-size keyed config)."""

    name = "batch-schedule"

    def __init__(self, gamma: int = 4, schedule: str = "1:4/4:3/16:2", off_above: int = 32):
        self.schedule_text, self.off_above = schedule, off_above
        self.schedule = parse_schedule(schedule)
        if self.schedule is None:
            raise SpecsweepError(f"batch-schedule: schedule={schedule!r} is not like 1:4/8:2 (batch size:γ)")

    def gamma_for(self, rows: int) -> int:
        """γ at ``rows`` rows: the entry of the largest listed size ≤ rows (the smallest entry below it); 0 above
        ``off_above``."""
        if rows > self.off_above:
            return 0
        sizes = sorted(self.schedule)
        return self.schedule[max([b for b in sizes if b <= rows], default=sizes[0])]

    def caps(self, caps: Sequence[int]) -> list[int]:
        g = self.gamma_for(len(caps))
        return [min(c, g) for c in caps]

    def params(self) -> dict:
        return {"schedule": self.schedule_text, "off_above": self.off_above}


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
    """The GT principle over the batch: verify level L while Σ_b α̂_b / B > c_B(L) (module docstring)."""

    name = "gt-batch"

    def __init__(self, gamma: int = 0, c: float | str = "auto", cap: int = 16):
        self.c_param, self.cap = c, cap
        self.c = None if c == "auto" else float(c)
        self.needs_costs = self.c is None
        self.rows, self.cut = 1, None

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        if self.c is None and ctx.costs is None:
            raise SpecsweepError("policy gt-batch with c=auto needs the pair's cost model; pass c=<number> or calibrate")

    def level_cost(self, rows: int, level: int) -> float:
        """c_B(L): another verified level's price in plain batch steps (module docstring)."""
        if self.c is not None:
            return self.c
        m = self.ctx.costs
        plain = m.batch_verify(rows, 1)
        extra = m.batch_draft(rows) + m.batch_verify(rows, level + 1) - m.batch_verify(rows, level)
        return extra / plain if plain > 0 else float("inf")

    def caps(self, caps: Sequence[int]) -> list[int]:
        self.rows, self.cut = len(caps), None
        return [min(c, self.cap) for c in caps]

    def keep_drafting(self, level: int, alphas: dict[int, float]) -> set[int]:
        if sum(alphas.values()) / self.rows > self.level_cost(self.rows, level):
            return set(alphas)
        self.cut = level - 1                      # the failing level is not verified
        return set()

    def select(self, q_tokens: Sequence[Sequence[float]]) -> list[int]:
        return [len(q) if self.cut is None else min(len(q), self.cut) for q in q_tokens]

    def params(self) -> dict:
        return {"c": self.c_param if self.c is None else round(self.c, 6), "cap": self.cap}
