"""Sampling: the first 3 emitted tokens follow the target's exact joint distribution."""
import pytest
import torch

import actors.core.engine as engine_mod
from actors.core.acceptance import accept_sampling
from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.core.engine import SpecEngine
from policies.fixed import Fixed
from actors.loading.tiny_pair import gpt2, llama
from tests.helpers import PROMPT, sampling_pair
from tests.sampling_check import SAMPLED_RUNS as RUNS, chi_square_pvalue, exact_joint, sample_runs


@pytest.mark.parametrize("arch", [llama, pytest.param(gpt2, marks=pytest.mark.slow)], ids=["llama", "gpt2"])
def test_model_drafter_matches_target_distribution(arch):
    target, draft = sampling_pair(arch)
    probs = exact_joint(target, PROMPT, 3, 1.0)
    runs = sample_runs(SpecEngine(target, ModelDrafter(draft)), Fixed(4), PROMPT, 3, RUNS)
    assert chi_square_pvalue(runs, probs) > 1e-3


def test_ngram_drafter_matches_target_distribution():
    target, _ = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 1.0)
    runs = sample_runs(SpecEngine(target, NgramDrafter()), Fixed(3), PROMPT, 3, RUNS, seed0=7)
    assert chi_square_pvalue(runs, probs) > 1e-3


@pytest.mark.slow        # the plain-temperature tests above stay in the fast tier
def test_temperature_and_top_p():
    target, draft = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 0.7, top_p=0.9)
    runs = sample_runs(SpecEngine(target, ModelDrafter(draft)), Fixed(2), PROMPT, 3, RUNS, temperature=0.7,
                       top_p=0.9, seed0=3)
    assert chi_square_pvalue(runs, probs) > 1e-3


def _resample_from_p(p, q_rows, drafted, generator):
    """A deliberately broken rule: resample a rejected position from p instead of norm(max(0, p − q))."""
    k = len(drafted)
    for i in range(k):
        q_tok = 1.0 if q_rows[i] is None else float(q_rows[i][drafted[i]])
        if torch.rand(1, generator=generator).item() * q_tok > p[i, drafted[i]].item():
            return i, int(torch.multinomial(p[i], 1, generator=generator))
    return k, int(torch.multinomial(p[k], 1, generator=generator))


@pytest.mark.slow                       # checks the checker: a broken rule must fail it
def test_chi_square_detects_a_broken_acceptance_rule(monkeypatch):
    """The same test must fail when the residual is replaced by p — otherwise it proves nothing."""
    target, draft = sampling_pair()
    probs = exact_joint(target, PROMPT, 3, 1.0)
    monkeypatch.setattr(engine_mod, "accept_sampling", _resample_from_p)
    runs = sample_runs(SpecEngine(target, ModelDrafter(draft)), Fixed(4), PROMPT, 3, RUNS)
    assert chi_square_pvalue(runs, probs) < 1e-6


def test_correct_rule_is_the_one_in_use():
    assert engine_mod.accept_sampling is accept_sampling
