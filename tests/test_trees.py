"""Token trees: greedy equals ar for every builder; static and dynamic trees keep the target distribution under
sampling, and the same chi-square test fails when the sibling rule is broken."""
import pytest
import torch

import actors.core.acceptance as acceptance
import actors.core.engine as engine_mod
from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from policies import build
from policies.costs import CostModel
from policies.errors import SpecsweepError
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen
from tests.sampling_check import SAMPLED_RUNS, chi_square_pvalue, exact_joint, sample_runs
from tests.helpers import PROMPT, sampling_pair

COSTS = CostModel.measured(t_draft=0.002, t_verify={1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025, 16: 0.03, 32: 0.05})
BUILDERS = ["sequoia:accept=0.7/0.2/0.1,budget=16,depth=5", "sequoia:accept=0.5/0.3,budget=6,depth=2",
            "gt-static:c=0.05,accept=0.7/0.2/0.1", "gt-static:accept=0.9/0.05", "eagle2:depth=4,topk=4,n=20",
            "eagle2", "gt-dynamic:c=0.02,topk=4,n_max=30", "gt-dynamic"]


@pytest.mark.parametrize("spec", BUILDERS)
@pytest.mark.parametrize("arch", [llama, gpt2], ids=["llama", "gpt2"])
def test_greedy_tree_equals_ar(spec, arch):
    target = sharpen(arch(vocab=90, seed=3))
    draft = perturbed(target, 0.3, seed=4)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    for prompt, limit in (([5, 9, 11, 23, 40], 40), ([7], 9), ([1, 2, 3, 1, 2, 3, 1, 2], 23)):
        ar = SpecEngine(target).generate(prompt, build("ar"), max_new_tokens=limit)
        g = engine.generate(prompt, build(spec, 1), max_new_tokens=limit)
        assert g.token_ids == ar.token_ids, (spec, prompt)
        assert all(a <= d for a, d in zip(g.accepted, g.drafted))


@pytest.mark.parametrize("spec", ["sequoia:accept=0.7/0.2/0.1,budget=12,depth=4", "eagle2:depth=3,topk=3,n=10"])
def test_eos_inside_a_tree(spec):
    target = sharpen(llama(vocab=64, seed=8))
    draft = perturbed(target, 0.2, seed=9)
    prompt = [3, 1, 4, 1, 5]
    free = SpecEngine(target).generate(prompt, build("ar"), max_new_tokens=30).token_ids
    for cut in (2, 11):
        eos = free[cut]
        expect = free[: free.index(eos) + 1]
        g = SpecEngine(target, ModelDrafter(draft), eos_token_ids=[eos], costs=COSTS).generate(
            prompt, build(spec, 1), max_new_tokens=30)
        assert g.token_ids == expect


def test_trees_accept_several_tokens_per_step():
    target = sharpen(gpt2(vocab=90, seed=3))
    draft = perturbed(target, 0.3, seed=4)
    g = SpecEngine(target, ModelDrafter(draft)).generate([5, 9, 11], build("sequoia:accept=0.7/0.2/0.1", 1),
                                                         max_new_tokens=40)
    assert max(g.accept_lengths) >= 4 and g.decoding_steps < 20


SAMPLED = ["sequoia:accept=0.5/0.3/0.2,budget=8,depth=2",
           pytest.param("gt-static:c=0.05,accept=0.5/0.3/0.2", marks=pytest.mark.slow)]   # slow tier (CI runs both)


@pytest.mark.parametrize("spec", SAMPLED)
def test_sampled_static_tree_matches_target_distribution(spec):
    target, draft = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 1.0)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    assert chi_square_pvalue(sample_runs(engine, build(spec, 1), PROMPT, 3, SAMPLED_RUNS, seed0=5), probs) > 1e-3


@pytest.mark.slow                       # checks the checker: a broken rule must fail it
def test_broken_sibling_rule_fails_the_same_test(monkeypatch):
    """Trying the next sibling against p instead of the running residual must be caught."""
    target, draft = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 1.0)
    monkeypatch.setattr(acceptance, "residual", lambda p, q, token: p)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    assert chi_square_pvalue(sample_runs(engine, build(SAMPLED[0], 1), PROMPT, 3, SAMPLED_RUNS, seed0=5), probs) < 1e-6


DYNAMIC = [pytest.param("eagle2:depth=2,topk=2,n=4", marks=pytest.mark.slow), "gt-dynamic:c=0.02,topk=3,n_max=8"]


@pytest.mark.parametrize("spec", DYNAMIC)
def test_sampled_dynamic_tree_matches_target_distribution(spec):
    """EAGLE-2 / GT(d) under sampling: deterministic top-k children verified as point masses (EAGLE-2's
    ``evaluate_posterior``, eagle/model/utils.py: qx = 1, the rejected token zeroed in the residual)."""
    target, draft = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 1.0)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    runs = sample_runs(engine, build(spec, 1), PROMPT, 3, SAMPLED_RUNS, seed0=9)
    assert chi_square_pvalue(runs, probs) > 1e-3


