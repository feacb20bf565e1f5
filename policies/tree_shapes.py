"""Static draft-tree shapes from per-rank acceptance probabilities (numbers only).

``p[r-1]`` is the *unconditional* probability that the token the target accepts at a
node is the draft's rank-r candidate there (Sequoia, Chen et al. 2024, §3.1,
"positional acceptance assumption": the acceptance vector's entries are the
probabilities of mutually exclusive events, so Σ_r p_r <= 1). It is *not*
P(rank r accepted | ranks < r rejected): a conditional vector c converts with
p_r = c_r · Π_{s<r} (1 − c_s) (:func:`unconditional`). A node reached from the root
through ranks r_1 … r_d is on the accepted path with probability α̂ = Π_j p[r_j − 1],
and a tree's expected tokens per step is 1 + Σ_nodes α̂ (the bonus token plus every
node on the accepted path; Sequoia §3.1, F(T) = Σ_v f(v)).

``sequoia_tree``  maximises that sum under a node budget and a depth limit by
                  Sequoia's dynamic program (Sequoia §3.1, Eq. for c(n, d)):
                  best(n, d) = 1 + max over splits of n − 1 nodes among children
                  ranked 1, 2, … of Σ_i p_i · best(n_i, d − 1).
``gt_static_tree`` keeps exactly the nodes with α̂ > c − ε (GT paper Eq. 9–11): no
                  budget; depth and branching follow from c. ``priced`` then keeps, in
                  order of falling α̂, the n-th node while α̂ > c − ε + its share of the
                  verify growth Φ (GT Eq. 6: a node costs M_D + Φ_{M_T}(N); ``policies/phi.py``).
A tree is a list of nodes in breadth-first order; node = (parent index or −1 for the
root, rank among its siblings, depth).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from policies.errors import SpecsweepError


@dataclass(frozen=True)
class Node:
    """One draft-tree node: parent index (−1 = child of the last committed token), rank among the parent's draft
    candidates (1 = most likely) and depth (1 = the root's children)."""

    parent: int   # index in the tree list, -1 = child of the last committed token
    rank: int     # 1 = the draft's most likely candidate at the parent
    depth: int    # 1 for the root's children


def node_acceptance(tree: list[Node], p: list[float]) -> list[float]:
    """α̂ of every node: the product of the per-rank acceptances p[r − 1] along its path from the root (Sequoia, Chen
    et al. 2024, §3.1)."""
    out: list[float] = []
    for n in tree:
        base = 1.0 if n.parent < 0 else out[n.parent]
        out.append(base * p[n.rank - 1])
    return out


def expected_tokens(tree: list[Node], p: list[float]) -> float:
    """1 + Σ α̂(v): expected tokens emitted per verification of ``tree``."""
    return 1.0 + sum(node_acceptance(tree, p))


SUM_TOLERANCE = 1e-6


def unconditional(conditional: list[float]) -> list[float]:
    """p_r = c_r · Π_{s<r} (1 − c_s): P(accepted token is rank r) from P(rank r | ranks < r rejected)."""
    out, left = [], 1.0
    for c in conditional:
        out.append(c * left)
        left *= 1.0 - c
    return out


def _check(p, **positive):
    if not p or any(not (0.0 <= x <= 1.0) for x in p):
        raise SpecsweepError(f"acceptance probabilities must be a non-empty list in [0, 1], got {p}")
    if sum(p) > 1.0 + SUM_TOLERANCE:
        raise SpecsweepError(f"per-rank acceptance probabilities are unconditional (P(accepted token is rank r)) and "
                             f"must sum to <= 1, got sum {sum(p):.4g} for {p}")
    for name, v in positive.items():
        if v < 1:
            raise SpecsweepError(f"tree {name} must be >= 1, got {v}")


def _scaled(q: float, row: np.ndarray) -> np.ndarray:
    """q · row with −inf (no subtree fits) kept −inf, also for q = 0."""
    return q * row if q > 0 else np.where(row == -np.inf, -np.inf, 0.0)


def _sequoia_tables(p: list[float], n_max: int, levels: int) -> tuple[list, list]:
    """Sequoia's DP filled bottom-up (no recursion, numpy rows) for n <= ``n_max`` nodes and d <= ``levels``.

    ``best[d][n]``: max Σ α̂ inside a subtree of n nodes (its root included, scored 1) and depth <= d levels
    (1 for n = 1, −inf when no such subtree fits). ``split[d][r][m]``: best Σ p_r · best[d][size] over children
    ranked r, r + 1, … using exactly m nodes (0 for m = 0, −inf past the last rank). A child row is p_r · best
    with −inf kept (0 · −inf is no candidate). Each ``split`` row is one max-plus convolution (an m × m table):
    the DP costs levels · ranks · n_max² additions, in numpy."""
    ranks = min(len(p), n_max)                  # a rank past the node count never holds a child
    width = n_max - 1                           # m = 0 … width
    none = np.full(width + 1, -np.inf)
    best = [None, np.concatenate(([-np.inf, 1.0], np.full(n_max - 1, -np.inf)))]
    split: list = [None]
    for d in range(1, levels):
        rows = [None] * (ranks + 2)
        rows[ranks + 1] = none.copy()
        rows[ranks + 1][0] = 0.0
        for r in range(ranks, 0, -1):
            child = _scaled(p[r - 1], best[d])[1:width + 1][::-1]                    # s = width … 1
            padded = np.concatenate((np.full(width, -np.inf), rows[r + 1]))        # padded[k + width] = row[k]
            table = sliding_window_view(padded, width)[1:width + 1] + child          # [m − 1, width − s]
            rows[r] = np.concatenate(([0.0], table.max(axis=1)))
        split.append(rows)
        best.append(np.concatenate(([-np.inf, 1.0], 1.0 + rows[1][1:n_max])))
    return best, split


def sequoia_tree(p: list[float], budget: int = 64, max_depth: int = 8) -> list[Node]:
    """The tree of at most ``budget`` draft nodes and depth ``max_depth`` maximising expected tokens
    (:func:`_sequoia_tables`; ties go to the smaller first subtree)."""
    _check(p, budget=budget, depth=max_depth)
    p = list(p)
    levels = min(max_depth, budget) + 1        # a tree of budget nodes is no deeper than budget
    best, split = _sequoia_tables(p, budget + 1, levels)
    # the largest useful tree within the budget (adding a node never lowers the optimum: α̂ >= 0)
    n = budget + 1
    while n > 1 and best[levels][n] == -np.inf:
        n -= 1
    tree: list[Node] = []

    def build(n: int, d: int, parent: int, depth: int):
        """Append the children of ``parent`` (a subtree of n nodes, depth limit d) breadth by rank."""
        m, r, sizes = n - 1, 1, []
        while m > 0:
            child = _scaled(p[r - 1], best[d - 1])[1:m + 1]
            s = 1 + int(np.argmax(child + split[d - 1][r + 1][m - 1::-1][:m]))       # the first maximum: smallest s
            sizes.append(s)
            m -= s
            r += 1
        ids = []
        for rank, _ in enumerate(sizes, 1):
            tree.append(Node(parent, rank, depth))
            ids.append(len(tree) - 1)
        for idx, s in zip(ids, sizes):
            build(s, d - 1, idx, depth + 1)

    build(n, levels, -1, 1)
    return _bfs(tree)


def gt_static_tree(p: list[float], c: float, eps: float = 0.0, max_depth: int = 64, max_nodes: int = 4096) -> list[Node]:
    """Every node with α̂ > c − ε (GT Eq. 9); ranks and depth follow (Eq. 10–11)."""
    _check(p, depth=max_depth)
    if not (0.0 < c < 1.0):
        raise SpecsweepError(f"cost ratio c must be in (0, 1), got {c}")
    tree: list[Node] = []
    frontier = [(-1, 1.0, 1)]
    while frontier and len(tree) < max_nodes:
        nxt = []
        for parent, a, depth in frontier:
            if depth > max_depth:
                continue
            for r, pr in enumerate(p, 1):
                if a * pr <= c - eps or len(tree) >= max_nodes:
                    continue
                tree.append(Node(parent, r, depth))
                nxt.append((len(tree) - 1, a * pr, depth + 1))
        frontier = nxt
    return tree


def priced(tree: list[Node], p: list[float], c: float, eps: float, share) -> list[Node]:
    """The nodes of ``tree`` taken by falling α̂ (ties: tree order, so parents first) while the n-th has α̂ > c − ε +
    share(n), share(n) = (Φ(n) − Φ(n − 1)) / M_T (GT Eq. 6 with Eq. 18's sum; ``policies/phi.py``); ancestor-closed,
    since a child's α̂ never exceeds its parent's. Breadth-first order kept, parents remapped."""
    alpha = node_acceptance(tree, p)
    keep = set()
    for n, i in enumerate(sorted(range(len(tree)), key=lambda i: (-alpha[i], i)), 1):
        if alpha[i] <= c - eps + share(n):
            break
        keep.add(i)
    new = {old: k for k, old in enumerate(sorted(keep))}
    return [Node(-1 if tree[i].parent < 0 else new[tree[i].parent], tree[i].rank, tree[i].depth) for i in sorted(keep)]


def _bfs(tree: list[Node]) -> list[Node]:
    """Reorder to breadth-first (depth, then parent order, then rank), remapping parents."""
    order = sorted(range(len(tree)), key=lambda i: (tree[i].depth, _path(tree, i)))
    new = {old: k for k, old in enumerate(order)}
    return [Node(-1 if tree[i].parent < 0 else new[tree[i].parent], tree[i].rank, tree[i].depth) for i in order]


def _path(tree, i):
    out = []
    while i >= 0:
        out.append(tree[i].rank)
        i = tree[i].parent
    return tuple(reversed(out))
