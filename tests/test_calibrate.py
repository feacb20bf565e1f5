"""The cost model measured on the engine's own step path (actors/costs/calibrate.py): what the probe runs, how its
phases are split, the fit recovering a known model, context terms kept only where they matter, the trust
verdict, the stored machine facts and the one-line errors for foreign cost files."""
import json

import pytest
import torch

from actors.costs.calibrate import CONTEXT_EFFECT, calibrate, fit_engine_costs, judge
from actors.costs.probe import probe_lengths, probe_runs
from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from actors.costs.machine import machine_differences, machine_facts
from actors.runtime.cpu_pack import pack_linears
from actors.core.step import Generation
from actors.loading.tiny_pair import llama, perturbed
from policies.base import Step
from policies.cost_format import check_cost_dict
from policies.cost_format import FORMAT
from policies.costs import CostModel
from policies.errors import SpecsweepError


@pytest.fixture(scope="module")
def engine():
    target = llama(vocab=64, layers=1, hidden=16, seed=3)
    return SpecEngine(target, ModelDrafter(perturbed(target, 0.5, seed=4)), eos_token_ids=[0], max_draft=8)


def test_probe_lengths():
    assert probe_lengths(64, 24) == [0, 1, 2, 4, 8, 16]
    assert probe_lengths(5, 24) == [0, 1, 2, 4]          # k + 1 <= max_tokens
    assert probe_lengths(64, 3) == [0, 1, 2]             # k <= the engine's max_draft
    assert probe_lengths(64, 0) == [0]                   # no drafter: ar only


def test_probe_runs_every_length_exactly_on_the_engine_path(engine):
    runs, probe = probe_runs(engine, context=24, max_tokens=8, repeats=2, steps=3)
    assert probe["lengths"] == [0, 1, 2, 4] and probe["contexts"] == [24, 48]
    kept = [(c, [s.drafted for s in g.steps]) for c, g in runs]
    # warm-up runs discarded; steps × repeats steps per length (half on each prompt), ar and k = 4 at 2 × context
    assert kept == [(c, [k] * 3) for c, k in [(24, 0), (24, 1), (24, 2), (24, 4), (48, 0), (48, 4)] for _ in (0, 1)]
    assert engine.eos == frozenset({0})                  # EOS ignored only while probing
    for _, g in runs:
        for s in g.steps:                                # the target forward is timed apart, inside the verify phase
            assert 0 < s.forward_time <= s.verify_time
            assert s.proposed == s.drafted and (s.draft_time > 0 if s.drafted else s.draft_time < s.verify_time)


def test_calibrate_stores_what_it_measured_on(engine):
    m = calibrate(engine, context=24, max_tokens=8, repeats=2, steps=3)
    assert m.table["knots"] == [1, 2, 3, 5] and m.context == 24 and m.n_steps == 36
    assert m.machine["threads"] >= 1 and m.machine["dtype"] == "float32" and m.machine["device"] == "cpu"
    assert m.probe["lengths"] == [0, 1, 2, 4] and set(m.trust) >= {"reliable", "reasons"}
    assert m.c == pytest.approx(m.t_draft / (m.verify(1) + m.overhead))
    assert m.verify_ratio(0) == pytest.approx(1.0) and all(m.verify_ratio(k) >= 1.0 for k in (1, 2, 4))   # T made non-decreasing
    back = CostModel.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back == m and back.to_dict()["format"] == FORMAT
    # the tree path is probed too: two static shapes, steps × repeats steps each, the catch-up step dropped
    assert m.tree["steps"] == 2 * 6 and m.tree["per_level"] >= 0 and m.tree["per_node"] >= 0
    assert m.c_tree == pytest.approx((m.tree["per_level"] + m.tree["per_node"]) / m.t_target)


def test_tree_drafting_is_fitted_per_level_and_read_by_gt_trees():
    from actors.costs.calibrate import fit_tree_draft
    from policies.base import GenerationContext
    from policies.trees import GTDynamic

    steps = [Step(k_max=d, drafted=n, accepted=0, emitted=1, tree_depth=d, tree_nodes=n,
                  draft_time=0.004 * d + 0.0005 * n) for d, n in [(2, 8), (4, 16), (3, 9), (4, 30)]]
    fit = fit_tree_draft(steps)
    assert (fit["per_level"], fit["per_node"]) == pytest.approx((0.004, 0.0005)) and fit["median_abs_rel"] < 1e-9
    m = CostModel.measured(0.010, {1: 0.045, 2: 0.05}, context=8)
    m.overhead = 0.005                                     # a plain target step: 50 ms; chain c = 0.2
    m.tree = fit
    assert m.c == pytest.approx(0.2) and m.c_tree == pytest.approx(0.0045 / 0.05)
    policy = GTDynamic(c="auto")
    policy.reset(GenerationContext(costs=m))
    assert policy.c == pytest.approx(0.09)                 # the tree rule prices a level, not a chain proposal
    assert CostModel.measured(0.01, {1: 0.05}).c_tree == pytest.approx(0.2)    # tree path unmeasured: chain c


