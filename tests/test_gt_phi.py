"""Φ in ``gt``, ``gt-static`` and ``gt-dynamic`` as the GT paper ("Max-Speedup Speculative Sampling: A Generic Tree
Construction Principle") defines it: a token priced at M_D + Φ_{M_T} (Eq. 2, 6, 15, 18), Φ zero below the measured
knee K (``policies/phi.py``); hand-worked cases named by the paper's equation or table."""
from __future__ import annotations

import pytest

from policies.base import DISCARD, MORE, GenerationContext
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.phi import NO_KNEE, knee
from policies.registry import build


def cpu_costs() -> CostModel:
    """A CPU-like pair: a step verifying one draft costs 1.3× a plain forward (K = 1); M_D = 1 ms, o = 2 ms, so
    M_T = T(1) + o = 12 ms and c = 1/12. Φ(k) = T(k + 1) − T(1): 3, 4, 5, 6, 7, 8 ms for k = 1 … 6."""
    m = CostModel.measured(0.001, {1: 0.010, 2: 0.013, 4: 0.015, 8: 0.019})
    m.overhead = 0.002
    return m


def gpu_costs() -> CostModel:
    """A GPU-like pair: T flat up to 8 tokens, then 1.25 ms per token; M_D / M_T = 0.109 (the paper's Table 4,
    Vicuna-7B: the theoretical c = 0.109)."""
    return CostModel.measured(0.00109, {1: 0.010, 8: 0.010, 16: 0.020})


def verified(policy, qs) -> int:
    """How many of the drafts with probabilities ``qs`` a sequence policy keeps (the failing one is discarded)."""
    for i, q in enumerate(qs, 1):
        if policy.after_draft(i, 0, q, q) == DISCARD:
            return i - 1
    return len(qs)


def test_the_knee_is_the_first_draft_count_whose_verify_is_measurably_slower():
    assert cpu_costs().knee() == 1                             # T(2) = 13 ms > 1.05 · 10 ms
    assert gpu_costs().knee() == 8                             # T(9) = 11.25 ms is the first above 10.5 ms
    assert knee(lambda m: 0.010, 1) == NO_KNEE                 # a table that never rises has no knee
    assert knee(lambda m: 0.010 + 0.0001 * m, 2) == 6          # T(7) = 10.7 ms: the first above 1.05 · 10.1 ms (extended)


def test_phi_is_the_papers_phi_in_seconds_zero_below_the_knee():
    """Eq. 2 / 15: Φ_{M_T}(γ) = 0 while γ < K; Eq. 18: a step costs M_T + M_D·γ + Φ(γ)."""
    cpu, gpu = cpu_costs(), gpu_costs()
    assert [round(cpu.phi(k), 6) for k in range(0, 5)] == [0.0, 0.003, 0.004, 0.005, 0.006]
    assert [gpu.phi(k) for k in range(0, 8)] == [0.0] * 8 and gpu.phi(8) == pytest.approx(0.00125)
    assert cpu.verify_ratio(1) == pytest.approx((0.013 + 0.002) / 0.012)        # the old "Φ(1)", named for what it is
    for m in (cpu, gpu):                                      # Eq. 18: the prices of γ tokens sum to (M_D·γ + Φ(γ)) / M_T
        for g in (1, 3, 9):
            assert sum(m.token_price(i) for i in range(1, g + 1)) == pytest.approx(
                (m.t_draft * g + m.phi(g)) / m.t_target)
    d = CostModel.from_dict(cpu.to_dict())
    assert d.to_dict()["knee"] == 1 and d.to_dict()["phi"]["1"] == pytest.approx(0.003)


def test_gt_below_the_knee_is_eq5_exactly_table4():
    """Table 4 (Vicuna-7B): c = M_D / M_T = 0.109; on a flat verify (K = 8) `gt` keeps α̂_i > 0.109 — Eq. 5."""
    gt = build("gt", 4)
    gt.reset(GenerationContext(costs=gpu_costs()))
    assert gt.c == pytest.approx(0.109)
    assert [round(gt.price(i), 6) for i in range(1, 8)] == [0.109] * 7       # Φ = 0 below K
    assert gt.price(8) == pytest.approx(0.109 + 0.00125 / 0.010)             # the knee's draft pays T(9) − T(1)
    # homogeneous acceptance (A.9): α̂_i = 0.8^i; 0.8^9 = 0.134 > 0.109 >= 0.8^10 = 0.107 — but the 8th token
    # already pays Φ: 0.8^8 = 0.168 <= 0.234, so it is not verified
    assert verified(gt, [0.8] * 12) == 7
    gt.reset(GenerationContext(costs=gpu_costs()))
    assert verified(gt, [0.99] * 12) == 12                                    # 0.99^12 = 0.886 beats every price


