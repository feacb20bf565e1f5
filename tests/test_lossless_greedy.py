"""Greedy speculative decoding must equal target-only decoding token for token."""
import pytest

from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from policies.fixed import Fixed, TargetOnly
from actors.loading.tiny_pair import gpt2, llama, perturbed, sharpen

GAMMAS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 24]


def _pair(arch, vocab):
    target = sharpen(arch(vocab=vocab, seed=vocab))
    return target, perturbed(target, 0.25, seed=vocab + 1)


def _drafter(kind, draft):
    return ModelDrafter(draft) if kind == "model" else NgramDrafter()


@pytest.mark.parametrize("arch", [llama, gpt2], ids=["llama", "gpt2"])
@pytest.mark.parametrize("vocab", [50, pytest.param(301, marks=pytest.mark.slow)])     # the larger vocabulary: slow tier
@pytest.mark.parametrize("kind", ["model", "ngram"])
def test_greedy_equals_ar_for_every_gamma(arch, vocab, kind):
    target, draft = _pair(arch, vocab)
    for plen in (1, 7, 33):
        prompt = [(3 * i + 1) % vocab for i in range(plen)]
        ar = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=40)
        engine = SpecEngine(target, _drafter(kind, draft))
        for gamma in GAMMAS:
            out = engine.generate(prompt, Fixed(gamma), max_new_tokens=40)
            assert out.token_ids == ar.token_ids, (plen, gamma)
            assert sum(out.accept_lengths) == out.new_tokens == 40


def test_drafts_are_actually_accepted():
    """Guard against a vacuous pass: the model drafter must get multi-token steps accepted."""
    target, draft = _pair(llama, 50)
    out = SpecEngine(target, ModelDrafter(draft)).generate([1, 2, 3], Fixed(4), max_new_tokens=40)
    assert max(out.accept_lengths) >= 3 and out.decoding_steps < 35


@pytest.mark.parametrize("arch", [llama, gpt2], ids=["llama", "gpt2"])
@pytest.mark.parametrize("kind", ["model", "ngram"])
def test_eos_inside_a_draft(arch, kind):
    target, draft = _pair(arch, 64)
    prompt = [5, 9, 11, 5, 9]
    free = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=30).token_ids
    for cut in (0, 3, 9, 17):
        eos = free[cut]
        expect = free[: free.index(eos) + 1]
        ar = SpecEngine(target, eos_token_ids=[eos]).generate(prompt, TargetOnly(), max_new_tokens=30)
        assert ar.token_ids == expect and ar.finished_by_eos
        engine = SpecEngine(target, _drafter(kind, draft), eos_token_ids=[eos])
        for gamma in (2, 5, 8, 24):
            out = engine.generate(prompt, Fixed(gamma), max_new_tokens=30)
            assert out.token_ids == expect, (cut, gamma)


@pytest.mark.parametrize("kind", ["model", "ngram"])
def test_max_new_tokens_inside_a_draft(kind):
    target, draft = _pair(llama, 64)
    prompt = [4, 8, 15, 16, 23, 42]
    full = SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=30).token_ids
    engine = SpecEngine(target, _drafter(kind, draft))
    for limit in (1, 2, 5, 7, 13):
        for gamma in (4, 8, 24):
            out = engine.generate(prompt, Fixed(gamma), max_new_tokens=limit)
            assert out.token_ids == full[:limit]
            assert all(d <= limit - 1 for d in out.drafted)


def test_mixed_architecture_pair():
    """A GPT-2 draft for a Llama target (same vocabulary) is still lossless."""
    target = sharpen(llama(vocab=80, seed=3))
    draft = gpt2(vocab=80, seed=4)
    ar = SpecEngine(target).generate([1, 2, 3, 4], TargetOnly(), max_new_tokens=25)
    out = SpecEngine(target, ModelDrafter(draft)).generate([1, 2, 3, 4], Fixed(5), max_new_tokens=25)
    assert out.token_ids == ar.token_ids
