"""EAGLE heads: lossless drafting with every policy and tree (greedy and sampling), the release layout loader and
its refusals, and a pair built from ``eagle:PATH``."""
import json
import shutil
from pathlib import Path

import pytest
import torch

from actors.core.proposal import propose_chain
from actors.drafting.eagle_drafter import EagleDrafter
from actors.drafting.eagle_head import init_head, load_head, read_state, save_head
from actors.core.engine import SpecEngine
from actors.loading.reduced_vocab import ReducedVocabLM
from actors.loading.tiny_pair import gpt2, llama, sharpen
from policies import build
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly
from tests.helpers import PROMPT, sampling_pair
from tests.sampling_check import SAMPLED_RUNS, chi_square_pvalue, exact_joint, sample_runs
from policies.base import SequencePolicy, TreePolicy
from policies.registry import REGISTRY

COSTS = CostModel.measured(t_draft=0.002, t_verify={1: 0.02, 2: 0.021, 4: 0.022, 8: 0.025, 16: 0.03, 32: 0.05})
SEQUENCE = [n for n, (cls, _, _) in REGISTRY.items() if n != "ar" and issubclass(cls, SequencePolicy)]
TREES = [n for n, (cls, _, _) in REGISTRY.items() if issubclass(cls, TreePolicy)]
POLICIES = SEQUENCE + ["hf-heuristic:persist=true", "threshold:adaptive=true", "gammatune:expand=jump", "gt:c=0.3",
                       "bandit:reward=clock", "ema-steps:warmup=0,interval=1"]
BUILDERS = TREES + ["sequoia:accept=0.7/0.2/0.1,budget=16,depth=5", "gt-static:c=0.05,accept=0.7/0.2/0.1",
                    "eagle2:depth=4,topk=4,n=20", "gt-dynamic:c=0.02,topk=4,n_max=30"]


def _target(arch=llama, vocab=70, seed=5):
    return sharpen(arch(vocab=vocab, seed=seed))


TRAINED = Path(__file__).resolve().parent / "fixtures" / "eagle_tiny" / "head"   # tests/fixtures/eagle_tiny/make.py


@pytest.fixture
def llama_head(tmp_path):
    """A head trained for the tiny llama target (release layout; drafts that are often accepted), copied per test."""
    return _target(), Path(shutil.copytree(TRAINED, tmp_path / "llama"))


def _ar(target, prompt, limit):
    return SpecEngine(target).generate(prompt, TargetOnly(), max_new_tokens=limit).token_ids


def test_the_lists_cover_every_registered_policy():
    assert {"fixed", "gt", "oracle", "svip", "bandit", "ema-steps"} <= set(SEQUENCE)
    assert {"sequoia", "gt-static", "eagle2", "gt-dynamic"} <= set(TREES)


@pytest.mark.parametrize("spec", POLICIES)
def test_every_sequence_policy_is_lossless_on_the_head(spec, llama_head):
    target, folder = llama_head
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), costs=COSTS)
    for prompt in ([3], [4, 9, 2, 7, 7, 1, 30, 12]):
        ar = _ar(target, prompt, 35)
        for gamma in (1, 4, 12):
            assert engine.generate(prompt, build(spec, gamma), max_new_tokens=35).token_ids == ar, (prompt, gamma)


@pytest.mark.parametrize("spec", BUILDERS)
def test_every_tree_is_lossless_on_the_head(spec, llama_head):
    from actors.costs.calibrate import rank_acceptance

    target, folder = llama_head
    drafter = EagleDrafter.from_folder(folder, target)
    engine = SpecEngine(target, drafter, costs=COSTS)
    # accept=auto trees read the head's per-rank acceptance, measured with teacher forcing
    engine.rank_acceptance = rank_acceptance(target, lambda seq: drafter.teacher_forced_logits(target, seq),
                                             [[1, 2, 3, 4], [9, 8]], max_new_tokens=20)
    assert engine.rank_acceptance[0] > 0.2
    for prompt, limit in (([5, 9, 11, 23, 40], 40), ([7], 9), ([1, 2, 3, 1, 2, 3, 1, 2], 23)):
        g = engine.generate(prompt, build(spec, 1), max_new_tokens=limit)
        assert g.token_ids == _ar(target, prompt, limit), (spec, prompt)
        assert all(a <= d for a, d in zip(g.accepted, g.drafted))


