"""Tree policies: a policy that returns a draft *tree* instead of a length (Sequoia, Chen et al. 2024; EAGLE-2, Li et al. 2024; GT).

Static builders fix the shape from per-rank acceptance probabilities measured per pair
(``p[r-1]`` = P(the token the target accepts is the draft's rank-r candidate), unconditional,
Σ p <= 1 — Sequoia's acceptance vector; ``accept=auto`` uses the actor's measurement, or give
``accept=0.7/0.1/0.05``):

``sequoia``     Sequoia's DP under a node budget and depth limit (``policies/tree_shapes.py``).
``gt-static``   every node with α̂ > c − ε (GT Eq. 9–11), no budget; with the cost model read
                (``c=auto|params``) the n-th node by falling α̂ must also pay its share of the
                verify growth: α̂ > c − ε + (Φ(n) − Φ(n − 1)) / M_T (Eq. 6, ``policies/phi.py``).

Dynamic builders grow the tree from the draft's probabilities at run time:

``eagle2``      expand the root into its ``topk`` most likely children, then ``depth`` more
                iterations each expanding the ``topk`` frontier nodes with the highest cumulative
                draft probability into their ``topk`` most likely children (depth 5 → 6 levels,
                at most 7 tokens accepted per step with a perfect draft); finally keep the ``n``
                candidates with the highest cumulative probability (EAGLE-2, Li et al. 2024, §4.1
                expansion / §4.2 reranking: the root's expansion is not counted in ``depth``).
``gt-dynamic``  the same expansion, but the depth stops once the best node of a level has
                cumulative probability <= c − ε (GT Eq. 12), and N = min(D × B, N_max) (Eq. 13)
                with B = ``topk``. With the cost model read, level L's best node (Eq. 12's proxy for
                the level) also pays a node's share of the level's verify growth: α̂ > c − ε +
                (Φ(N_L) − Φ(N_{L−1})) / ((N_L − N_{L−1})·M_T), N_L = min(L·B, N_max) (Eq. 6; our reading:
                the level's new nodes share its growth).

``c``: ``auto`` (a level's draft forward over a plain target step, measured), ``params`` (draft over target
parameters: the paper's A.8 / Table 10) or a number (a bare threshold, the paper's Table 4; Φ not priced).
"""
from __future__ import annotations

from policies.base import GenerationContext, TreePolicy
from policies.errors import SpecsweepError
from policies.gt import C_CHOICES, phi_share, read_c
from policies.tree_shapes import Node, gt_static_tree, priced, sequoia_tree


def parse_accept(value) -> list[float] | None:
    """``accept=`` as unconditional per-rank acceptance probabilities ("0.8/0.1" → [0.8, 0.1]); None for auto."""
    if value in (None, "auto"):
        return None
    try:
        p = [float(x) for x in str(value).split("/")]
    except ValueError:
        raise SpecsweepError(f"accept={value!r}: give per-rank probabilities like 0.8/0.3/0.1, or auto") from None
    if not p or any(not (0 <= x <= 1) for x in p):
        raise SpecsweepError(f"accept={value!r}: every probability must be in [0, 1]")
    if sum(p) > 1 + 1e-6:
        raise SpecsweepError(f"accept={value!r}: the probabilities are P(accepted token is rank r), unconditional, "
                             f"and must sum to <= 1 (got {sum(p):.3g})")
    return p


class _Tree(TreePolicy):
    """What the tree builders share: the cost ratio c and the per-rank acceptance they read."""

    def _c(self, ctx: GenerationContext, c) -> float:
        if c in C_CHOICES:                       # a level's draft forward / a target step, or the parameter ratio
            return min(max(read_c(self.name, c, ctx, tree=True), 1e-6), 1 - 1e-6)
        return float(c)

    def _share(self, ctx: GenerationContext, c):
        """n ↦ (Φ(n) − Φ(n − 1)) / M_T over n verified nodes when the cost model is read, else 0 (Eq. 6)."""
        m = ctx.costs if c in C_CHOICES else None
        if m is None or m.t_target <= 0:
            return lambda n: 0.0
        k = m.knee()
        return lambda n: phi_share(m, n, k)

    def _accept(self, ctx: GenerationContext) -> list[float]:
        if self.accept is not None:
            return self.accept
        p = ctx.rank_acceptance
        if p is None:
            raise SpecsweepError(f"policy {self.name} with accept=auto needs the pair's measured per-rank acceptance")
        return list(p)


