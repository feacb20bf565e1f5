"""Batched decoding is lossless per row: each row's greedy output is its target-only output and each row's samples
follow the target's distribution, for every chain policy and every batch policy, at B ∈ {1, 2, 3, 5}."""
import pytest

from actors.runtime.batch_runner import BatchRunner
from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen
from policies.base import BatchPolicy, SequencePolicy, TreePolicy
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.registry import REGISTRY, build
from tests.helpers import PROMPT, sampling_pair
from tests.sampling_check import SAMPLED_RUNS as RUNS, chi_square_pvalue, exact_joint

SIZES = (1, 2, 3, 5)
VOCAB = 50
COSTS = CostModel.measured(0.002, {1: 0.01, 2: 0.011, 4: 0.013, 8: 0.018, 16: 0.03, 32: 0.05, 64: 0.09})
CHAIN = sorted(n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, SequencePolicy))
BATCH = sorted(n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, BatchPolicy))
TREES = ["sequoia:accept=0.6/0.2/0.1,budget=12,depth=4", "gt-static:c=0.1,accept=0.6/0.2/0.1",
         "eagle2:depth=3,topk=3,n=10", "gt-dynamic:c=0.05,topk=3,n_max=12"]


def _pair(arch=llama):
    target = sharpen(arch(vocab=VOCAB, seed=VOCAB))
    return target, perturbed(target, 0.25, seed=VOCAB + 1)


def _prompts(n):
    """n prompts of different lengths (1 … 33 tokens)."""
    return [[(3 * i + 1 + j) % VOCAB for i in range(length)] for j, length in enumerate([1, 7, 33, 4, 12][:n])]


def _policy(name, rows):
    """The batch policy itself, or one fresh per-row policy per row."""
    pol = build(name, 4)
    return pol if isinstance(pol, BatchPolicy) else [pol] + [build(name, 4) for _ in range(rows - 1)]


def _refs(target, prompts, n, eos=()):
    return [SpecEngine(target, eos_token_ids=eos).generate(p, build("ar"), max_new_tokens=n).token_ids for p in prompts]


def test_every_chain_and_batch_policy_is_registered_here():
    assert {"fixed", "gt", "oracle", "bandit"} <= set(CHAIN) and set(BATCH) == {"batch-schedule", "tetris", "gt-batch"}


@pytest.mark.parametrize("kind", ["model", pytest.param("ngram", marks=pytest.mark.slow)])
def test_greedy_rows_equal_target_alone(kind):
    target, draft = _pair()
    prompts = _prompts(5)
    refs = _refs(target, prompts, 24)
    engine = SpecEngine(target, ModelDrafter(draft) if kind == "model" else NgramDrafter(), costs=COSTS)
    accepted = 0
    for name in CHAIN + BATCH:
        for B in SIZES:
            outs = engine.generate_batch(prompts[:B], _policy(name, B), max_new_tokens=24)
            assert [o.token_ids for o in outs] == refs[:B], (name, B)
            assert all(sum(o.accept_lengths) == 24 for o in outs)
            assert all(s.batch_rows <= B for o in outs for s in o.steps)
            accepted += sum(sum(o.accepted) for o in outs)
    assert accepted > 600          # drafts were really accepted (not a vacuous pass)


@pytest.mark.slow
def test_greedy_rows_equal_target_alone_gpt2():
    target, draft = _pair(gpt2)
    prompts = _prompts(5)
    refs = _refs(target, prompts, 30)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    for name in ("fixed", "hf-heuristic", "gt", "tetris", "gt-batch"):
        for B in SIZES:
            outs = engine.generate_batch(prompts[:B], _policy(name, B), max_new_tokens=30)
            assert [o.token_ids for o in outs] == refs[:B], (name, B)


def test_every_tree_policy_is_tested_here():
    assert {t.split(":")[0] for t in TREES} == {n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, TreePolicy)}


