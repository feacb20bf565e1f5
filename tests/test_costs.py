"""The one cost model: monotone fit of noisy verify timings, both papers' cost ratios named apart, one class
for the measured and the fitted model, and the dicts stored before there was one model still read."""
import json

import pytest

from policies.costs import CostModel
from policies.knots import monotone


def test_monotone_pools_adjacent_violators_by_hand():
    # t(4) = 2.61 s above t(8) = 1.5 and t(16) = 1.36: the three pool to their mean (2.61 + 1.5 + 1.36) / 3 = 1.8233
    fit = monotone({1: 1.0, 2: 1.2, 4: 2.61, 8: 1.5, 16: 1.36})
    assert fit == pytest.approx({1: 1.0, 2: 1.2, 4: 1.8233333, 8: 1.8233333, 16: 1.8233333})
    # a dip then recovery: 2 and 4 pool to 0.9, below t(1) = 1.0, so 1, 2, 4 pool to (1.0 + 1.0 + 0.8) / 3
    assert monotone({1: 1.0, 2: 1.0, 4: 0.8, 8: 2.0}) == pytest.approx({1: 14 / 15, 2: 14 / 15, 4: 14 / 15, 8: 2.0})
    already = {1: 0.02, 2: 0.021, 4: 0.03}
    assert monotone(already) == already


def test_both_cost_ratios_named():
    c = CostModel.measured(0.005, {1: 0.04, 2: 0.05}, raw_verify={1: 0.04, 2: 0.03})
    assert c.c == pytest.approx(0.125)                    # GT: M_D / M_T
    assert c.target_over_draft == pytest.approx(8.0)      # GammaTune's ratio T_target / T_draft
    d = json.loads(json.dumps(c.to_dict()))
    assert d["c"] == pytest.approx(0.125) and d["target_over_draft"] == pytest.approx(8.0)
    assert CostModel.from_dict(d).raw_verify == {1: 0.04, 2: 0.03}
    assert CostModel.from_dict(d) == c


def test_measured_model_is_the_interpolated_curve():
    c = CostModel.measured(0.002, {1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025}, context=256)
    assert c.t_draft == 0.002 and c.verify(1) == 0.02 and c.verify(4) == 0.022
    assert c.verify(3) == pytest.approx(0.0215)                       # halfway between 2 and 4
    assert c.verify(12) == pytest.approx(0.028)                       # past the last knot along the 4–8 slope
    assert c.draft_time(3, 0, 999) == pytest.approx(0.006)            # no context terms in a measurement
    assert c.verify_time(4, 999) == c.verify(4)
    assert c.t_verify == {1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025}
    free = c.with_t_draft(1e-6)
    assert free.t_draft == 1e-6 and free.verify(4) == c.verify(4) and c.t_draft == 0.002


def test_a_cost_curve_stored_before_the_merge_reads_back():
    """actors.json / MLflow artifacts written with the old CostCurve.to_dict."""
    old = {"t_draft": 0.004, "t_verify": {"1": 0.04, "2": 0.041, "4": 0.043}, "context": 256, "device": "cpu",
           "c": 0.1, "c_meaning": "GT c = M_D/M_T", "target_over_draft": 10.0, "raw_verify": {}}
    m = CostModel.from_dict(old)
    assert (m.t_draft, m.verify(1), m.verify(4), m.context) == (0.004, 0.04, 0.043, 256)
    assert m.c == pytest.approx(0.1) and m.verify(3) == pytest.approx(0.042)


def test_a_fitted_model_stored_before_the_merge_reads_back():
    """actors.json written with the old fitted CostModel.to_dict (a table) and the older line form."""
    table = {"draft": {"per_step": 1e-3, "per_proposal": 2e-3, "per_catchup": 0.0, "per_catchup_token": 1e-5,
                       "per_proposal_kctx": 4e-4},
             "verify": {"knots": [1, 2, 4], "values": [0.01, 0.015, 0.02], "per_kctx": 1e-3, "per_token_kctx": 0.0},
             "overhead": 2e-4, "residuals": {}, "n_steps": 40, "label": "x cpu", "rule": "..."}
    m = CostModel.from_dict(table)
    assert m.draft_time(3, 0, 1000) == pytest.approx(1e-3 + 3 * 2e-3 + 3 * 4e-4)
    assert m.verify_time(2, 1000) == pytest.approx(0.015 + 1e-3)
    assert m.verify_time(3, 0) == pytest.approx(0.0175) and m.overhead == 2e-4 and m.label == "x cpu"
    line = dict(table, verify={"intercept": 0.01, "multi_token": 0.002, "per_token": 0.001, "per_kctx": 0.0,
                               "per_token_kctx": 0.0})
    m = CostModel.from_dict(line)
    assert m.verify_time(1, 0) == pytest.approx(0.011) and m.verify_time(5, 0) == pytest.approx(0.017)


def test_a_fit_with_zero_target_time_still_serialises():
    """A noisy fit can clamp the one-token verify time to 0: c is then inf, not a ZeroDivisionError."""
    model = CostModel.measured(t_draft=0.001, t_verify={1: 0.0, 2: 0.0})
    assert model.c == float("inf") and model.to_dict()["c"] == float("inf")