class Sequoia(_Tree):
    """Sequoia (Chen et al. 2024, "Sequoia: Scalable, Robust, and Hardware-aware Speculative Decoding", §3.1): the
    static tree maximising expected tokens per step 1 + Σ α̂ under a node budget and depth limit, found by its dynamic
    program over per-rank acceptance."""

    name = "sequoia"

    def __init__(self, gamma: int = 0, budget: int = 64, depth: int = 8, accept: str = "auto"):
        self.budget, self.depth, self.accept_param = budget, depth, accept
        self.accept = parse_accept(accept)
        self.needs_rank_acceptance = self.accept is None
        self._shape = None
        self._key = None

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        p = self._accept(ctx)
        if self._key != tuple(p):                 # the DP runs once per acceptance vector
            self._shape, self._key = sequoia_tree(p, self.budget, self.depth), tuple(p)

    def shape(self) -> list[Node]:
        return self._shape

    def params(self) -> dict:
        return {"budget": self.budget, "depth": self.depth, "accept": self.accept_param}


class GTStatic(_Tree):
    """Static GT tree ("Max-Speedup Speculative Sampling: A Generic Tree Construction Principle", Eq. 9–11): every node
    with α̂ > c − ε, no node budget; depth and branching follow from c."""

    name = "gt-static"

    def __init__(self, gamma: int = 0, c="auto", eps: float = 0.0, accept: str = "auto", max_depth: int = 16):
        self.c_param, self.eps, self.accept_param, self.max_depth = c, eps, accept, max_depth
        self.accept = parse_accept(accept)
        self.needs_rank_acceptance = self.accept is None
        self.needs_costs = c in C_CHOICES
        self._shape, self._key = None, None

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        p, c, share = self._accept(ctx), self._c(ctx, self.c_param), self._share(ctx, self.c_param)
        key = (tuple(p), c, tuple(share(n) for n in range(1, 65)))
        if self._key != key:
            self._shape = priced(gt_static_tree(p, c, self.eps, self.max_depth), p, c, self.eps, share)
            self._key = key

    def shape(self) -> list[Node]:
        return self._shape

    def params(self) -> dict:
        return {"c": self.c_param, "eps": self.eps, "accept": self.accept_param, "max_depth": self.max_depth}


class Eagle2(_Tree):
    """EAGLE-2 (Li et al. 2024, "EAGLE-2: Faster Inference of Language Models with Dynamic Draft Trees", §4.1–4.2):
    expand the ``topk`` frontier nodes of highest cumulative draft probability for ``depth`` levels after the root's
    expansion, then keep the ``n`` nodes of highest cumulative probability."""

    name = "eagle2"
    dynamic = True
    replay_blocker = "dynamic trees need the draft at every node"

    def __init__(self, gamma: int = 0, depth: int = 5, topk: int = 10, n: int = 60):
        self.depth, self.topk, self.n = depth, topk, n

    def keep_expanding(self, level: int, best_cum_prob: float) -> bool:
        """Whether the candidates of ``level`` (1-based) join the tree: the root's children (level 1)
        and ``depth`` more levels, so depth + 1 levels in all."""
        return level <= self.depth + 1

    def node_budget(self, levels: int) -> int:
        return self.n

    def params(self) -> dict:
        return {"depth": self.depth, "topk": self.topk, "n": self.n}


class GTDynamic(Eagle2):
    """Dynamic GT tree (the GT paper, Eq. 12–13): EAGLE-2's expansion continues while a level's best α̂ > c − ε, and
    N = min(D × B, N_max) nodes are kept, B = ``topk``."""

    name = "gt-dynamic"

    def __init__(self, gamma: int = 0, c="auto", eps: float = 0.0, topk: int = 10, n_max: int = 60, max_depth: int = 16):
        super().__init__(gamma, depth=max_depth, topk=topk, n=n_max)
        self.c_param, self.eps = c, eps
        self.needs_costs = c in C_CHOICES

    def reset(self, ctx: GenerationContext) -> None:
        super().reset(ctx)
        self.c = self._c(ctx, self.c_param)
        self.share = self._share(ctx, self.c_param)

    def level_share(self, level: int) -> float:
        """A node's share of level L's verify growth: (Φ(N_L) − Φ(N_{L−1})) / ((N_L − N_{L−1})·M_T) (module docstring)."""
        lo, hi = self.node_budget(level - 1), self.node_budget(level)
        return sum(self.share(n) for n in range(lo + 1, hi + 1)) / (hi - lo) if hi > lo else 0.0

    def keep_expanding(self, level: int, best_cum_prob: float) -> bool:
        """GT Eq. 12 with Eq. 6's price: a level joins while its best node's α̂ exceeds c − ε + its Φ share."""
        return level <= self.depth and best_cum_prob > self.c - self.eps + self.level_share(level)

    def node_budget(self, levels: int) -> int:
        """GT Eq. 13: N = min(D × B, N_max)."""
        return min(levels * self.topk, self.n)

    def params(self) -> dict:
        return {"c": self.c_param, "eps": self.eps, "topk": self.topk, "n_max": self.n, "max_depth": self.depth}
