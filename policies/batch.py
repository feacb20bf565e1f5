"""Batch-level policies (docs/definitions.md, Batches): one decision for every row of a batch each step.

``batch-schedule``
    γ as a function of the batch size, in TensorRT-LLM's or vLLM's form (``policies/batch_schedule.py``).
``tetris``
    Tetris (Wu et al., "TETRIS: Optimal Draft Token Selection for Batch Speculative Decoding", ACL 2025), as its
    public code runs it (``ZhaoxuanWu/Tetris``, ``vllm/spec_decode/spec_decode_worker.py``, ``_run_speculative_decoding_step``,
    and ``vllm/spec_decode/tetris.py``, ``select_proposals_no_priority``): ``tetris:base=K,extra=E`` drafts K + E
    tokens per row (``--num-speculative-tokens K+E``); the capacity is K·B verified draft tokens
    (``capacity = (proposal_len − extra) · B``), given to the (row, position) candidates with the highest
    Σ_{j≤i} log q(x_j) (= the highest Π q, the estimated acceptance of the prefix), each row verifying up to its
    furthest chosen position (``scatter_max``): a prefix, as Π q only falls along a row. Below
    ``--tetris-turn-on-batch-size`` 2 (B = 1) it is off and the row drafts plain K (the worker takes the extra
    lookahead back). ``base`` defaults to the initial γ, so ``tetris`` and ``fixed`` at one γ verify the same
    K·B tokens. Greedy only (``sampling_blocker``): the selection drops a sampled draft for its own q, which biases
    sampling (the paper's experiments run at temperature 0). Ties (equal Π q) go to the lower row, then the
    earlier position (ours; ``torch.topk`` leaves them unspecified).
``gt-batch``
    **Our extension** of the GT principle ("Max-Speedup Speculative Sampling: A Generic Tree Construction
    Principle") to a batch of chains. The paper has no batch equation: its batch results (§4.5.2, Table 5;
    A.6, Table 9) run its single-sequence / tree rule inside a batching engine. What we take from it is the
    test of Eq. 5 with the price of Eq. 2 / 18: a drafted level is worth verifying while its estimated yield
    exceeds its price. What is ours:

    - the price of level L in plain batch steps, c_B(L) = (d₀(B) + T_d(B) + Φ_B(L) − Φ_B(L − 1)) / (T_B(1) + o_B):
      a step's draft phase drafting one batched level plus the level's verify growth Φ_B on the B-row table (the
      paper's Φ, zero below that table's knee; ``policies/phi.py``), over a plain batch step with the B-row step's
      overhead o_B counted (``policies/costs.py::level_price``); ``c=params`` puts the parameter ratio in place of
      (d₀(B) + T_d(B)) / (T_B(1) + o_B), a number replaces the whole price;
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


OLD_TETRIS = ("tetris: per_row= (draft γ, verify round(per_row·B)) is not Tetris's rule; give tetris:base=K,extra=E "
              "(each row drafts K + E, the batch verifies K·B; base defaults to the initial γ, extra to 2)")

TETRIS_ON = 2           # Tetris's --tetris-turn-on-batch-size in its run scripts: on from two rows


class Tetris(BatchPolicy):
    """Tetris: each row drafts K + E, the batch verifies the K·B candidates with the highest Π q; plain K below
    B = 2 (module docstring)."""

    name = "tetris"
    sampling_blocker = ("Tetris's selection drops a sampled draft for its own probability q(x), which biases the "
                        "output; its experiments run at temperature 0")

    def __init__(self, gamma: int = 6, base: int = 0, extra: int = 2):
        self.base = base if base > 0 else gamma
        self.base_param, self.extra = base, extra
        self.on = False

    def caps(self, caps: Sequence[int]) -> list[int]:
        self.on = len(caps) >= TETRIS_ON
        k = self.base + self.extra if self.on else self.base
        return [min(c, k) for c in caps]

    def select(self, q_tokens: Sequence[Sequence[float]]) -> list[int]:
        """How many drafts each row verifies: its furthest position among the K·B best candidates by Π q."""
        if len(q_tokens) < TETRIS_ON:
            return [len(q) for q in q_tokens]
        capacity = self.base * len(q_tokens)
        cands = []                               # (−Π q, row, position): best first, ties by row then position
        for b, qs in enumerate(q_tokens):
            alpha = 1.0
            for i, q in enumerate(qs):
                alpha *= q
                cands.append((-alpha, b, i))
        keep = [0] * len(q_tokens)
        for _, b, i in sorted(cands)[:capacity]:
            keep[b] = max(keep[b], i + 1)         # the furthest chosen position (scatter_max); a prefix
        return keep

    def params(self) -> dict:
        return {"base": self.base_param, "extra": self.extra}


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
                plain = m.batch_verify(rows, 1) + m.batch_overhead(rows)
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
