"""``actors/runtime/cpu_pack.py`` as a pair runs it: an eager CPU float32 pair packs its target's and draft LM's linear
weights once, counts its parameters as loaded, keeps the LM head's weight for EAGLE heads, and decodes what the same
pair unpacked decodes (greedy; lossless either way); a static pair is left unpacked."""
import pytest
import torch

from actors.drafting.eagle_head import init_head, save_head
from actors.loading.models import ModelSpec, load_model
from actors.loading.tiny_pair import save_tiny_pair
from actors.pair import Pair, PairConfig
from actors.runtime.cpu_pack import PackedLinear
from policies import build


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    target, draft = save_tiny_pair(tmp / "pair")
    head = save_head(init_head(load_model(ModelSpec(target)), seed=2), tmp / "head")
    return target, draft, head


@pytest.mark.parametrize("which", ["draft", "eagle"])
def test_a_packed_pair_decodes_what_the_unpacked_pair_decodes(paths, which):
    target, draft, head = paths
    name = draft if which == "draft" else f"eagle:{head}"
    packed, plain = Pair(PairConfig(target=target, draft=name)), Pair(PairConfig(target=target, draft=name, cpu_pack=False))
    assert packed.packed > 0 and plain.packed == 0
    assert any(isinstance(m, PackedLinear) for m in packed.target.modules())
    assert not any(isinstance(m, PackedLinear) for m in plain.target.modules())
    assert packed.param_counts() == plain.param_counts()          # counted as loaded, before packing
    ids = packed.tokenizer("hello there, how are you")["input_ids"]
    for spec, gamma in (("ar", 1), ("fixed", 4), ("eagle2", 4)):
        out = [p.engine.generate(ids, build(spec, gamma), max_new_tokens=12).token_ids for p in (packed, plain)]
        assert out[0] == out[1]
    ar = packed.engine.generate(ids, build("ar"), max_new_tokens=12).token_ids
    assert packed.engine.generate_batch([ids, ids[:3]], [build("fixed", 3), build("fixed", 3)],
                                        max_new_tokens=12)[0].token_ids == ar          # batches: lossless


def test_a_static_pair_is_not_packed(paths):
    target, draft, _ = paths
    pair = Pair(PairConfig(target=target, draft=draft, engine="static", max_context=64))
    assert pair.packed == 0 and not any(isinstance(m, PackedLinear) for m in pair.target.modules())
    assert all(p.dtype == torch.float32 for p in pair.target.parameters())


def test_a_packed_pair_samples_from_the_packed_targets_distribution():
    """Sampling on packed weights: the first 3 emitted tokens follow the packed target's exact joint distribution
    (chi-square, the lossless tier's test on the pair as a CPU pair now runs)."""
    from actors.core.engine import SpecEngine
    from actors.drafting.drafters import ModelDrafter
    from actors.loading.tiny_pair import llama
    from actors.runtime.cpu_pack import pack_linears
    from policies.fixed import Fixed
    from tests.helpers import PROMPT, sampling_pair
    from tests.sampling_check import SAMPLED_RUNS, chi_square_pvalue, exact_joint, sample_runs

    target, draft = sampling_pair(llama)
    assert pack_linears(target) > 0 and pack_linears(draft) > 0
    probs = exact_joint(target, PROMPT, 3, 1.0)
    runs = sample_runs(SpecEngine(target, ModelDrafter(draft)), Fixed(4), PROMPT, 3, SAMPLED_RUNS)
    assert chi_square_pvalue(runs, probs) > 1e-3
