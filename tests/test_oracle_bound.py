"""The oracle bound equals the best γ schedule found by brute force through replay, and no policy beats it."""
import random

import pytest

from actors.tracing.oracle_bound import oracle_bound, replay_bound
from actors.tracing.replay import replay
from actors.rollouts import Rollout, Trace
from policies import build
from policies.costs import CostModel
from tests.helpers import brute_force

EOS = 9


def make_trace(seed: int, n: int = 5, eos_at_end: bool = False, depth: int = 4) -> Trace:
    """A hand-made turn: a reference over 4 tokens and rollouts that match it for a random while."""
    rng = random.Random(seed)
    reference = [rng.randrange(4) for _ in range(n)]
    if eos_at_end:
        reference[-1] = EOS
    rollouts = []
    for j in range(n):
        match = rng.choice([0, 0, 1, 2, 3, depth])
        toks = [reference[j + i] if j + i < n and i < match else (reference[j + i] + 1) % 4 if j + i < n else 0
                for i in range(depth)]
        if eos_at_end and EOS in toks:
            toks = toks[: toks.index(EOS) + 1]
        rollouts.append(Rollout(toks, [0.5] * len(toks), [0.6] * len(toks), [1.0] * len(toks)))
    return Trace(prompt_ids=[1, 2, 3], reference=reference, finished_by_eos=eos_at_end, max_new_tokens=n,
                 max_draft=depth, eos_ids=[EOS], rollouts=rollouts, prefill_time=0.03)


MODELS = {
    "cheap draft": CostModel(draft={"per_step": 0.002, "per_proposal": 0.004, "per_catchup": 0.003,
                                    "per_catchup_token": 0.001, "per_proposal_kctx": 0.0005},
                             table={"knots": [1, 2, 4], "values": [0.05, 0.055, 0.07], "per_kctx": 0.01,
                                    "per_token_kctx": 0.0}, overhead=0.004),
    "costly draft": CostModel(draft={"per_step": 0.01, "per_proposal": 0.04, "per_catchup": 0.02,
                                     "per_catchup_token": 0.002, "per_proposal_kctx": 0.0},
                              table={"knots": [1, 2, 4], "values": [0.05, 0.09, 0.16], "per_kctx": 0.0,
                                     "per_token_kctx": 0.0}, overhead=0.001),
    "catch-up heavy": CostModel(draft={"per_step": 0.0, "per_proposal": 0.002, "per_catchup": 0.03,
                                       "per_catchup_token": 0.01, "per_proposal_kctx": 0.0},
                                table={"knots": [1, 4], "values": [0.05, 0.06], "per_kctx": 0.0,
                                       "per_token_kctx": 0.0}, overhead=0.0),
}
OPTIONS = [(k, p) for k in range(4) for p in (k, k + 1) if p > 0 or k == 0]


@pytest.mark.parametrize("model", list(MODELS), ids=list(MODELS))
@pytest.mark.parametrize("seed,eos", [(0, False), (1, False), (2, True), (3, True)])
def test_bound_is_the_best_schedule_and_replays_to_itself(model, seed, eos):
    trace, cost = make_trace(seed, eos_at_end=eos), MODELS[model]
    bound = oracle_bound(trace, cost, max_draft=3)                      # the caps OPTIONS tries
    assert oracle_bound(trace, cost).wall_time <= bound.wall_time      # more room can only help
    times = brute_force(trace, cost, OPTIONS)
    assert len(times) > 50
    assert bound.wall_time == pytest.approx(min(t for t, _ in times), rel=1e-9)
    assert all(bound.wall_time <= t + 1e-12 for t, _ in times)
    _, again = replay_bound(trace, cost, max_draft=3)                  # the bound's own schedule, replayed
    assert again.wall_time == pytest.approx(bound.wall_time, rel=1e-9)
    assert again.token_ids == trace.reference and bound.new_tokens == len(trace.reference)


@pytest.mark.parametrize("seed", range(6))
def test_no_policy_beats_the_bound(seed):
    """Every replayable sequence policy at γ0 = 1, 2, 3, 6 on longer turns stays at or above the bound."""
    trace = make_trace(10 + seed, n=24, eos_at_end=seed % 2 == 1, depth=24)
    specs = ["fixed", "hf-heuristic", "threshold", "gammatune", "gammatune+", "gt", "goodput", "svip", "adaedl",
             "dv-threshold", "bandit", "ema-steps", "oracle"]
    costs = CostModel.measured(t_draft=0.01, t_verify={1: 0.05, 2: 0.055, 4: 0.07})
    for name, cost in MODELS.items():
        bound = oracle_bound(trace, cost)
        assert oracle_bound(trace, cost, scale=1.7).step_time == pytest.approx(1.7 * bound.step_time)
        for spec in specs:
            for gamma in (1, 2, 3, 6):
                g = replay(trace, build(spec, gamma), costs=costs, cost_model=cost)
                assert bound.wall_time <= g.wall_time + 1e-12, (name, spec, gamma, bound.wall_time, g.wall_time)