def test_head_drafts_get_accepted_and_eos_inside_a_draft(llama_head):
    """Not vacuous: the head's drafts are accepted several at a time; an EOS inside a draft ends the output."""
    target, folder = llama_head
    prompt = [1, 2, 3, 4, 5, 6]
    free = _ar(target, prompt, 40)
    g = SpecEngine(target, EagleDrafter.from_folder(folder, target)).generate(prompt, build("fixed", 6),
                                                                              max_new_tokens=40)
    assert g.token_ids == free and max(g.accept_lengths) >= 3 and g.decoding_steps < 30
    eos = free[17]
    expect = free[: free.index(eos) + 1]
    for spec in ("fixed", "eagle2:depth=3,topk=3,n=10"):
        out = SpecEngine(target, EagleDrafter.from_folder(folder, target), eos_token_ids=[eos]).generate(
            prompt, build(spec, 5), max_new_tokens=40)
        assert out.token_ids == expect, spec


@pytest.mark.parametrize("engine_kind", ["eager", "static"])
def test_gpt2_target_and_static_engine(engine_kind, tmp_path):
    """Features are read from whatever base model the target has (post final norm), on either cache engine."""
    target = _target(gpt2, 60, 9)
    folder = save_head(init_head(target, seed=3), tmp_path / "g")
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), engine=engine_kind, capacity=256, costs=COSTS)
    for spec in ("fixed", "gt", "sequoia:accept=0.7/0.2/0.1,budget=12,depth=4"):
        assert engine.generate([3, 1, 4], build(spec, 4), max_new_tokens=30).token_ids == _ar(target, [3, 1, 4], 30)


def _sampling_head(tmp_path, kept=None):
    target, _ = sampling_pair()
    folder = save_head(init_head(target, seed=13), tmp_path / "s", kept=kept)
    return target, EagleDrafter.from_folder(folder, target)


@pytest.mark.parametrize("spec,kept", [pytest.param("fixed", [0, 2, 3], marks=pytest.mark.slow),   # both: slow tier
                                       pytest.param("sequoia:accept=0.5/0.3/0.2,budget=8,depth=2", None,
                                                    marks=pytest.mark.slow)])
def test_sampling_keeps_the_target_distribution(spec, kept, tmp_path):
    """Chains (full and frequent-token drafting vocabulary) and a static tree: the first three tokens follow the
    target's exact joint distribution."""
    target, drafter = _sampling_head(tmp_path, kept)
    probs = exact_joint(target, PROMPT, 3, 1.0)
    runs = sample_runs(SpecEngine(target, drafter, costs=COSTS), build(spec, 3), PROMPT, 3, SAMPLED_RUNS, seed0=41)
    assert chi_square_pvalue(runs, probs) > 1e-3


def test_subset_vocabulary_is_all_the_head_drafts(tmp_path):
    target, drafter = _sampling_head(tmp_path, kept=[1, 4])
    g = SpecEngine(target, drafter).generate(PROMPT, build("fixed", 4), max_new_tokens=12, temperature=1.0, seed=2)
    assert g.new_tokens == 12
    prop = propose_chain(drafter, PROMPT + g.token_ids[:1], 4, lambda *a: "more", sampled=True)
    assert set(prop.tokens) <= {1, 4}