@pytest.mark.slow                       # checks the checker: a broken rule must fail it
def test_dynamic_tree_with_the_draft_q_fails_the_same_test(monkeypatch):
    """Verifying the pruned top-k children as if they were draws from q (min(1, p/q), q's residual) is biased."""
    target, draft = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 1.0)
    real = acceptance.accept_tree_sampling

    def as_if_drawn(p_rows, tokens, children, q_rows, generator):
        q = {c: torch.full((p_rows.shape[-1],), 1.0 / p_rows.shape[-1]) for c in q_rows}   # any q != δ_x
        for c, kids in children.items():
            q[c] = q[c].clone()
            for k in kids[:1]:
                q[c][tokens[k]] = 0.9
            q[c] /= q[c].sum()
        return real(p_rows, tokens, children, q, generator)

    monkeypatch.setattr(engine_mod, "accept_tree_sampling", as_if_drawn)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    runs = sample_runs(engine, build("eagle2:depth=2,topk=3,n=6", 1), PROMPT, 3, SAMPLED_RUNS, seed0=9)
    assert chi_square_pvalue(runs, probs) < 1e-6


def test_point_mass_siblings_by_hand():
    """p = (0.5, 0.3, 0.2), children 0 then 1 as point masses: accept 0 with 0.5; else p ← (0, 0.6, 0.4), accept 1
    with 0.6 (0.5·0.6 = 0.3 overall); else sample (0, 0, 1): token 2 with 0.2. The target's p exactly."""
    p = torch.tensor([[0.5, 0.3, 0.2], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    g = torch.Generator().manual_seed(0)
    counts = [0, 0, 0]
    for _ in range(6000):
        path, nxt = acceptance.accept_tree_sampling(p, [0, 1], {-1: [0, 1]}, {-1: None}, g)
        counts[[0, 1][path[0]] if path else nxt] += 1
    assert chi_square_pvalue([(i,) for i in range(3) for _ in range(counts[i])], {(0,): 0.5, (1,): 0.3, (2,): 0.2}) > 1e-3


def test_dynamic_trees_need_a_draft_model():
    target, _ = sampling_pair()
    with pytest.raises(SpecsweepError, match="needs a draft model"):
        SpecEngine(target, NgramDrafter(), costs=COSTS).generate(PROMPT, build("eagle2", 1), max_new_tokens=3,
                                                                 temperature=1.0)


@pytest.mark.parametrize("spec,msg", [("sequoia:budget=0", "budget"), ("eagle2:topk=0", "topk"),
                                      ("gt-dynamic:n_max=0", "n_max"), ("gt-static:c=1.2", "c="),
                                      ("sequoia:accept=0.5/2", "accept"), ("gt-static:accept=0.7/0.5", "accept")])
def test_bad_tree_parameters(spec, msg):
    with pytest.raises(SpecsweepError, match=msg):
        build(spec, 1)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_eagle2_expands_the_root_then_depth_levels(depth):
    """EAGLE-2: the root's expansion plus ``depth`` iterations = depth + 1 levels; with a perfect draft
    every full step accepts depth + 1 tokens and emits depth + 2 (depth 5 → 7)."""
    target = sharpen(llama(vocab=90, seed=3))
    engine = SpecEngine(target, ModelDrafter(target), costs=COSTS)
    g = engine.generate([5, 9, 11, 23], build(f"eagle2:depth={depth},topk=2,n=40", 1), max_new_tokens=30)
    assert max(g.accept_lengths) == depth + 2
    assert g.accept_lengths[0] == depth + 2


def test_rank_acceptance_is_unconditional():
    from actors.costs.calibrate import acceptance_vector

    # 100 positions: the target's token was the draft's rank 1…5 candidate 70, 10, 5, 3, 2 times
    assert acceptance_vector([70, 10, 5, 3, 2], 100) == pytest.approx([0.70, 0.10, 0.05, 0.03, 0.02])
    assert acceptance_vector([0, 0], 100, floor=1e-3) == pytest.approx([1e-3, 1e-3])
    assert sum(acceptance_vector([999, 1, 0], 1000, floor=0.01)) == pytest.approx(1.0)   # floors rescaled to Σ 1


def test_gt_dynamic_is_a_fully_initialised_eagle2():
    """gt-dynamic runs EAGLE-2's expansion: it carries every EAGLE-2 attribute, with n = n_max and depth = max_depth."""
    p = build("gt-dynamic:n_max=40,max_depth=7,topk=4,c=0.2", 1)
    assert (p.n, p.depth, p.topk) == (40, 7, 4) and p.node_budget(3) == 12 and p.node_budget(20) == 40


def test_the_shipped_temperature_config_runs_dynamic_trees_sampled():
    """jobs/configs/gt_temperature.yaml (the GT paper's Figure 3): eagle2 and gt-dynamic parse at every temperature
    from 0 to 1, each into its own folder."""
    from jobs.config.lists import load_configs
    cfgs = load_configs("jobs/configs/gt_temperature.yaml")
    assert [c.generation["temperature"] for c in cfgs] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert [c.output for c in cfgs][::5] == ["runs/gt_temperature/T0", "runs/gt_temperature/T1"]
    assert all({p[0] for p in c.policies} == {"eagle2", "gt-dynamic"} for c in cfgs)