def test_a_single_row_is_the_batch_surfaces_b1_member():
    """The surface's B = 1 member is the single-row model: ``batch_verify(1, L)`` = ``verify(L)``, ``batch_draft(1)`` =
    ``t_draft`` and ``batch_step_time(1, k, C)`` = ``step_time(k, C)``, even when a B = 1 table was stored; sizes
    between 1 and the smallest measured B > 1 interpolate from the single-row values."""
    m = CostModel.measured(0.002, {1: 0.010, 2: 0.012, 4: 0.016, 8: 0.024}, context=256)
    m.overhead = 0.001
    m.table["per_kctx"], m.table["per_token_kctx"] = 0.003, 0.0005
    m.draft["per_proposal_kctx"] = 0.0004
    m.batch = {1: {"knots": [1, 8], "values": [0.5, 0.9], "draft": 0.3},       # ignored: B = 1 is the model
               4: {"knots": [1, 8], "values": [0.030, 0.060], "draft": 0.006}}
    for width in (1, 2, 3, 5, 8):
        assert m.batch_verify(1, width) == pytest.approx(m.verify(width))
    assert m.batch_draft(1) == pytest.approx(m.t_draft)
    for k in range(6):
        for ctx in (256, 900):
            assert m.batch_step_time(1, k, ctx) == pytest.approx(m.step_time(k, ctx))
    assert m.batch_verify(2, 1) == pytest.approx(m.verify(1) + (0.030 - m.verify(1)) / 3)
    assert m.batch_draft(2) == pytest.approx(m.t_draft + (0.006 - m.t_draft) / 3)
    assert m.batch_verify(16, 8) == pytest.approx(0.060)                        # clamped past the largest size


def test_the_draft_rule_prices_an_array_of_catch_ups_as_one_at_a_time():
    import numpy as np

    m = CostModel(draft={"per_step": 0.001, "per_proposal": 0.002, "per_catchup": 0.0005, "per_catchup_token": 0.0001,
                         "per_proposal_kctx": 0.0003}, table={"knots": [1, 4], "values": [0.01, 0.02], "per_kctx": 0.0,
                                                              "per_token_kctx": 0.0})
    lags = np.arange(0, 40)
    got = m.draft_time(3, lags, 700)
    assert list(got) == pytest.approx([m.draft_time(3, int(e), 700) for e in lags])
    assert m.draft_time(0, lags, 700) == 0.0


def test_the_clocks_read_the_measured_forward_times_policies_the_non_decreasing_ones():
    """``as_measured``: raw T(m) per knot (a CPU's m = 4 can be cheaper than m = 3) and each batch entry's raw
    T_B(L); the model itself, which policies read, keeps the non-decreasing table; a model without raw values is
    returned as it is."""
    from actors.tracing.replay import BatchCostClock, CostClock

    m = CostModel.measured(0.005, {1: 0.037, 3: 0.068, 4: 0.068, 5: 0.068}, raw_verify={3: 0.077, 4: 0.060, 5: 0.066})
    m.batch = {4: {"knots": [1, 4], "values": [0.06, 0.09], "raw": [0.06, 0.08], "draft": 0.01}}
    t = m.as_measured()
    assert t.verify(4) == pytest.approx(0.060) and t.verify(3) == pytest.approx(0.077) and t.verify(1) == 0.037
    assert t.batch_verify(4, 4) == pytest.approx(0.08) and t.raw_verify == {}
    assert m.verify(4) == 0.068 and m.batch_verify(4, 4) == 0.09        # unchanged: what policies read
    assert CostClock(m).model.verify(4) == pytest.approx(0.060) and BatchCostClock(m).model.batch_verify(4, 4) == 0.08
    plain = CostModel.measured(0.005, {1: 0.037, 2: 0.05})
    assert plain.as_measured() is plain
    # a width the fit had no time for (raw 0; its non-decreasing value pooled that 0 below T(1)): interpolated
    # between the measured widths around it; at an end, the non-decreasing value
    gap = CostModel.measured(0.005, {1: 0.0228, 2: 0.0228, 3: 0.0228, 5: 0.05, 9: 0.06},
                             raw_verify={1: 0.0333, 2: 0.0352, 3: 0.0, 5: 0.0496, 9: 0.0})
    g = gap.as_measured()
    assert g.verify(3) == pytest.approx(0.0352 + (0.0496 - 0.0352) / 3) and g.verify(9) == pytest.approx(0.06)
    # a width whose fit run ran through a stall (over 1.5× a wider width's time): interpolated like a missing one;
    # the CPU's shape effect (T(3) 1.28× T(4) above) stays
    stall = CostModel.measured(0.005, {1: 0.033, 6: 0.053, 7: 0.1, 9: 0.13, 13: 0.13},
                               raw_verify={1: 0.033, 6: 0.0528, 7: 0.204, 9: 0.312, 13: 0.0744})
    st = stall.as_measured()
    assert st.verify(7) == pytest.approx(0.0528 + (0.0744 - 0.0528) * 1 / 7)
    assert st.verify(9) == pytest.approx(0.0528 + (0.0744 - 0.0528) * 3 / 7) and st.verify(13) == pytest.approx(0.0744)
    assert t.verify(3) == pytest.approx(0.077)


def test_measured_knots_interpolate_zeros_and_stalls_and_hold_the_ends():
    from policies.knots import measured_knots

    knots = [1, 2, 3, 5, 9]
    third = 0.04 + 0.02 / 3                                                     # 3 lies a third of the way from 2 to 5
    assert measured_knots(knots, [0.03, 0.04, 0.0, 0.06, 0.07]) == pytest.approx([0.03, 0.04, third, 0.06, 0.07])
    # a stall (over 1.5× a wider knot) and a 0 at the ends: the nearest kept knot's time
    assert measured_knots(knots, [0.0, 0.04, 0.2, 0.06, 0.0]) == pytest.approx([0.04, 0.04, third, 0.06, 0.06])
    assert measured_knots(knots, [0.0, 0.04, 0.2, 0.06, 0.0], fallback=[1, 2, 3, 4, 5]) == pytest.approx(
        [1, 0.04, third, 0.06, 5])
    assert measured_knots([1, 4], [0.077, 0.060]) == [0.077, 0.060]          # the CPU's shape effect is kept
