"""Release-layout heads end to end (issue 42, items 1 and 5): a random head in each layout (EAGLE-1/2, EAGLE-3) built
from a small random target config loads and drafts losslessly at B = 1 and B = 4 with chains and the EAGLE-2 tree
(greedy equals target-only; sampling follows the target, chi-square); the runners' ``feature_layers`` seam and the
EAGLE-3 layer convention; malformed heads refused in one line with nothing executed; the ``eagle3`` kind in the
registry, the memory plan, pairs and replay."""
import pytest
import torch

from actors.drafting.eagle3_drafter import Eagle3Drafter
from actors.drafting.eagle3_head import random_eagle3_head
from actors.drafting.eagle_drafter import EagleDrafter
from actors.drafting.eagle_head import init_head, read_state, save_head
from actors.core.engine import SpecEngine
from actors.drafting.head_files import aux_layers
from actors.loading.tiny_pair import llama, sharpen
from policies import build
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly
from tests.sampling_check import SAMPLED_RUNS, chi_square_pvalue, exact_joint

PROMPTS = [[3, 4, 5], [1, 2, 1, 2, 1, 2, 1], [7], [9, 9, 0, 4]]
SPECS = ["fixed", "gammatune", "eagle2:depth=3,topk=3,n=10"]


def _target(vocab=12, layers=5, seed=5):
    """A small random Llama target (5 decoder layers: the paper's default layers 2, 2, 2 fit)."""
    return sharpen(llama(vocab=vocab, layers=layers, hidden=32, seed=seed))


def _ar(target, prompt, limit):
    return SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=limit).token_ids


def _layouts(tmp_path, target):
    """(name, drafter) of one random head per release layout, safetensors and weights-only .bin."""
    e12 = save_head(init_head(target, seed=3), tmp_path / "eagle12")
    bin12 = tmp_path / "eagle12-bin"
    bin12.mkdir()
    (bin12 / "config.json").write_text((e12 / "config.json").read_text())
    torch.save(read_state(e12), bin12 / "pytorch_model.bin")
    e3 = random_eagle3_head(target, tmp_path / "eagle3", draft_vocab=9, seed=1, scale=3.0)
    e3bin = random_eagle3_head(target, tmp_path / "eagle3-bin", seed=2, scale=3.0, layers=[0, 4, 2], bin_file=True)
    return [("eagle12", EagleDrafter.from_folder(e12, target)), ("eagle12-bin", EagleDrafter.from_folder(bin12, target)),
            ("eagle3", Eagle3Drafter.from_folder(e3, target)), ("eagle3-bin", Eagle3Drafter.from_folder(e3bin, target))]


# ---------------------------------------------------------------- the features seam and the layer convention
def test_feature_layers_default_is_the_final_hidden_state_and_layers_concatenate():
    """Every runner keeps ``output_hidden_states[-1]`` by default (unchanged), and the entries ``feature_layers``
    concatenated in order when set."""
    from actors.runtime.batch_runner import BatchRunner
    from actors.runtime.row_runners import OneRow
    from actors.runtime.runners import EagerRunner, StaticRunner

    target = _target()
    ids = [3, 4, 5, 6]
    hs = target(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    for layers, want in (((-1,), hs[-1][0]), ((2, 0, 4), torch.cat([hs[2][0], hs[0][0], hs[4][0]], -1))):
        for runner in (EagerRunner(target), StaticRunner(target, 64), OneRow(EagerRunner(target))):
            runner.keep_features = True
            if layers != (-1,):
                runner.feature_layers = layers
            runner.reset()
            runner.forward([ids]) if isinstance(runner, OneRow) else runner.forward(ids)
            got = runner.features[0] if isinstance(runner.features, list) else runner.features
            assert torch.allclose(got, want, atol=1e-5), (type(runner).__name__, layers)
        batch = BatchRunner(target)
        batch.keep_features, batch.feature_layers = True, layers
        batch.reset(2)
        batch.forward([ids, ids[:2]])
        assert torch.allclose(batch.features[0], want, atol=1e-5) and torch.allclose(batch.features[1], want[:2], atol=1e-5)


def test_an_eagle3_layer_id_is_the_hidden_state_entering_that_decoder_layer():
    """Layer id L = transformers' ``output_hidden_states[L]`` = the input of decoder layer L (entry 0 the embedding
    output); the default ids are the paper's (2, N // 2, N − 3); ids come from the top level or ``eagle_config``."""
    target = _target()
    seen = {}
    hooks = [layer.register_forward_pre_hook(lambda mod, args, kw, i=i: seen.__setitem__(i, args[0] if args else
                                                                                          kw["hidden_states"]),
                                             with_kwargs=True) for i, layer in enumerate(target.model.layers)]
    hs = target(input_ids=torch.tensor([[1, 2, 3]]), output_hidden_states=True).hidden_states
    for h in hooks:
        h.remove()
    assert len(hs) == 6 and all(torch.equal(hs[i], seen[i]) for i in range(5))
    assert aux_layers({}, 32, "w") == (2, 16, 29) and aux_layers({}, 5, "w") == (2, 2, 2)
    assert aux_layers({"eagle_aux_hidden_state_layer_ids": [1, 3]}, 5, "w") == (1, 3)
    assert aux_layers({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 4, 2]}}, 5, "w") == (0, 4, 2)
    for cfg, n, msg in (({}, 2, "at least 4"), ({"eagle_aux_hidden_state_layer_ids": [1, 5]}, 5, "outside"),
                        ({"eagle_aux_hidden_state_layer_ids": [-1]}, 5, "outside"),
                        ({"eagle_aux_hidden_state_layer_ids": "2,3"}, 5, "list")):
        with pytest.raises(SpecsweepError, match=msg):
            aux_layers(cfg, n, "w")


