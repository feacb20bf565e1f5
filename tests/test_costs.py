"""The cost curve: monotone fit of noisy verify timings, and both papers' cost ratios named apart."""
import pytest

from policies.costs import CostCurve, monotone


def test_monotone_pools_adjacent_violators_by_hand():
    # t(4) = 2.61 s above t(8) = 1.5 and t(16) = 1.36: the three pool to their mean (2.61 + 1.5 + 1.36) / 3 = 1.8233
    fit = monotone({1: 1.0, 2: 1.2, 4: 2.61, 8: 1.5, 16: 1.36})
    assert fit == pytest.approx({1: 1.0, 2: 1.2, 4: 1.8233333, 8: 1.8233333, 16: 1.8233333})
    # a dip then recovery: 2 and 4 pool to 0.9, below t(1) = 1.0, so 1, 2, 4 pool to (1.0 + 1.0 + 0.8) / 3
    assert monotone({1: 1.0, 2: 1.0, 4: 0.8, 8: 2.0}) == pytest.approx({1: 14 / 15, 2: 14 / 15, 4: 14 / 15, 8: 2.0})
    already = {1: 0.02, 2: 0.021, 4: 0.03}
    assert monotone(already) == already


def test_both_cost_ratios_named():
    c = CostCurve(t_draft=0.005, t_verify={1: 0.04, 2: 0.05}, raw_verify={1: 0.04, 2: 0.03})
    assert c.c == pytest.approx(0.125)                    # GT: M_D / M_T
    assert c.target_over_draft == pytest.approx(8.0)      # GammaTune's ratio T_target / T_draft
    d = c.to_dict()
    assert d["c"] == pytest.approx(0.125) and d["target_over_draft"] == pytest.approx(8.0)
    assert CostCurve.from_dict(d).raw_verify == {1: 0.04, 2: 0.03}