# ---------------------------------------------------------------- the release layout
def test_bin_and_safetensors_load_the_same_head(llama_head, tmp_path):
    target, folder = llama_head
    state = read_state(folder)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "config.json").write_text((folder / "config.json").read_text())
    # the released layout spells every weight of layer 0 but its input norm, and may carry embeddings
    torch.save({**state, "embed_tokens.weight": target.get_input_embeddings().weight.detach().half()},
               bin_dir / "pytorch_model.bin")
    a, _ = load_head(folder, target)
    b, _ = load_head(bin_dir, target)
    assert b.embed_tokens is not None
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k]), k
    prompt = [4, 9, 2]
    for f in (folder, bin_dir):
        out = SpecEngine(target, EagleDrafter.from_folder(f, target)).generate(prompt, build("fixed", 4),
                                                                               max_new_tokens=20)
        assert out.token_ids == _ar(target, prompt, 20)


def test_pickle_with_code_is_refused(llama_head, tmp_path):
    target, folder = llama_head
    d = tmp_path / "evil"
    d.mkdir()
    (d / "config.json").write_text((folder / "config.json").read_text())
    torch.save({"fc.weight": torch.zeros(2), "hook": print}, d / "pytorch_model.bin")
    with pytest.raises(SpecsweepError, match="weights_only=True"):
        load_head(d, target)


def _refusal(folder, target):
    with pytest.raises(SpecsweepError) as e:
        load_head(folder, target)
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def test_mismatched_heads_are_refused_in_one_line(llama_head, tmp_path):
    target, folder = llama_head
    wide = save_head(init_head(_target(llama, 70, 5).__class__(
        type(target.config)(**{**target.config.to_dict(), "hidden_size": 64})), seed=1), tmp_path / "wide")
    assert "hidden size 64" in _refusal(wide, target) and "32" in _refusal(wide, target)
    other_vocab = save_head(init_head(_target(llama, 80, 5), seed=1), tmp_path / "vocab")
    msg = _refusal(other_vocab, target)
    assert "80" in msg and "70" in msg
    (tmp_path / "empty").mkdir()
    assert "config.json" in _refusal(tmp_path / "empty", target)
    neither = tmp_path / "neither"
    neither.mkdir()
    (neither / "config.json").write_text((folder / "config.json").read_text())
    torch.save({"model.embed_tokens.weight": torch.zeros(70, 32)}, neither / "pytorch_model.bin")
    assert "neither EAGLE layout" in _refusal(neither, target)
    eagle3 = tmp_path / "eagle3"
    eagle3.mkdir()
    (eagle3 / "config.json").write_text((folder / "config.json").read_text())
    torch.save({"fc.weight": torch.zeros(32, 96), "d2t": torch.zeros(10, dtype=torch.long),
                "midlayer.self_attn.q_proj.weight": torch.zeros(32, 64)}, eagle3 / "pytorch_model.bin")
    assert "EAGLE-3" in _refusal(eagle3, target)
    wrapped = ReducedVocabLM(target, list(range(10)), 70)
    assert "base model" in _refusal(folder, wrapped)


def test_pair_from_eagle_path_and_bad_paths(tmp_path):
    from actors.loading.models import ModelSpec, load_model
    from actors.pair import Pair, PairConfig
    from actors.loading.tiny_pair import save_tiny_pair

    target_path, _ = save_tiny_pair(tmp_path / "pair")
    folder = save_head(init_head(load_model(ModelSpec(target_path)), seed=2), tmp_path / "head")
    pair = Pair(PairConfig(target=target_path, draft=f"eagle:{folder}"))
    assert pair.cfg.drafter_kind == "eagle" and pair.drafter.name == "eagle"
    ids = pair.tokenizer("hello there")["input_ids"]
    ar = pair.engine.generate(ids, build("ar"), max_new_tokens=12).token_ids
    assert pair.engine.generate(ids, build("fixed", 4), max_new_tokens=12).token_ids == ar
    with pytest.raises(SpecsweepError, match="does not exist"):
        Pair(PairConfig(target=target_path, draft=f"eagle:{tmp_path / 'nope'}"))
    with pytest.raises(SpecsweepError, match="names no folder"):
        Pair(PairConfig(target=target_path, draft="eagle:"))
    (folder / "draft_vocab.json").write_text(json.dumps({"kept_ids": [0, 10 ** 6]}))
    with pytest.raises(SpecsweepError, match="outside the target's vocabulary"):
        Pair(PairConfig(target=target_path, draft=f"eagle:{folder}"))