def test_an_ngram_drafter_is_probed_too():
    """The probe prompt repeats a block, so the n-gram drafter finds matches and its own drafting is timed."""
    target = llama(vocab=64, layers=1, hidden=16, seed=3)
    m = calibrate(SpecEngine(target, NgramDrafter(n_max=3), max_draft=8), context=32, max_tokens=5, repeats=1, steps=4)
    assert len(m.table["knots"]) > 1 and m.t_draft > 0


def synthetic_runs(overhead=2e-3, ctx_slope=0.0):
    """Runs whose phases follow a known model: draft = 1 ms + 3 ms·p, forward = T(m) + ctx_slope·C/1000,
    and every step spends ``overhead`` outside both (acceptance, crops, policy)."""
    T = {1: 0.020, 2: 0.030, 3: 0.034, 5: 0.040}
    runs = []
    for context in (100, 200):
        for k in (0, 1, 2, 4):
            steps, c = [], context
            for _ in range(6):
                fwd = T[k + 1] + ctx_slope * c / 1000
                steps.append(Step(k_max=k, drafted=k, accepted=0, emitted=1, proposed=k,
                                  draft_time=(1e-3 + 3e-3 * k) if k else 0.0,
                                  verify_time=fwd + 5e-4, forward_time=fwd))
                c += 1
            g = Generation(token_ids=[1] * 6, steps=steps, prefill_time=0.05)
            g.wall_time = 0.05 + sum(s.draft_time + s.forward_time + overhead for s in steps)
            runs.append((context, g))
    return runs, {"lengths": [0, 1, 2, 4], "contexts": [100, 200], "steps": 6, "repeats": 1}


def test_the_fit_recovers_the_phases_and_the_overhead():
    runs, probe = synthetic_runs()
    m = fit_engine_costs(runs, probe, context=100, machine={"cpu_count": 2, "load_avg": 0.0})
    assert m.overhead == pytest.approx(2e-3, rel=1e-6)                      # acceptance etc. are overhead, not T
    assert [m.verify(k) for k in (1, 2, 3, 5)] == pytest.approx([0.020, 0.030, 0.034, 0.040], rel=1e-6)
    assert m.t_draft == pytest.approx(4e-3) and m.t_target == pytest.approx(0.022)
    assert m.c == pytest.approx(4e-3 / 0.022) and m.verify_ratio(4) == pytest.approx(0.042 / 0.022)
    assert m.step_time(2) == pytest.approx(7e-3 + 0.034 + 2e-3)
    assert m.probe["context_terms"] is False and m.table["per_kctx"] == 0.0       # C does not move the cost
    assert m.trust == {"reliable": True, "reasons": [], "others_load": 0.0, "sibling_load": 0.0, "load_source": "1-minute load average"}


def test_context_terms_are_kept_only_when_they_move_a_step_by_more_than_five_percent():
    runs, probe = synthetic_runs(ctx_slope=0.02)          # +2 ms per 100 tokens: 10 % of a 20 ms forward
    m = fit_engine_costs(runs, probe, context=100, machine={})
    assert m.probe["context_terms"] is True and m.probe["context_effect"] > CONTEXT_EFFECT
    assert m.table["per_kctx"] == pytest.approx(0.02, rel=1e-4)
    runs, probe = synthetic_runs(ctx_slope=0.002)         # 1 % of a step: dropped
    assert fit_engine_costs(runs, probe, context=100, machine={}).probe["context_terms"] is False


def test_a_measurement_is_not_trusted_when_steps_scatter_or_others_load_the_machine():
    runs, probe = synthetic_runs()
    for _, g in runs:                                     # every other step 60 % slower: the steps scatter
        for j, s in enumerate(g.steps):
            if j % 2:
                s.forward_time *= 1.6
    m = fit_engine_costs(runs, probe, context=100, machine={"cpu_count": 2, "load_avg": 0.5})
    assert m.trust["reliable"] is False and "scatter" in m.trust["reasons"][0] and not m.reliable
    quiet, _ = synthetic_runs()
    m = fit_engine_costs(quiet, probe, context=100, machine={"cpu_count": 2, "load_avg": 3.4}, own_load=1.0)
    assert m.trust["reasons"] == ["other work loaded the machine (load 2.4 besides ours on 2 CPUs; limit 1.0)"]
    assert judge(m, own_load=3.0)["reliable"] is True