def test_the_engine_hands_an_eagle3_head_its_layers_from_the_verify_forwards(tmp_path):
    target = _target()
    drafter = Eagle3Drafter.from_folder(random_eagle3_head(target, tmp_path / "h", layers=[0, 4, 2]), target)
    assert drafter.feature_layers == (0, 4, 2) and drafter.feature_width == 96
    engine = SpecEngine(target, drafter)
    assert engine.runners.feature_layers == (0, 4, 2)
    assert SpecEngine(target, EagleDrafter(init_head(target), target)).runners.feature_layers == (-1,)


# ---------------------------------------------------------------- lossless in each layout
@pytest.mark.parametrize("spec", SPECS)
def test_each_layout_is_lossless_at_b1_and_b4(spec, tmp_path):
    """Greedy: every row equals target-only at B = 1 and B = 4 (chains and the EAGLE-2 tree), both layouts, both
    weight files; the drafts are not all rejected (the heads are random but peaked over a small vocabulary)."""
    target = _target()
    ars = [_ar(target, p, 24) for p in PROMPTS]
    for name, drafter in _layouts(tmp_path, target):
        engine = SpecEngine(target, drafter)
        accepted = 0
        for p, ar in zip(PROMPTS, ars):
            g = engine.generate(p, build(spec, 4), max_new_tokens=24)
            assert g.token_ids == ar, (name, spec, p)
            accepted += sum(g.accepted)
        rows = engine.generate_batch(PROMPTS, [build(spec, 4) for _ in PROMPTS], max_new_tokens=24)
        assert [g.token_ids for g in rows] == ars, (name, spec)
        assert accepted + sum(sum(g.accepted) for g in rows) > 0, name


def test_draft_probabilities_live_on_the_draft_vocabulary(tmp_path):
    """q is zero outside the target ids d + d2t[d]; a one-to-one map; greedy drafts are mapped target ids."""
    target = _target()
    head_dir = random_eagle3_head(target, tmp_path / "h", draft_vocab=5, seed=4, scale=3.0)
    drafter = Eagle3Drafter.from_folder(head_dir, target)
    ids = sorted(drafter.head.target_ids().tolist())
    assert len(ids) == 5 and ids == sorted(torch.nonzero(drafter.head.t2d).flatten().tolist())
    logits = drafter.draft_logits(torch.randn(3, 32))
    outside = [t for t in range(12) if t not in ids]
    assert torch.isinf(logits[:, outside]).all() and torch.isfinite(logits[:, ids]).all()
    q = torch.softmax(logits, -1)
    assert torch.allclose(q.sum(-1), torch.ones(3)) and q[:, outside].sum() == 0
    drafter.reset(1)
    drafter.see_features(0, 0, torch.randn(3, 96))
    drafter.begin([[1, 2, 3, 4]], [3])
    picks = [drafter.next([0])[0][0] for _ in range(3)]
    assert set(picks) <= set(ids)


def _sampling_target():
    return sharpen(llama(vocab=5, layers=4, hidden=16, seed=11), 2.0)