# ---------------------------------------------------------------- replay
REPLAY_PROMPT = [1, 2, 3, 4, 5, 6]


def test_head_rollouts_replay_every_sequence_policy_step_for_step(llama_head):
    """Along the accepted path the head reads the target's own features, so a trace's rollouts reproduce every live
    step (docs/replay.md)."""
    from actors.tracing.replay import replay
    from actors.rollouts import record_trace

    target, folder = llama_head
    engine = SpecEngine(target, EagleDrafter.from_folder(folder, target), costs=COSTS)
    trace = record_trace(engine, REPLAY_PROMPT, max_new_tokens=24, pair="tiny", tokenizer_hash="h")
    assert trace.meta["method"] == "eagle"
    rep = replay(trace, build("fixed", 4))
    assert any(n > 0 for n in rep.accepted) and any(n < k for n, k in zip(rep.accepted, rep.drafted))
    for name in SEQUENCE:
        for gamma in (1, 3, 8):
            live = engine.generate(REPLAY_PROMPT, build(name, gamma), max_new_tokens=24)
            rep = replay(trace, build(name, gamma), costs=COSTS)
            steps = [[(s.k_max, s.drafted, s.accepted, s.emitted) for s in g.steps] for g in (live, rep)]
            assert rep.token_ids == live.token_ids and steps[0] == steps[1], (name, gamma)


# ---------------------------------------------------------------- training
@pytest.mark.slow
def test_training_raises_acceptance_resumes_and_writes_a_loadable_head(tmp_path):
    """``jobs/distill/eagle.py`` on a tiny target: the trained head (release layout, read back by the loader) accepts
    more than the untrained one, losslessly; a second call resumes from the checkpoint instead of starting over."""
    import random

    from jobs.distill.eagle import EagleDistillConfig, build_features, train_head

    target = _target()
    rng = random.Random(0)
    ar = SpecEngine(target)
    samples = []
    for _ in range(48):
        p = [rng.randrange(70) for _ in range(rng.randint(2, 10))]
        samples.append({"prompt_ids": p, "answer_ids": ar.generate(p, TargetOnly(), max_new_tokens=40).token_ids})
    feats = build_features(target, samples, tmp_path)
    assert [f.shape[0] for f in feats] == [len(s["prompt_ids"]) + len(s["answer_ids"]) for s in samples]
    cfg = EagleDistillConfig(out=str(tmp_path), steps=60, batch_size=8, lr=3e-3, warmup=10, save_every=30, unroll=2)
    head = init_head(target, seed=0)
    train_head(cfg, target, head, samples, feats, list(range(70)), None, tmp_path)
    cfg.steps = 150
    folder = train_head(cfg, target, init_head(target, seed=0), samples, feats, list(range(70)), None, tmp_path)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 150
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert curve[0]["step"] == 25 and curve[-1]["step"] == 150 and curve[-1]["loss"] < curve[0]["loss"]

    def mal(f):
        engine = SpecEngine(target, EagleDrafter.from_folder(f, target))
        lengths = []
        for p in ([1, 2, 3, 4, 5, 6], [4, 9, 2, 7, 7, 1, 30, 12], [11, 3]):
            g = engine.generate(p, build("fixed", 4), max_new_tokens=40)
            assert g.token_ids == _ar(target, p, 40)
            lengths += g.accept_lengths
        return sum(lengths) / len(lengths)

    untrained = save_head(init_head(target, seed=0), tmp_path / "untrained")
    assert mal(folder) > mal(untrained) + 0.3


def test_distill_eagle_refuses_bad_settings_in_one_line(tmp_path, capsys):
    from jobs.cli import main

    for flags, msg in ((["--unroll", "0"], "--unroll must be >= 1"), (["--steps", "0"], "--steps must be >= 1")):
        code = main(["distill", "--kind", "eagle", "--out", str(tmp_path / "o"), *flags])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and msg in err[0], (flags, err)
    assert not (tmp_path / "o").exists()
