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


@pytest.mark.slow                       # a chi-square run (13 s on a 2-core Xeon): CI runs it
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


def fake_probe(table, calls=None):
    """A probe answering [(dense, packed) seconds per width] from ``table`` by (in, out, bias)."""
    def probe(linear):
        key = (linear.in_features, linear.out_features, linear.bias is not None)
        if calls is not None:
            calls.append(key)
        return table[key]
    return probe


def test_packing_pays_only_below_the_margin_at_every_width_and_measures_each_shape_once(monkeypatch):
    monkeypatch.setattr(cpu_pack, "_verdicts", {})
    calls = []
    probe = fake_probe({(8, 16, True): [(1.0, 0.5), (2.0, 1.0)],      # packed wins at both widths
                        (8, 16, False): [(1.0, 1.2), (2.0, 1.0)],     # loses the one-row call: stays dense
                        (16, 8, True): [(1.0, 1.5), (2.0, 3.0)],
                        (8, 8, True): [(1.0, 0.95), (2.0, 1.9)]}, calls)  # 0.95: inside the margin, a near tie
    layers = [torch.nn.Linear(8, 16), torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8),
              torch.nn.Linear(8, 8), torch.nn.Linear(8, 16)]
    assert [cpu_pack.packing_pays(layer, probe) for layer in layers] == [True, False, False, False, True]
    assert calls == [(8, 16, True), (8, 16, False), (16, 8, True), (8, 8, True)]   # the last layer reuses a verdict
    model = torch.nn.Sequential(*layers)
    assert cpu_pack.pack_linears(model, lambda layer: cpu_pack.packing_pays(layer, probe)) == 2
    assert [type(m) is PackedLinear for m in model] == [True, False, False, False, True]
    assert cpu_pack.packed_layers(model, model, None) == 2


def test_probe_seconds_times_both_forms_at_each_width_on_this_machine():
    times = cpu_pack.probe_seconds(torch.nn.Linear(32, 64))
    assert len(times) == len(cpu_pack.PROBE_WIDTHS) and all(0 < t < 1 for pair in times for t in pair)


def test_an_auto_pair_packs_exactly_the_shapes_its_probe_finds_faster(paths, monkeypatch):
    """The pair's default mode (``auto``) asks :func:`packing_pays`, which reads the probe: a probe saying that only
    layers widening their input pay packs exactly those, in the target and the draft LM; decoding is unchanged."""
    target, draft, _ = paths
    monkeypatch.setattr(cpu_pack, "_verdicts", {})
    monkeypatch.setattr(cpu_pack, "probe_seconds",
                        lambda linear: [(1.0, 0.5 if linear.out_features > linear.in_features else 2.0)])
    auto = Pair(PairConfig(target=target, draft=draft, cpu_pack="auto"))
    plain = Pair(PairConfig(target=target, draft=draft, cpu_pack="never"))
    for packed_model, dense_model in ((auto.target, plain.target), (auto.draft_model, plain.draft_model)):
        was = {name: (m.in_features, m.out_features) for name, m in dense_model.named_modules()
               if type(m) is torch.nn.Linear}
        now = {name for name, m in packed_model.named_modules() if isinstance(m, PackedLinear)}
        assert now == {name for name, (i, o) in was.items() if o > i} and now      # some, not all
        assert len(now) < len(was)
    assert auto.packed == cpu_pack.packed_layers(auto.target, auto.draft_model) > 0
    ids = auto.tokenizer("hello there, how are you")["input_ids"]
    out = [p.engine.generate(ids, build("fixed", 3), max_new_tokens=10).token_ids for p in (auto, plain)]
    assert out[0] == out[1]


def test_the_default_mode_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SPECSWEEP_CPU_PACK", "always")
    assert PairConfig().cpu_pack == "always"
    monkeypatch.delenv("SPECSWEEP_CPU_PACK")
    assert PairConfig().cpu_pack == "auto"


def test_a_bad_cpu_pack_mode_is_one_line(paths):
    target, draft, _ = paths
    with pytest.raises(SpecsweepError, match="cpu_pack 'yes' is not valid: use one of auto, always, never"):
        Pair(PairConfig(target=target, draft=draft, cpu_pack="yes"))
