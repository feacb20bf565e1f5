"""Tree policies' sizes are bounded in one line naming the valid range (``policies/registry.py``): sequoia's budget,
depth and ranks (its dynamic program, now tables, builds the largest allowed tree; the recursive form it replaced
overflowed the stack), and the grown trees' depth, top-k and node count."""
from __future__ import annotations

import random
from functools import lru_cache

import pytest

from policies.errors import SpecsweepError
from policies.registry import build
from policies.tree_shapes import Node, _bfs, sequoia_tree


# ---------------------------------------------------------------- sequoia's budget, depth and ranks
@pytest.mark.parametrize("params, rule", [
    ("budget=600,depth=600", "depth='600' is out of range: must be an integer >= 1 and <= 64"),
    ("budget=3000", "budget='3000' is out of range: must be an integer >= 1 and <= 1024"),
    ("budget=1025", "must be an integer >= 1 and <= 1024"), ("depth=65", "must be an integer >= 1 and <= 64"),
    ("budget=0", ">= 1 and <= 1024"), ("accept=" + "/".join(["0.01"] * 17), "auto or up to 16 probabilities")])
def test_sequoia_budget_depth_and_ranks_are_bounded_in_one_line(params, rule):
    spec = f"sequoia:{params}" if params.startswith("accept") else f"sequoia:accept=0.5/0.3,{params}"
    with pytest.raises(SpecsweepError, match="^sequoia: ") as err:
        build(spec)
    assert rule in str(err.value) and "\n" not in str(err.value)


def _recursive_sequoia(p, budget, max_depth):
    """The recursive form of Sequoia's DP (policies/tree_shapes.py before its tables), as the reference."""
    @lru_cache(maxsize=None)
    def best(n, d):
        return 1.0 if n == 1 else float("-inf") if d <= 1 else 1.0 + split(n - 1, d - 1, 1)

    @lru_cache(maxsize=None)
    def split(m, d, r):
        if m == 0:
            return 0.0
        if r > len(p):
            return float("-inf")
        return max(p[r - 1] * best(s, d) + split(m - s, d, r + 1) for s in range(1, m + 1))

    n = budget + 1
    while n > 1 and best(n, max_depth + 1) == float("-inf"):
        n -= 1
    tree = []

    def build_(n, d, parent, depth):
        m, r, sizes = n - 1, 1, []
        while m > 0:
            s = max(range(1, m + 1), key=lambda s: (p[r - 1] * best(s, d - 1) + split(m - s, d - 1, r + 1), -s))
            sizes.append(s)
            m, r = m - s, r + 1
        ids = []
        for rank, _ in enumerate(sizes, 1):
            tree.append(Node(parent, rank, depth))
            ids.append(len(tree) - 1)
        for idx, s in zip(ids, sizes):
            build_(s, d - 1, idx, depth + 1)

    build_(n, max_depth + 1, -1, 1)
    return _bfs(tree)


def test_the_table_dp_builds_the_trees_of_the_recursive_one():
    rng = random.Random(3)
    cases = [([0.5, 0.3], 64, 8), ([0.6, 0.2, 0.1], 12, 4), ([0.7, 0.0, 0.2], 20, 3), ([1.0], 5, 9), ([0.0], 4, 2),
             ([0.4, 0.4], 30, 40), ([0.9, 0.05, 0.03, 0.0, 0.02], 50, 6)]
    for _ in range(25):
        ranks = rng.randint(1, 6)
        raw = [rng.choice([0.0, rng.random()]) for _ in range(ranks)]
        total = sum(raw) or 1.0
        cases.append(([round(x / total * rng.uniform(0.5, 0.99), 3) for x in raw], rng.randint(1, 40),
                      rng.randint(1, 12)))
    for p, budget, depth in cases:
        assert sequoia_tree(p, budget, depth) == _recursive_sequoia(p, budget, depth), (p, budget, depth)


def test_the_largest_sequoia_tree_allowed_is_built():
    rung = [0.3, 0.15, 0.1, 0.08, 0.06, 0.05, 0.04, 0.03] + [0.01] * 8
    policy = build("sequoia:budget=1024,depth=64,accept=" + "/".join(map(str, rung)))
    tree = sequoia_tree(policy.accept, policy.budget, policy.depth)      # the recursive form: RecursionError
    assert len(tree) == 1024 and max(n.depth for n in tree) <= 64


@pytest.mark.parametrize("spec, rule", [
    ("eagle2:depth=65", "eagle2: depth='65' is out of range: must be an integer >= 1 and <= 64"),
    ("eagle2:topk=100", "eagle2: topk='100' is out of range: must be an integer >= 1 and <= 64"),
    ("eagle2:n=5000", "eagle2: n='5000' is out of range: must be an integer >= 1 and <= 1024"),
    ("gt-dynamic:n_max=2000", "gt-dynamic: n_max='2000' is out of range: must be an integer >= 1 and <= 1024"),
    ("gt-dynamic:max_depth=0", "gt-dynamic: max_depth='0' is out of range: must be an integer >= 1 and <= 64"),
    ("gt-static:max_depth=100", "gt-static: max_depth='100' is out of range: must be an integer >= 1 and <= 64")])
def test_grown_trees_are_bounded_in_one_line_and_keep_their_defaults(spec, rule):
    with pytest.raises(SpecsweepError) as err:
        build(spec, 3)
    assert str(err.value) == rule
    assert build("eagle2", 3).params() == {"depth": 5, "topk": 10, "n": 60}
    assert build("eagle2:depth=64,topk=64,n=1024", 3).params() == {"depth": 64, "topk": 64, "n": 1024}
