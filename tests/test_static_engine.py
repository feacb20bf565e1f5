"""The static-cache engine (position-indexed KV, rejected entries overwritten) is lossless like the eager one."""

import pytest
import torch

from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from actors.runtime.runners import EagerRunner, StaticRunner, buckets_up_to, make_runner
from policies.fixed import Fixed, TargetOnly
from policies.registry import build
from policies.base import TreePolicy
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen
from tests.helpers import NoStaticLM
from tests.sampling_check import SAMPLED_RUNS, chi_square_pvalue, exact_joint, sample_runs

GAMMAS = [1, 2, 3, 5, 8, 13]


def _pair(arch, vocab=64):
    target = sharpen(arch(vocab=vocab, seed=vocab))
    return target, perturbed(target, 0.25, seed=vocab + 1)


def test_buckets():
    assert buckets_up_to(1) == [1]
    assert buckets_up_to(2) == [1, 2]
    assert buckets_up_to(9) == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("arch", [llama, gpt2], ids=["llama", "gpt2"])
@pytest.mark.parametrize("kind", ["model", "ngram"])
def test_static_greedy_equals_ar(arch, kind):
    target, draft = _pair(arch)
    for plen in (1, 9):
        prompt = [(5 * i + 2) % 64 for i in range(plen)]
        ar = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=40)
        drafter = ModelDrafter(draft) if kind == "model" else NgramDrafter()
        engine = SpecEngine(target, drafter, engine="static", capacity=256)
        assert engine.engine == "static" and isinstance(engine.runner, StaticRunner)
        if kind == "model":
            assert isinstance(drafter.runner, StaticRunner)
        for gamma in GAMMAS:
            out = engine.generate(prompt, Fixed(gamma), max_new_tokens=40)
            assert out.token_ids == ar.token_ids, (plen, gamma)
        assert max(out.accept_lengths) >= 2      # drafts were accepted: the rollback path was exercised


@pytest.mark.parametrize("spec", ["hf-heuristic", "gammatune", "threshold:adaptive=true", "gt:c=0.2", "oracle",
                                  "sequoia:budget=8,depth=4"])
def test_static_engine_every_policy_kind(spec):
    """Policies that ask 0 drafts (the draft then lags and catches up) and tree policies (eager fallback)."""
    target, draft = _pair(llama)
    prompt = [3, 1, 4, 1, 5]
    ar = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=30)
    engine = SpecEngine(target, ModelDrafter(draft), engine="static", capacity=256)
    engine.costs = None
    try:
        policy = build(spec, 3)
    except Exception as e:  # a policy name this checkout does not have
        pytest.skip(str(e))
    if policy.needs_costs or isinstance(policy, TreePolicy):
        from actors.costs.calibrate import calibrate, rank_acceptance

        engine.costs = calibrate(engine, context=32, max_tokens=8, repeats=1)
        engine.rank_acceptance = rank_acceptance(target, draft, [prompt], max_new_tokens=16)
    out = engine.generate(prompt, policy, max_new_tokens=30)
    assert out.token_ids == ar.token_ids
    again = engine.generate(prompt, Fixed(4), max_new_tokens=30)      # static runner still right after a tree step
    assert again.token_ids == ar.token_ids


def test_rejected_entries_are_masked_not_cropped():
    """After a rollback the stale entries stay in the cache; the next forward must not see them."""
    target, _ = _pair(llama)
    runner = make_runner(target, "static", capacity=64)
    eager = EagerRunner(target)
    for r in (runner, eager):
        r.reset()
        r.forward([1, 2, 3, 4, 5, 6, 7])
        r.rollback(4)                       # keep 1 2 3 4
    a = runner.forward([9, 9])
    b = eager.forward([9, 9])
    assert runner.length == 6
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.slow        # 10 s of sampling: the slow tier (CI runs both); the static engine's greedy tests are fast
def test_static_sampling_matches_target_distribution():
    target = sharpen(llama(vocab=5, layers=1, hidden=16, seed=11), 2.0)
    draft = sharpen(perturbed(target, 1.0, seed=12), 3.0)
    prompt = [1, 2, 3, 1, 2]
    probs = exact_joint(target, prompt, 3, 1.0)
    engine = SpecEngine(target, ModelDrafter(draft), engine="static", capacity=32)
    runs = sample_runs(engine, Fixed(4), prompt, 3, SAMPLED_RUNS)
    assert chi_square_pvalue(runs, probs) > 1e-3


def test_full_static_cache_is_one_clear_error():
    target, draft = _pair(llama)
    engine = SpecEngine(target, ModelDrafter(draft), engine="static", capacity=16)
    with pytest.raises(Exception, match="static KV cache of 16 positions is full"):
        engine.generate(list(range(1, 12)), Fixed(3), max_new_tokens=20)


def test_static_engine_batches_on_the_per_row_static_cache():
    """A batch on the static engine runs on actors/runtime/static_batch_runner.py (target and draft); single rows stay on
    the single-row static runner; both equal the target alone."""
    from actors.runtime.static_batch_runner import StaticBatchRunner

    target, draft = _pair(llama)
    prompts = [[3, 4, 5], [6, 7]]
    refs = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=8).token_ids for p in prompts]
    drafter = ModelDrafter(draft)
    engine = SpecEngine(target, drafter, engine="static", capacity=128)
    assert [g.token_ids for g in engine.generate_batch(prompts, [Fixed(3), Fixed(3)], max_new_tokens=8)] == refs
    assert isinstance(engine.runners._batch, StaticBatchRunner) and isinstance(drafter._batch, StaticBatchRunner)
    assert engine.generate(prompts[0], Fixed(3), max_new_tokens=8).token_ids == refs[0]
    assert isinstance(engine.runner, StaticRunner)


def test_model_without_static_cache_falls_back_to_eager(capsys):
    target, _ = _pair(llama)
    runner = make_runner(NoStaticLM(target), "compiled")
    assert isinstance(runner, EagerRunner)
    assert "cannot use engine compiled" in capsys.readouterr().err


@pytest.mark.slow                       # torch.compile of every bucket: ~25 s on 2 cores
def test_compiled_engine_is_lossless_on_cpu():
    """torch.compile path (no CUDA graphs on CPU): same tokens as the eager engine."""
    target, draft = _pair(llama, vocab=32)
    engine = SpecEngine(target, ModelDrafter(draft), engine="compiled", capacity=128)
    engine.prepare(3)
    prompt = [1, 2, 3]
    ar = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=20)
    out = engine.generate(prompt, Fixed(3), max_new_tokens=20)
    assert engine.engine == "compiled" and out.token_ids == ar.token_ids


def test_features_asked_after_capture_are_captured_again():
    """A compiled runner prepared before an EAGLE head asked for features captures its graphs again at the next
    reset (a graph's outputs are fixed at capture: on CUDA the features would otherwise be missing)."""
    target, _ = _pair(llama, vocab=32)
    runner = make_runner(target, "compiled", capacity=64, inductor=False)     # the capture bookkeeping, uncompiled
    runner.prepare(2)
    assert runner._captured_for == (False, (-1,))
    runner.keep_features = True
    runner.reset()
    assert runner._captured_for == (True, (-1,)) and sorted(runner._buckets) == [1, 2]
    runner.forward([1, 2, 3])
    runner.forward([4])
    assert runner.features is not None and runner.features.shape[0] == 1
