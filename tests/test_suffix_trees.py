"""Suffix decoding's speculation trees (``actors/drafting/suffix_drafter.py``, "Trees"): hand-worked trees, the policy's
depth and node budget, greedy rows equal to the target alone at B = 1 and B = 4, and sampled rows (chains and trees)
that follow the target's exact distribution (chi-square, ``tests/sampling_check.py``)."""
import pytest

from actors.core.engine import SpecEngine
from actors.drafting.suffix_drafter import SuffixDrafter, tree_bounds
from actors.loading.tiny_pair import llama, sharpen
from policies.base import GenerationContext
from policies.registry import build
from tests.helpers import PROMPT, sampling_pair
from tests.sampling_check import SAMPLED_RUNS as RUNS, chi_square_pvalue, exact_joint

TREES = ("eagle2:depth=3,topk=3,n=10", "gt-dynamic:c=0.05,topk=3,n_max=12", "sequoia:accept=0.5/0.3,budget=6,depth=3")


def _tree(drafter, tokens, spec, max_depth=8):
    drafter.reset(1, tree=True)
    tree = drafter.propose_tree(tokens, build(spec, 4), max_depth)
    return [(tok, parent, round(score, 3)) for tok, parent, score in zip(tree.tokens, tree.parents, tree.cum)]


def test_the_tree_branches_by_frequency_and_children_come_best_first():
    # after "1 2": 3 twice, 4 once; after "2 3": 5 once (the latest), 1 once; after "2 4": 9
    seq = [1, 2, 3, 1, 2, 4, 9, 1, 2, 3, 5, 1, 2]
    tree = _tree(SuffixDrafter(spec_factor=4.0, min_prob=0.05), seq, "eagle2:depth=2,topk=4,n=6")
    assert tree[:2] == [(3, -1, 0.667), (4, -1, 0.333)]            # the root's children, best first
    assert (5, 0, 0.333) in tree and (9, 1, 0.333) in tree          # then their own continuations
    assert len(tree) <= 6 and all(p < i for i, (_, p, _) in enumerate(tree))


def test_the_budget_is_the_policy_s_and_at_most_spec_factor_times_the_match():
    seq = [1, 2, 3, 1, 2, 4, 9, 1, 2, 3, 5, 1, 2]
    assert len(_tree(SuffixDrafter(spec_factor=1.0, min_prob=0.0), seq, "eagle2:depth=5,topk=4,n=60")) <= 3
    assert len(_tree(SuffixDrafter(spec_factor=8.0, min_prob=0.0), seq, "eagle2:depth=5,topk=4,n=2")) == 2
    one_level = _tree(SuffixDrafter(spec_factor=8.0, min_prob=0.0), seq, "eagle2:depth=3,topk=4,n=9", max_depth=1)
    assert len(one_level) == 2 and all(p == -1 for _, p, _ in one_level)   # one level: the root's children only
    assert _tree(SuffixDrafter(), [1, 2, 3, 4], "eagle2") == []     # nothing repeats: no tree
    assert tree_bounds(build("eagle2:depth=5,n=60", 4), 3) == (3, 60)
    static = build("sequoia:accept=0.5/0.3,budget=6,depth=3", 4)
    static.reset(GenerationContext())
    assert tree_bounds(static, 2)[0] == 2 and tree_bounds(static, 8) == (3, len(static.shape()))


def _target():
    return sharpen(llama(vocab=50, seed=50))


PROMPTS = [[1, 2, 3, 4, 1, 2, 3, 4, 1, 2], [7], [5, 9, 5, 9, 5, 9, 11, 12, 13, 5, 9], [3, 17, 3, 17, 29]]


@pytest.mark.parametrize("B", [1, 4])
def test_greedy_tree_rows_equal_target_alone(B):
    target = _target()
    prompts = PROMPTS[:B]
    refs = [SpecEngine(target).generate(p, build("ar"), max_new_tokens=16).token_ids for p in prompts]
    engine = SpecEngine(target, SuffixDrafter())
    multi = 0
    for spec in TREES + TREES[:1]:          # the repeat drafts from the earlier responses too
        outs = engine.generate_batch(prompts, [build(spec, 4) for _ in prompts], max_new_tokens=16)
        assert [o.token_ids for o in outs] == refs, (spec, B)
        multi += sum(a > 1 for o in outs for a in o.accept_lengths)
    assert multi > 0


def _sampled(policy, rows_per_batch: int, runs: int):
    """Each prompt's first 3 sampled tokens over ``runs`` generations, rows decoded ``rows_per_batch`` at a time; the
    drafter learns every response (its cache fills with samples, so trees branch)."""
    target, _ = sampling_pair()
    prompts = [list(PROMPT), list(PROMPT[:1]), list(PROMPT) + [1, 2], [4, 4, 4, 4]][:rows_per_batch]
    exact = [exact_joint(target, p, 3, 1.0) for p in prompts]
    engine = SpecEngine(target, SuffixDrafter(min_prob=0.0, spec_factor=3.0))
    samples = [[] for _ in prompts]
    drafted = 0
    for run in range(runs):
        outs = engine.generate_batch(prompts, [build(policy, 3) for _ in prompts], max_new_tokens=3,
                                     temperature=1.0, seeds=len(prompts) * run)
        for i, o in enumerate(outs):
            samples[i].append(o.token_ids)
            drafted += sum(o.drafted)
    assert drafted > runs                   # not vacuous: most generations verified drafts
    for i in range(len(prompts)):
        assert chi_square_pvalue(samples[i], exact[i]) > 1e-3, (policy, i)


@pytest.mark.parametrize("policy", ["fixed", pytest.param("eagle2:depth=2,topk=3,n=8", marks=pytest.mark.slow)])
def test_sampled_rows_follow_the_target_at_one_row(policy):
    _sampled(policy, 1, RUNS)


@pytest.mark.slow           # 1,200 sampled batches of 4 rows per policy
@pytest.mark.parametrize("policy", ["fixed", "eagle2:depth=2,topk=3,n=8"])
def test_sampled_rows_follow_the_target_at_four_rows(policy):
    _sampled(policy, 4, RUNS)
