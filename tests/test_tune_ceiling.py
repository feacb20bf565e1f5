"""bench/tune_ceiling.py: the calibration it fits and the calibrated ``gt`` rule it replays."""
import numpy as np
import pytest

from actors.rollouts import Rollout, Trace
from actors.tracing.replay import replay
from bench.tune_ceiling import CalibratedGT, acceptance_events, fit_calibration, main
from policies import build
from policies.costs import CostModel

COSTS = CostModel(draft={"per_step": 0.0, "per_proposal": 0.004, "per_catchup": 0.0, "per_catchup_token": 0.0,
                         "per_proposal_kctx": 0.0},
                  table={"knots": [1, 2, 4, 8], "values": [0.05, 0.05, 0.05, 0.05], "per_kctx": 0.0,
                         "per_token_kctx": 0.0}, overhead=0.0)


def _trace(q: float) -> Trace:
    """A 12-token reference whose every rollout proposes the reference itself, each token at draft probability q."""
    ref = [(3 * j) % 7 for j in range(12)]
    rollouts = [Rollout(ref[j:j + 4], [q] * len(ref[j:j + 4]), [q] * len(ref[j:j + 4]), [1.0] * len(ref[j:j + 4]))
                for j in range(12)]
    t = Trace(prompt_ids=[1, 2], reference=ref, finished_by_eos=False, max_new_tokens=12, max_draft=4, eos_ids=[99],
              rollouts=rollouts)
    t.meta = {"question_id": 1}
    return t


def test_events_stop_at_the_first_rejection_and_count_only_judged_proposals():
    t = _trace(0.3)
    t.rollouts[0] = Rollout([t.reference[0], 6, t.reference[2]], [0.9, 0.2, 0.8], [0.9] * 3, [1.0] * 3)
    q, ok = acceptance_events([t])
    assert list(q[:2]) == [0.9, 0.2] and list(ok[:2]) == [True, False]     # the third proposal is never judged
    assert len(q) == 2 + sum(min(4, 12 - j) for j in range(1, 12))


def test_calibration_is_laplace_smoothed_and_non_decreasing_in_q():
    q = np.array([0.1] * 8 + [0.5] * 8 + [0.9] * 8)
    ok = np.array([True] * 8 + [False] * 8 + [True] * 8)     # low q always accepted, middle never
    p = fit_calibration(q, ok, bins=3)
    assert p(0.1) == pytest.approx(9 / 10)
    assert p(0.5) == pytest.approx(9 / 10)                   # raised to the lower bin's rate: non-decreasing
    assert p(0.9) == pytest.approx(9 / 10)
    assert fit_calibration(np.array([]), np.array([], bool))(0.3) == 0.5
    rates = fit_calibration(np.linspace(0, 1, 50), np.linspace(0, 1, 50) > 0.6, bins=5).rates
    assert list(rates) == sorted(rates) and rates[0] == pytest.approx(1 / 12)


def test_a_calibrated_forecast_drafts_where_the_raw_q_would_not():
    t = _trace(0.05)                                         # every proposal is accepted, yet q says 5 %
    gt = replay(t, build(("gt", {"cap": 4}), 1), costs=COSTS, cost_model=COSTS)
    assert sum(gt.drafted) == 0                              # α̂ = 0.05 < c = 0.004 / 0.05: gt never drafts
    cal = fit_calibration(*acceptance_events([t]))
    g = replay(t, CalibratedGT(cal, cap=4), costs=COSTS, cost_model=COSTS)
    assert sum(g.drafted) > 0 and g.decoding_steps < gt.decoding_steps
    assert g.wall_time < gt.wall_time
    low = replay(t, CalibratedGT(lambda q: 0.05, cap=4), costs=COSTS, cost_model=COSTS)
    assert low.drafted == gt.drafted                         # the same forecast as q: the same decisions as gt


def test_a_folder_without_traces_is_one_line(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no batch-size-1 traces" in err
