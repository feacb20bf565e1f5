"""``actors/runtime/cpu_pack.py`` as a pair runs it: an eager CPU float32 pair packs its target's and draft LM's linear
weights once (``always``), or the layer shapes this machine measures faster packed (``auto``, the default), counts its
parameters as loaded, keeps the LM head's weight for EAGLE heads, and decodes what the same pair unpacked decodes
(greedy; lossless either way); a static pair is left unpacked."""
import pytest
import torch

from actors.drafting.eagle_head import init_head, save_head
from actors.loading.models import ModelSpec, load_model
from actors.loading.tiny_pair import save_tiny_pair
from actors.pair import Pair, PairConfig
from actors.runtime import cpu_pack
from actors.runtime.cpu_pack import PackedLinear
from policies import build
from policies.errors import SpecsweepError


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
    packed = Pair(PairConfig(target=target, draft=name, cpu_pack="always"))
    plain = Pair(PairConfig(target=target, draft=name, cpu_pack="never"))
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


def test_packing_pays_only_below_the_margin_and_measures_each_shape_once(monkeypatch):
    monkeypatch.setattr(cpu_pack, "_verdicts", {})
    calls = []

    def probe(linear):                      # (dense, packed) seconds: packed wins only for the 8 → 16 shape
        calls.append((linear.in_features, linear.out_features))
        return {(8, 16): (1.0, 0.5), (16, 8): (1.0, 1.5), (8, 8): (1.0, 0.95)}[calls[-1]]

    layers = [torch.nn.Linear(8, 16), torch.nn.Linear(16, 8), torch.nn.Linear(8, 8), torch.nn.Linear(8, 16, bias=True)]
    verdicts = [cpu_pack.packing_pays(layer, probe) for layer in layers]
    assert verdicts == [True, False, False, True]            # 0.95 is inside the margin: a near tie stays dense
    assert calls == [(8, 16), (16, 8), (8, 8)]                # the second 8 → 16 layer reuses the verdict
    model = torch.nn.Sequential(*layers)
    assert cpu_pack.pack_linears(model, lambda layer: cpu_pack.packing_pays(layer, probe)) == 2
    assert [type(m) is PackedLinear for m in model] == [True, False, False, True]


def test_probe_seconds_times_both_forms_on_this_machine():
    dense_s, packed_s = cpu_pack.probe_seconds(torch.nn.Linear(32, 64))
    assert 0 < dense_s < 1 and 0 < packed_s < 1


def test_an_auto_pair_packs_exactly_the_shapes_measured_faster_and_decodes_the_same(paths, monkeypatch):
    target, draft, _ = paths
    monkeypatch.setattr(cpu_pack, "_verdicts", {})
    auto = Pair(PairConfig(target=target, draft=draft))                      # the default: auto
    plain = Pair(PairConfig(target=target, draft=draft, cpu_pack="never"))
    expected = sum(cpu_pack.packing_pays(m) for model in (plain.target, plain.draft_model) for m in model.modules()
                   if type(m) is torch.nn.Linear)                           # the verdicts auto used, kept per shape
    assert auto.packed == expected
    ids = auto.tokenizer("hello there, how are you")["input_ids"]
    out = [p.engine.generate(ids, build("fixed", 3), max_new_tokens=10).token_ids for p in (auto, plain)]
    assert out[0] == out[1]


def test_a_bad_cpu_pack_mode_is_one_line(paths):
    target, draft, _ = paths
    with pytest.raises(SpecsweepError, match="cpu_pack 'yes' is not valid: use one of auto, always, never"):
        Pair(PairConfig(target=target, draft=draft, cpu_pack="yes"))