@pytest.mark.parametrize("rows", [pytest.param(1, marks=pytest.mark.slow), 4])   # B = 1: slow tier (CI runs both)
def test_eagle3_sampling_keeps_the_target_distribution(rows, tmp_path):
    """The first three sampled tokens follow the target's exact joint distribution at B = 1 and B = 4 (rows of a
    batch: independent generators, each row the target's), drafting over 3 of the 5 tokens."""
    target = _sampling_target()
    drafter = Eagle3Drafter.from_folder(random_eagle3_head(target, tmp_path / "s", draft_vocab=3, seed=13, scale=2.0),
                                        target)
    prompt = [1, 2, 3, 1, 2]
    probs = exact_joint(target, prompt, 3, 1.0)
    engine = SpecEngine(target, drafter)
    runs = []
    for i in range(SAMPLED_RUNS // rows):
        outs = engine.generate_batch([prompt] * rows, [build("fixed", 3) for _ in range(rows)], max_new_tokens=3,
                                     temperature=1.0, seeds=41 + rows * i)
        runs += [g.token_ids for g in outs]
    assert chi_square_pvalue(runs, probs) > 1e-3


@pytest.mark.parametrize("layout", ["eagle12", pytest.param("eagle3", marks=pytest.mark.slow)])
def test_sampling_on_a_static_tree_and_eagle12_batches(layout, tmp_path):
    """A static tree (sequoia) at B = 1 and EAGLE-1/2 chains at B = 4 keep the target's distribution too."""
    target = _sampling_target()
    if layout == "eagle3":
        drafter = Eagle3Drafter.from_folder(random_eagle3_head(target, tmp_path / "s", draft_vocab=4, seed=7), target)
        spec, rows = "sequoia:accept=0.5/0.3/0.2,budget=8,depth=2", 1
    else:
        drafter = EagleDrafter.from_folder(save_head(init_head(target, seed=13), tmp_path / "s"), target)
        spec, rows = "fixed", 4
    prompt = [1, 2, 3, 1, 2]
    engine = SpecEngine(target, drafter)
    runs = []
    for i in range(SAMPLED_RUNS // rows):
        outs = engine.generate_batch([prompt] * rows, [build(spec, 3) for _ in range(rows)], max_new_tokens=3,
                                     temperature=1.0, seeds=7 + rows * i)
        runs += [g.token_ids for g in outs]
    assert chi_square_pvalue(runs, exact_joint(target, prompt, 3, 1.0)) > 1e-3


def test_eagle3_teacher_forcing_feeds_static_trees_losslessly(tmp_path):
    """Per-rank acceptance read from the head's teacher-forced logits (the same target layers, one target forward)
    drives sequoia/gt-static trees; row i of those logits is the head's first proposal after seq[:i + 1]."""
    from actors.costs.calibrate import rank_acceptance
    from actors.core.proposal import propose_chain
    from actors.runtime.hf_api import hidden_features

    target = _target()
    drafter = Eagle3Drafter.from_folder(random_eagle3_head(target, tmp_path / "h", draft_vocab=9, seed=1, scale=3.0),
                                        target)
    seq = [3, 4, 5, 6, 7, 8]
    logits = drafter.teacher_forced_logits(target, seq)
    assert logits.shape == (5, 12)
    drafter.reset(1)
    out = target(input_ids=torch.tensor([seq[:3]]), output_hidden_states=True)
    drafter.see_features(0, 0, hidden_features(out.hidden_states, drafter.feature_layers)[0])
    first = propose_chain(drafter, seq[:4], 1, lambda *a: "more")           # x_1 after seq[:4], true features
    engine = SpecEngine(target, drafter)
    engine.rank_acceptance = rank_acceptance(target, lambda s: drafter.teacher_forced_logits(target, s), [[1, 2, 3, 4]],
                                             max_new_tokens=12)
    for spec in ("sequoia", "gt-static:c=0.05"):
        for p in PROMPTS[:2]:
            assert engine.generate(p, build(spec, 1), max_new_tokens=16).token_ids == _ar(target, p, 16), spec
    assert first.tokens == [int(logits[3].argmax())]


def test_eagle3_on_the_static_engine(tmp_path):
    """The static cache hands the same layers (``StaticRunner`` features) as the eager one: lossless, same drafts."""
    target = _target()
    folder = random_eagle3_head(target, tmp_path / "h", draft_vocab=9, seed=1, scale=3.0, layers=[1, 3, 4])
    outs = {}
    for kind in ("eager", "static"):
        engine = SpecEngine(target, Eagle3Drafter.from_folder(folder, target), engine=kind, capacity=128)
        outs[kind] = [engine.generate(p, build("fixed", 3), max_new_tokens=20) for p in PROMPTS]
        assert [g.token_ids for g in outs[kind]] == [_ar(target, p, 20) for p in PROMPTS], kind
    assert [g.accepted for g in outs["eager"]] == [g.accepted for g in outs["static"]]