def test_the_cpus_busy_during_the_probe_judge_the_load_when_they_were_read():
    """Work that ended just before the probe still weighs on the 1-minute load average (a sweep started right after
    another): the CPUs busy inside the probe's window decide instead, when ``/proc/stat`` could be read."""
    from actors.costs.machine import busy_cpus, cpu_times

    quiet, probe = synthetic_runs()
    after_other_work = {"cpu_count": 2, "load_avg": 3.4, "busy_cpus": 1.1}
    m = fit_engine_costs(quiet, probe, context=100, machine=after_other_work, own_load=1.0)
    assert m.trust["reliable"] is True and m.trust["load_source"] == "cpu time during the probe"
    assert m.trust["others_load"] == pytest.approx(0.1)
    busy = fit_engine_costs(quiet, probe, context=100, machine={**after_other_work, "busy_cpus": 2.0, "load_avg": 0.1},
                            own_load=0.5)
    assert busy.trust["reasons"] == ["other work loaded the machine (CPUs busy during the probe 1.5 besides ours on 2 "
                                     "CPUs; limit 1.0)"]
    # the sweep's other actors calibrate beside this one by design: the CPUs they hold are not "other work"
    beside = fit_engine_costs(quiet, probe, context=100, machine={**after_other_work, "busy_cpus": 2.0}, own_load=0.9,
                              sibling_load=1.0)
    assert beside.trust["reliable"] is True and beside.trust["others_load"] == pytest.approx(0.1)
    assert beside.trust["sibling_load"] == 1.0
    assert busy_cpus((100.0, 400.0), (160.0, 500.0), 2) == pytest.approx(1.2)      # 60 of 100 ticks busy, 2 CPUs
    assert busy_cpus(None, (1.0, 2.0), 2) is None and busy_cpus((5.0, 9.0), (5.0, 9.0), 2) is None
    start = cpu_times()
    if start is not None:                                 # Linux: ticks only grow, busy never above total
        sum(i * i for i in range(200_000))
        end = cpu_times()
        assert end[1] >= start[1] and end[0] >= start[0] and end[0] <= end[1]


def test_machine_facts_and_their_differences():
    here = machine_facts("cpu", "torch.float32")
    assert here["dtype"] == "float32" and here["cpu_count"] >= 1 and "load_avg" in here
    other = {**here, "threads": here["threads"] + 1, "host": "elsewhere", "load_avg": 9.0}
    assert machine_differences(here, here) == []
    assert machine_differences(here, other) == [f"threads: {here['threads']!r} → {here['threads'] + 1!r}"]
    assert here["packed_layers"] == 0                     # no model given: nothing packed
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    pack_linears(model)
    packed = machine_facts("cpu", "torch.float32", (model, model, None))   # a module met twice counts once
    assert packed["packed_layers"] == 2
    assert machine_differences(here, packed) == ["packed_layers: 0 → 2"]     # a cost model made dense is not reused
    assert "packed_layers: None → 0" in machine_differences({k: v for k, v in here.items() if k != "packed_layers"}, here)


@pytest.mark.parametrize("d, says", [
    ({"format": "specsweep-cost-model/1", "draft": {}, "verify": {}}, "has format 'specsweep-cost-model/1'; expected"),
    ({"format": FORMAT, "draft": {}}, "lacks verify (verify table), overhead (per-step overhead)"),
    ({"rows": []}, "lacks draft (draft coefficients), verify (verify table)"),
    ([1, 2], "is a list, not a cost model"),
])
def test_a_foreign_cost_file_gets_one_line(d, says):
    with pytest.raises(SpecsweepError, match="^") as e:
        check_cost_dict(d, "costs.json")
    assert says in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("costs.json ")


def test_each_actor_knows_the_cpus_its_siblings_hold():
    """Ray actors of one sweep share the cores: threads per CPU actor, and what the others hold (not other work)."""
    from cluster.backends import ActorSpec, cpu_shares

    two = [ActorSpec("a", {}), ActorSpec("b", {})]
    assert cpu_shares(two, 2) == {"a": (1, 1.0), "b": (1, 1.0)}          # the default sweep on a 2-core laptop
    assert cpu_shares([ActorSpec("a", {}, copies=2), ActorSpec("g", {}, num_gpus=1)], 8) == \
        {"a": (4, 5.0), "g": (None, 8.0)}                                   # a GPU actor holds one host CPU
    assert cpu_shares([ActorSpec("a", {})], 2) == {"a": (2, 0.0)}           # alone: nothing to discount