def test_tree_rows_equal_target_alone():
    """Each row grows its own tree; one target forward verifies every row's tree (per-row tree masks)."""
    target, draft = _pair()
    prompts = _prompts(5)
    refs = _refs(target, prompts, 24)
    engine = SpecEngine(target, ModelDrafter(draft))
    multi = 0
    for name in TREES:
        for B in SIZES:
            outs = engine.generate_batch(prompts[:B], [build(name, 4) for _ in range(B)], max_new_tokens=24)
            assert [o.token_ids for o in outs] == refs[:B], (name, B)
            multi += sum(a > 1 for o in outs for a in o.accept_lengths)
    assert multi > 50                  # trees were accepted beyond the root (not a vacuous pass)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["sequoia:accept=0.5/0.3,budget=6,depth=3", "eagle2:depth=2,topk=2,n=4"])
def test_sampled_tree_rows_follow_the_target(spec):
    """Static (drawn children, q's residual) and dynamic (top-k children, point masses) trees, six rows."""
    target, draft = sampling_pair()
    prompts = [list(PROMPT), list(PROMPT[:1]), list(PROMPT) + [1, 2]]
    exact = [exact_joint(target, p, 3, 1.0) for p in prompts]
    engine = SpecEngine(target, ModelDrafter(draft))
    samples = [[] for _ in prompts]
    rows = prompts + prompts
    for run in range(RUNS // 2):
        outs = engine.generate_batch(rows, [build(spec, 3) for _ in rows],
                                     max_new_tokens=3, temperature=1.0, seeds=6 * run)
        for i, o in enumerate(outs):
            samples[i % 3].append(o.token_ids)
    for i in range(len(prompts)):
        assert chi_square_pvalue(samples[i], exact[i]) > 1e-3, i


def test_rows_leave_at_eos_and_budget_without_stalling_others():
    target, draft = _pair()
    prompts = _prompts(5)
    free = _refs(target, prompts, 30)
    eos = free[1][4]                                         # row 1 stops early on this token
    refs = _refs(target, prompts, 30, eos=[eos])
    engine = SpecEngine(target, ModelDrafter(draft), eos_token_ids=[eos])
    for name in ("fixed", "tetris", "ar"):
        outs = engine.generate_batch(prompts, _policy(name, 5), max_new_tokens=30)
        assert [o.token_ids for o in outs] == refs, name
        assert len(outs[1].steps) < len(outs[2].steps) or len(refs[2]) <= len(refs[1])
        # a row that left had its latency taken then: before the batch's last row finished
        assert min(o.wall_time for o in outs) < max(o.wall_time for o in outs)
    for limit in (1, 2, 7):
        outs = engine.generate_batch(prompts, _policy("fixed", 5), max_new_tokens=limit)
        assert [o.token_ids for o in outs] == [r[:limit] for r in _refs(target, prompts, limit, eos=[eos])]


def test_compaction_keeps_every_row_exact(monkeypatch):
    """Masked slots gathered away at every forward: the outputs do not change."""
    monkeypatch.setattr(BatchRunner, "COMPACT_SLACK", -10 ** 6)
    target, draft = _pair()
    prompts = _prompts(5)
    refs = _refs(target, prompts, 40)
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    for pol in ([build("fixed", 8) for _ in prompts], build("gt-batch", 8)):
        outs = engine.generate_batch(prompts, pol, max_new_tokens=40)
        assert [o.token_ids for o in outs] == refs


@pytest.mark.slow        # 1,200 sampled batches per policy: the slow tier (the greedy battery above is fast)
@pytest.mark.parametrize("name", ["fixed", pytest.param("gt-batch", marks=pytest.mark.slow),
                                  pytest.param("batch-schedule", marks=pytest.mark.slow)])
def test_sampled_rows_follow_the_target(name):
    """Six rows, three prompts of different lengths twice: each prompt's first 3 tokens follow its exact joint."""
    target, draft = sampling_pair()
    prompts = [list(PROMPT), list(PROMPT[:1]), list(PROMPT) + [1, 2]]
    exact = [exact_joint(target, p, 3, 1.0) for p in prompts]
    engine = SpecEngine(target, ModelDrafter(draft), costs=COSTS)
    samples = [[] for _ in prompts]
    rows = prompts + prompts
    for run in range(RUNS // 2):
        pol = build(name, 3) if name != "fixed" else [build(name, 3) for _ in rows]
        outs = engine.generate_batch(rows, pol, max_new_tokens=3, temperature=1.0, seeds=6 * run)
        for i, o in enumerate(outs):
            samples[i % 3].append(o.token_ids)
    for i in range(len(prompts)):
        assert chi_square_pvalue(samples[i], exact[i]) > 1e-3, i


def test_tetris_gives_the_capacity_to_the_most_likely_prefixes():
    """Capacity K·B (Tetris's spec_decode_worker: (proposal_len − extra)·B) to the best Π q (select_proposals_no_priority)."""
    tetris = build("tetris:base=2,extra=1", 4)
    assert tetris.caps([9, 9, 9, 1]) == [3, 3, 3, 1]
    keep = tetris.select([[0.9, 0.9, 0.9], [0.5, 0.9], [0.95, 0.1, 0.9], []])
    # capacity 2 · 4 = 8 of the 7 candidates: all kept
    assert keep == [3, 2, 3, 0]
    keep = build("tetris:base=1,extra=2", 4).select([[0.9, 0.9, 0.9], [0.5, 0.9], [0.95, 0.1, 0.9], []])
    # capacity 4: 0.95, 0.9, 0.81, 0.729 → rows keep 3, 0, 1, 0
    assert keep == [3, 0, 1, 0]


def test_batch_schedule_follows_the_batch_size():
    pol = build("batch-schedule:draft_len_schedule=3:5/15:3/20:1", 4)        # TensorRT-LLM's form (tests/test_batch_rules.py)
    assert [pol.gamma_for(b) for b in (1, 3, 4, 15, 16, 20, 21)] == [5, 5, 3, 3, 1, 1, 0]
    assert pol.caps([9, 2, 9, 9]) == [3, 2, 3, 3]
    with pytest.raises(SpecsweepError, match="draft_len_schedule"):
        build("batch-schedule:draft_len_schedule=4-3", 4)


def test_gt_batch_prices_a_level_from_the_batch_cost_surface():
    costs = CostModel.measured(0.002, {1: 0.010, 2: 0.011, 4: 0.013})       # the surface's B = 1 member
    costs.batch = {4: {"knots": [1, 2, 4], "values": [0.020, 0.030, 0.050], "draft": 0.003}}
    pol = build("gt-batch", 4)
    from policies.base import GenerationContext
    pol.reset(GenerationContext(costs=costs))
    assert pol.level_cost(1, 1) == pytest.approx((0.002 + 0.001) / 0.010)
    assert pol.level_cost(4, 1) == pytest.approx((0.003 + 0.010) / 0.020)
    assert costs.batch_verify(2, 2) == pytest.approx(0.011 + (0.030 - 0.011) / 3)     # linear in B between sizes
    assert CostModel.from_dict(costs.to_dict()).batch == costs.batch
    pol.caps([4, 4, 4, 4])
    assert pol.keep_drafting(1, {0: 0.9, 1: 0.9, 2: 0.9, 3: 0.9}) == {0, 1, 2, 3}     # 0.9 > 0.65
    assert pol.keep_drafting(2, {0: 0.5, 1: 0.5}) == set() and pol.select([[0.9, 0.5], [0.9]]) == [1, 1]


def test_what_cannot_batch_is_refused_in_one_line():
    target, draft = _pair()
    engine = SpecEngine(target, ModelDrafter(draft))
    with pytest.raises(SpecsweepError, match="one kind of policy"):
        engine.generate_batch(_prompts(2), [build("eagle2", 4), build("fixed", 4)])
    with pytest.raises(SpecsweepError, match="needs a draft model"):
        SpecEngine(target, NgramDrafter()).generate_batch(_prompts(2), [build("eagle2", 4), build("eagle2", 4)])
    with pytest.raises(SpecsweepError, match="needs a draft"):
        SpecEngine(target).generate_batch(_prompts(2), build("tetris", 4))
    with pytest.raises(SpecsweepError, match="one per prompt"):
        engine.generate_batch(_prompts(3), [build("fixed", 4)])
    with pytest.raises(SpecsweepError, match="greedy decoding only"):
        engine.generate_batch(_prompts(2), [build("oracle", 4), build("oracle", 4)], temperature=1.0)
