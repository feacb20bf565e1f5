"""Sequoia's DP and the GT static rule on hand-worked acceptance vectors."""
import pytest

from policies.errors import SpecsweepError
from policies.tree_shapes import Node, expected_tokens, gt_static_tree, sequoia_tree


def shape(tree):
    """Paths of ranks from the root, e.g. (1, 1) = rank-1 child of the rank-1 child."""
    out = []
    for i, n in enumerate(tree):
        path, j = [], i
        while j >= 0:
            path.append(tree[j].rank)
            j = tree[j].parent
        out.append(tuple(reversed(path)))
    return sorted(out)


@pytest.mark.parametrize("p,budget,depth,paths,value", [
    # chain .8 + .64 = 1.44 beats siblings .8 + .1
    ([0.8, 0.1], 2, 2, [(1,), (1, 1)], 2.44),
    # siblings .5 + .4 = .9 beat the chain .5 + .25
    ([0.5, 0.4], 2, 2, [(1,), (2,)], 1.9),
    # {1, 2, 1-1}: .5 + .4 + .25 = 1.15 beats {1, 2, 2-1} (1.10) and {1, 1-1, 1-2} (.95)
    ([0.5, 0.4], 3, 3, [(1,), (1, 1), (2,)], 2.15),
    # depth 1 only: the two ranks, budget unused beyond the number of ranks
    ([0.5, 0.4], 5, 1, [(1,), (2,)], 1.9),
    # a long chain when the top rank is near certain: .9 + .81 + .729
    ([0.9, 0.05], 3, 8, [(1,), (1, 1), (1, 1, 1)], 1 + 0.9 + 0.81 + 0.729),
])
def test_sequoia_dp_known_optimum(p, budget, depth, paths, value):
    tree = sequoia_tree(p, budget=budget, max_depth=depth)
    assert shape(tree) == sorted(paths)
    assert expected_tokens(tree, p) == pytest.approx(value)
    assert all(n.depth <= depth for n in tree) and len(tree) <= budget
    assert all(tree[n.parent].depth < n.depth for n in tree if n.parent >= 0)   # breadth-first order


def test_gt_static_keeps_exactly_the_nodes_above_c():
    # p = (.8, .3), c = .2: chain .8^k for k <= 7 (.8^7 = .2097, .8^8 = .168); rank 2 at the root (.3);
    # (1, 2) and (2, 1) = .24; everything else <= .2 (.192, .09, ...)
    tree = gt_static_tree([0.8, 0.3], c=0.2)
    expect = [tuple([1] * k) for k in range(1, 8)] + [(2,), (1, 2), (2, 1)]
    assert shape(tree) == sorted(expect)
    # ε lowers the bar to .15. α̂ = .8^a · .3^b: b = 0 needs a <= 8 (.8^8 = .168) → 8 nodes; b = 1 needs
    # .8^a > .5, a <= 3 → paths with one rank-2 edge among a + 1 edges: 1 + 2 + 3 + 4 = 10; b = 2 is <= .09
    loose = gt_static_tree([0.8, 0.3], c=0.2, eps=0.05)
    assert len(loose) == 18
    assert max(n.depth for n in loose) == 8


@pytest.mark.parametrize("kw", [dict(budget=0), dict(max_depth=0)])
def test_bad_tree_parameters(kw):
    with pytest.raises(SpecsweepError):
        sequoia_tree([0.5], **kw)
    with pytest.raises(SpecsweepError, match="c must be in"):
        gt_static_tree([0.5], c=1.0)
