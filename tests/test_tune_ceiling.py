"""bench/tune_ceiling.py: the calibration it fits and the calibrated ``gt`` rule it replays."""
import json

import numpy as np
import pytest

from actors.rollouts import Rollout, Trace, write_traces
from actors.tracing.replay import replay
from bench.tune_ceiling import (CalibratedGT, CopyGT, RunMemoryGT, acceptance_events, completes_context_gram,
                                fit_calibration, main)
from policies import build
from policies.costs import CostModel

COSTS = CostModel(draft={"per_step": 0.0, "per_proposal": 0.004, "per_catchup": 0.0, "per_catchup_token": 0.0,
                         "per_proposal_kctx": 0.0},
                  table={"knots": [1, 2, 4, 8], "values": [0.05, 0.05, 0.05, 0.05], "per_kctx": 0.0,
                         "per_token_kctx": 0.0}, overhead=0.0)


def _trace(q: float, prompt=(1, 2)) -> Trace:
    """A 12-token reference whose every rollout proposes the reference itself, each token at draft probability q."""
    ref = [(3 * j) % 7 for j in range(12)]
    rollouts = [Rollout(ref[j:j + 4], [q] * len(ref[j:j + 4]), [q] * len(ref[j:j + 4]), [1.0] * len(ref[j:j + 4]))
                for j in range(12)]
    t = Trace(prompt_ids=list(prompt), reference=ref, finished_by_eos=False, max_new_tokens=12, max_draft=4, eos_ids=[99],
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


def _events(trace, policy) -> tuple[list, list]:
    """(event each step started from, drafted per step) of ``policy`` replayed on ``trace``."""
    log = policy.log
    g = replay(trace, policy, costs=COSTS, cost_model=COSTS)
    return [e for e, _k, _n in log], list(g.drafted)


def test_run_memory_reads_a_hit_when_the_bonus_token_equals_the_discarded_proposal():
    # c = 0.004 / 0.05 = 0.08; q = 0.3: α̂ 0.3, 0.09 pass, 0.027 fails — two drafted, the third discarded
    t = _trace(0.3)
    events, drafted = _events(t, RunMemoryGT(cap=4, log=[]))
    assert events[0] is None and drafted[0] == 2
    assert set(events[1:]) == {"hit"}                        # the discarded proposal was the reference token
    assert drafted == list(replay(t, build(("gt", {"cap": 4}), 1), costs=COSTS, cost_model=COSTS).drafted)
    _, boosted = _events(t, RunMemoryGT(hit=4.0, cap=4, log=[]))
    assert boosted[0] == 2 and boosted[1] == 3               # β_hit·q = 1.2: the step after a hit drafts one more


def test_run_memory_reads_a_miss_and_a_rejection():
    t = _trace(0.3)
    ref = t.reference
    t.rollouts[0] = Rollout(ref[0:2] + [5, 5], [0.3] * 4, [0.3] * 4, [1.0] * 4)      # the discarded third is wrong
    events, _ = _events(t, RunMemoryGT(cap=4, log=[]))
    assert events[1] == "miss"
    t.rollouts[0] = Rollout([ref[0], 6, 6, 6], [0.3] * 4, [0.3] * 4, [1.0] * 4)       # the second draft is rejected
    events, drafted = _events(t, RunMemoryGT(cap=4, log=[]))
    assert events[1] == "rejected"
    _, damped = _events(t, RunMemoryGT(rejected=0.1, cap=4, log=[]))
    assert drafted[1] == 2 and damped[1] == 0                # β·q = 0.03 < c after the rejection: a plain step


def test_a_gram_of_the_context_is_found_only_before_the_last_position():
    assert completes_context_gram([1, 2, 3, 9, 1, 2, 3], 3)
    assert not completes_context_gram([1, 2, 3, 9, 1, 2, 3], 4)
    assert not completes_context_gram([5, 5], 2) and completes_context_gram([5, 5, 5], 2)
    assert not completes_context_gram([1, 2], 0)


def test_copying_the_context_raises_q_only_where_a_gram_repeats():
    plain = _trace(0.05)                                     # gt never drafts: α̂ = 0.05 < c = 0.08
    copied = _trace(0.05, prompt=[1, 2] + plain.reference)   # the whole answer stands in the prompt
    gt = replay(copied, build(("gt", {"cap": 4}), 1), costs=COSTS, cost_model=COSTS)
    assert sum(gt.drafted) == 0
    assert replay(copied, CopyGT(copied.prompt_ids, kappa=0.0, cap=4), costs=COSTS,
                  cost_model=COSTS).drafted == gt.drafted       # κ = 0: gt's own decisions
    log = []
    g = replay(copied, CopyGT(copied.prompt_ids, kappa=0.95, m=2, cap=4, log=log), costs=COSTS, cost_model=COSTS)
    assert sum(g.drafted) > 0 and g.wall_time < gt.wall_time
    assert log and all(ok for _c, ok in log)                  # every judged proposal is the reference token
    far = replay(plain, CopyGT(plain.prompt_ids, kappa=0.95, m=8, cap=4), costs=COSTS, cost_model=COSTS)
    assert sum(far.drafted) == 0                             # no 8-gram of the context repeats in 12 tokens


def test_the_signals_print_their_rows_and_rates_per_pair(tmp_path, capsys):
    traces = []
    ref = [(3 * j) % 7 for j in range(12)]
    for qid, q in enumerate((0.3, 0.5, 0.2, 0.6)):
        rollouts = [Rollout(ref[j:], [q] * (12 - j), [q] * (12 - j), [1.0] * (12 - j)) for j in range(12)]
        rollouts[3] = Rollout([6] * 9, [0.9] * 9, [0.9] * 9, [1.0] * 9)                # one rejected run per turn
        t = Trace(prompt_ids=[1, 2] + ref[:6], reference=ref, finished_by_eos=False, max_new_tokens=12,
                  max_draft=None, eos_ids=[99], rollouts=rollouts, pair="pA", key=f"pA|q{qid}")
        t.meta = {"question_id": qid}
        traces.append(t)
    write_traces(tmp_path / "traces" / "part-0.parquet", traces)
    (tmp_path / "actors.json").write_text(json.dumps({"pA": [{"cost_model": COSTS.to_dict(), "costs": COSTS.to_dict()}]}))
    assert main([str(tmp_path), "--signals"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("| pA | ")]
    labels = [ln.split(" | ")[1] for ln in rows]
    assert len(rows) == 6 + 6
    for rule in ("gt, ε × look-ahead", "run memory from the discarded proposal", "copying the context"):
        assert sum(label.startswith(f"{rule}, tuned on training (") for label in labels) == 1
        assert sum(label.startswith(f"{rule}, grid point chosen on the held-out questions (") for label in labels) == 1
    rates = [ln for ln in out.splitlines() if ln.startswith("pA (all questions, gt defaults)")]
    assert len(rates) == 1 and "after a hit" in rates[0] and "a rejection" in rates[0]