def test_gt_prices_phi_on_a_cpu_and_drafts_less():
    """Eq. 2 with K = 1: token 1 costs (M_D + Φ(1)) / M_T = (1 + 3) / 12; tokens 2… cost (1 + 1) / 12."""
    gt = build("gt", 4)
    gt.reset(GenerationContext(costs=cpu_costs()))
    assert gt.price(1) == pytest.approx(4 / 12) and gt.price(2) == pytest.approx(2 / 12)
    assert verified(gt, [0.9, 0.9, 0.5, 0.4]) == 3         # α̂ = 0.9, 0.81, 0.405 pass; 0.162 <= 0.1667 fails
    gt.reset(GenerationContext(costs=cpu_costs()))
    assert verified(gt, [0.3, 0.9]) == 0                   # α̂_1 = 0.3 <= 0.333: not worth its verify jump
    bare = build("gt:c=0.0833333", 4)                      # c alone (no cost model): what gt did before Φ
    bare.reset(GenerationContext())
    assert verified(bare, [0.9, 0.9, 0.5, 0.4]) == 4
    bare.reset(GenerationContext())
    assert verified(bare, [0.3, 0.9]) == 2


def test_c_params_is_the_parameter_ratio_of_table10():
    """Table 10 (A.8): Sequoia's vicuna-68m draft against vicuna-7b / 13b / 33b: c = 0.01 / 0.005 / 0.002."""
    for target, c in ((6.74e9, 0.01), (13.0e9, 0.005), (32.5e9, 0.002)):
        m = gpu_costs()
        m.params = {"target": int(target), "draft": 68_000_000}
        assert m.c_params == pytest.approx(c, rel=0.05)
        for spec in ("gt:c=params", "gt-dynamic:c=params"):
            p = build(spec, 4)
            p.reset(GenerationContext(costs=m))
            assert p.c == pytest.approx(m.c_params)
    assert CostModel.from_dict(m.to_dict()).params == m.params
    bare = build("gt:c=params", 4)
    with pytest.raises(SpecsweepError, match="parameter counts"):
        bare.reset(GenerationContext(costs=gpu_costs()))


def test_gt_static_keeps_nodes_while_they_pay_their_phi_share():
    """Eq. 6 / 9: p = 0.7/0.1 (the rank-1 chain 0.7^d and the root's rank-2 child 0.1). With c alone at 0.1 the
    chain 0.7 … 0.7^6 = 0.118 is kept (6 nodes); on the CPU costs (c = 1/12, K = 1) the candidates by falling α̂
    are 0.7, 0.49, 0.343, 0.240, 0.168, 0.118, 0.1 and the n-th pays 1/12 + (Φ(n) − Φ(n − 1)) / M_T: 1/3 for the
    first, 1/6 after — 0.118 <= 1/6 stops it at 5 nodes."""
    bare = build("gt-static:c=0.1,accept=0.7/0.1", 4)
    bare.reset(GenerationContext())
    assert len(bare.shape()) == 6
    priced = build("gt-static:accept=0.7/0.1", 4)
    priced.reset(GenerationContext(costs=cpu_costs()))
    shape = priced.shape()
    assert len(shape) == 5 and all(n.rank == 1 for n in shape) and [n.depth for n in shape] == [1, 2, 3, 4, 5]


def test_gt_dynamic_charges_a_level_its_nodes_phi_share():
    """Eq. 12 with Eq. 6: topk = 2 → N_L = 2L; on the CPU costs level 1 costs 1/12 + Φ(2) / (2 M_T) = 1/12 + 1/6,
    level 2 costs 1/12 + (Φ(4) − Φ(2)) / (2 M_T) = 1/6. On the flat GPU table it is Eq. 12: best α̂ > 0.109."""
    d = build("gt-dynamic:topk=2", 4)
    d.reset(GenerationContext(costs=cpu_costs()))
    assert d.keep_expanding(1, 0.26) and not d.keep_expanding(1, 0.24)
    assert d.keep_expanding(2, 0.17) and not d.keep_expanding(2, 0.16)
    g = build("gt-dynamic:topk=2", 4)
    g.reset(GenerationContext(costs=gpu_costs()))                            # 6 nodes by level 3: below K = 8
    assert g.keep_expanding(3, 0.110) and not g.keep_expanding(3, 0.109)     # Table 4: c = 0.109
    assert not g.keep_expanding(5, 0.2)          # level 5 brings nodes 9–10: (Φ(10) − Φ(8)) / 2 = 1.875 ms a node


def test_the_phi_share_is_one_function_read_by_gt_and_the_trees():
    """(Φ(i) − Φ(i − 1)) / M_T comes from ``policies/phi.py::share`` alone: on the CPU pair Φ = 3, 4, 5 ms, so the
    shares of tokens 1, 2, 3 are 3/12, 1/12, 1/12 (o = 2 ms in M_T = 12 ms); gt's prices and gt-static's node shares
    read that one function."""
    from policies import phi as gt_phi
    m = cpu_costs()
    k = m.knee()
    shares = [gt_phi.share(m.verify, m.t_target, i, k) for i in (1, 2, 3)]
    assert shares == pytest.approx([3 / 12, 1 / 12, 1 / 12])
    gt = build("gt", 1)
    gt.reset(GenerationContext(costs=m))
    assert [gt.price(i) for i in (1, 2, 3)] == pytest.approx([m.c + s for s in shares])
    tree = build("gt-static:accept=0.7/0.2", 1)
    assert [tree._share(GenerationContext(costs=m), "auto")(n) for n in (1, 2, 3)] == pytest.approx(shares)
    assert [m.token_price(i) - m.c for i in (1, 2, 3)] == pytest.approx(shares)
