"""Batch replay equals the live batch engine row for row and step for step (greedy), for per-row and batch policies."""
import pytest

from actors.tracing.replay import replay_batch
from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.rollouts import record_trace
from actors.loading.tiny_pair import llama, perturbed, sharpen
from policies.base import BatchPolicy
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.registry import build

MAX_NEW = 24
COSTS = CostModel.measured(0.002, {1: 0.01, 2: 0.011, 4: 0.013, 8: 0.018, 16: 0.03, 32: 0.05})
COSTS.batch = {1: {"knots": [1, 4, 8], "values": [0.010, 0.013, 0.018], "draft": 0.002},
               4: {"knots": [1, 4, 8], "values": [0.014, 0.030, 0.052], "draft": 0.003}}
PER_ROW = ["fixed", "hf-heuristic", "gammatune", "gt", "threshold", "oracle", "svip", "goodput"]
BATCH = ["tetris", "gt-batch", "batch-schedule"]


@pytest.fixture(scope="module")
def setup():
    target = sharpen(llama(vocab=70, seed=5))
    draft = perturbed(target, 0.3, seed=6)
    single = SpecEngine(target, ModelDrafter(draft))
    prompts = [[(5 * i + j) % 70 for i in range(n)] for j, n in enumerate([3, 9, 1, 17, 6])]
    traces = [record_trace(single, p, max_new_tokens=MAX_NEW, key=str(j)) for j, p in enumerate(prompts)]
    return SpecEngine(target, ModelDrafter(draft), costs=COSTS), prompts, traces


def _policy(name, rows, gamma):
    pol = build(name, gamma)
    return pol if isinstance(pol, BatchPolicy) else [pol] + [build(name, gamma) for _ in range(rows - 1)]


def _steps(g):
    return [(s.k_max, s.drafted, s.accepted, s.emitted, s.batch_rows) for s in g.steps]


@pytest.mark.parametrize("name", [n if n in ("fixed", "gt") or n in BATCH else pytest.param(n, marks=pytest.mark.slow)
                                  for n in PER_ROW + BATCH])
def test_batch_replay_equals_live(setup, name):
    engine, prompts, traces = setup
    for B in (1, 3, 5):
        for gamma in (2, 5):
            live = engine.generate_batch(prompts[:B], _policy(name, B, gamma), max_new_tokens=MAX_NEW)
            rep = replay_batch(traces[:B], _policy(name, B, gamma), costs=COSTS, cost_model=COSTS)
            for b in range(B):
                assert rep[b].token_ids == live[b].token_ids, (name, B, gamma, b)
                assert _steps(rep[b]) == _steps(live[b]), (name, B, gamma, b)


def test_predicted_times_follow_the_batch_surface(setup):
    _, _, traces = setup
    rep = replay_batch(traces[:4], [build("fixed", 3) for _ in range(4)], cost_model=COSTS)
    first = rep[0].steps[0]
    assert first.batch_rows == 4 and first.verify_time == pytest.approx(COSTS.batch_verify(4, first.batch_width))
    assert first.draft_time == pytest.approx(3 * COSTS.batch_draft(4))
    assert all(g.wall_time > g.prefill_time for g in rep)
    # a row that finished earlier has a shorter latency than the batch's last row
    assert min(g.wall_time for g in rep) <= max(g.wall_time for g in rep)


def test_replay_refuses_what_it_cannot_reproduce(setup):
    _, _, traces = setup
    with pytest.raises(SpecsweepError, match="one per trace"):
        replay_batch(traces[:2], [build("fixed", 3)])
    with pytest.raises(SpecsweepError, match="max_draft"):
        from actors.rollouts import record_trace as rec
        engine = SpecEngine(llama(vocab=70, seed=5), ModelDrafter(llama(vocab=70, seed=6)))
        short = rec(engine, [1, 2, 3], max_new_tokens=8, max_draft=2)
        replay_batch([short], [build("fixed", 4)])
