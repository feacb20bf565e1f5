"""Spec-Bench loader, filters, bad input, templates and answer-file round trip."""
import json
from pathlib import Path

import pandas as pd
import pytest

from jobs.store.answers import answer_records, read_answers, write_all
from jobs.dataset import CATEGORIES, GROUPS, SAMPLE_EXTRA, load_questions, parse_jsonl
from actors.loading.templates import VICUNA_SYSTEM, render
from policies.errors import SpecsweepError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "spec_bench" / "question.jsonl"


def test_sample_covers_every_category_with_two_turn_mt_bench():
    qs = load_questions("sample")
    assert {q.category for q in qs} == set(CATEGORIES) | set(SAMPLE_EXTRA)
    # 26 Spec-Bench-category questions, then 8 repetitive editing ones (code editing, multi-turn rewriting; for
    # suffix decoding, issue 42), ids 9027–9034, each with at least two turns
    editing = [q for q in qs if q.category in SAMPLE_EXTRA]
    assert len(qs) == 34 and [q.question_id for q in editing] == list(range(9027, 9035))
    assert all(len(q.turns) >= 2 for q in editing)
    assert len(load_questions("sample", categories=["editing"])) == 8
    assert all(len(q.turns) == 2 for q in qs if q.category in GROUPS["mt_bench"])


@pytest.mark.skipif(not SHARED.exists(), reason="shared Spec-Bench copy not present")
def test_real_specbench_file_loads():
    qs = load_questions(str(SHARED))
    assert len(qs) == 480 and qs[0].question_id == 81 and qs[-1].question_id == 560
    assert sum(len(q.turns) for q in qs) == 560
    assert len(load_questions(str(SHARED), categories=["rag"], limit_per_category=3)) == 3


def test_filters_and_bad_filters():
    assert [q.question_id for q in load_questions("sample", question_ids=[9001, 9021])] == [9001, 9021]
    with pytest.raises(SpecsweepError, match="valid categories are"):
        load_questions("sample", categories=["poetry"])
    with pytest.raises(SpecsweepError, match="question id 9001 is not in sample in categories"):
        load_questions("sample", categories=["qa"], question_ids=[9001])
    with pytest.raises(SpecsweepError, match=r"question id 123 is not in sample: valid ids are 9001–"):
        load_questions("sample", question_ids=[9021, 123])


@pytest.mark.parametrize("line,msg", [
    ("{not json", ":2: not valid JSON"), ('{"question_id": 5, "category": "qa", "turns": []}', "has no turns"),
    ('{"question_id": 5, "category": "qa", "turns": [3]}', "not a non-empty string"),
    ('{"question_id": 5, "category": "qa"}', "missing field 'turns'"),
])
def test_malformed_lines_are_named(tmp_path, line, msg):
    f = tmp_path / "q.jsonl"
    f.write_text('{"question_id": 1, "category": "qa", "turns": ["hi"]}\n' + line + "\n")
    with pytest.raises(SpecsweepError, match=msg) as e:
        parse_jsonl(f)
    assert str(f) in str(e.value)


def test_vicuna_template_multi_turn():
    from actors.loading.tiny_pair import char_tokenizer

    tok = char_tokenizer()
    ids = render("vicuna", tok, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                                 {"role": "user", "content": "ok?"}])
    assert tok.decode(ids) == VICUNA_SYSTEM + " USER: hi ASSISTANT: yo</s>USER: ok? ASSISTANT:"


def test_vicuna_text_is_fastchats():
    from actors.loading.templates import vicuna_text

    system = ("A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
              "detailed, and polite answers to the user's questions.")
    # FastChat vicuna_v1.1, written out by hand: sep " " after the system and each user turn, sep2 "</s>" after answers
    assert vicuna_text([{"role": "user", "content": "q1"}]) == system + " USER: q1 ASSISTANT:"
    assert vicuna_text([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                        {"role": "user", "content": "q2"}]) == system + " USER: q1 ASSISTANT: a1</s>USER: q2 ASSISTANT:"


ONE = [{"role": "user", "content": "q1"}]
TWO = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]


def test_llama2_llama3_chatml_texts_are_fastchats():
    """Written out by hand from FastChat's LLAMA2, LLAMA3 and CHATML get_prompt rules (an empty assistant turn ends
    each prompt, as Spec-Bench appends it)."""
    from actors.loading.templates import chatml_text, llama2_text, llama3_text

    assert llama2_text(ONE) == "[INST] q1 [/INST]"
    assert llama2_text(TWO) == "[INST] q1 [/INST] a1 </s><s>[INST] q2 [/INST]"
    assert llama2_text(ONE, system="Be brief.") == "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nq1 [/INST]"
    head = "<|start_header_id|>{}<|end_header_id|>\n\n"
    assert llama3_text(ONE) == ("<|begin_of_text|>" + head.format("user") + "q1<|eot_id|>" + head.format("assistant"))
    assert llama3_text([{"role": "user", "content": "  q1 \n"}], system="S") == (
        "<|begin_of_text|>" + head.format("system") + "S<|eot_id|>" + head.format("user") + "q1<|eot_id|>"
        + head.format("assistant"))
    assert llama3_text(TWO).count("<|eot_id|>") == 3 and llama3_text(TWO).endswith(head.format("assistant"))
    assert chatml_text(ONE) == ("<|im_start|>system\n<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n"
                                "<|im_start|>assistant\n")
    assert chatml_text(TWO, system="S") == ("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n"
                                            "<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n"
                                            "<|im_start|>assistant\n")


@pytest.mark.parametrize("template", ["llama-2", "chatml"])
def test_fastchat_templates_render_their_text(template):
    from actors.loading.templates import FASTCHAT, render
    from actors.loading.tiny_pair import char_tokenizer

    tok = char_tokenizer()
    assert tok.decode(render(template, tok, TWO)) == FASTCHAT[template](TWO)


def test_answer_file_round_trip(tmp_path):
    rows = pd.DataFrame([
        {"pair": "p", "policy_spec": "fixed", "policy": "fixed", "gamma": 4, "repeat": 0, "question_id": 81, "category": "writing",
         "turn": t, "text": f"answer {t}", "decoding_steps": 3 + t, "new_tokens": 7 + t, "wall_time": 0.5 + t,
         "accept_lengths": [2, 3, 2 + t], "status": "ok"} for t in (1, 0)])
    [path] = write_all(rows, tmp_path)
    back = read_answers(path)
    assert back == [json.loads(line) for line in path.read_text().splitlines()]
    c = back[0]["choices"][0]
    assert back[0]["question_id"] == 81 and back[0]["model_id"] == "target=p draft=None policy=fixed gamma=4"
    assert c["turns"] == ["answer 0", "answer 1"] and c["new_tokens"] == [7, 8] and c["wall_time"] == [0.5, 1.5]
    assert c["decoding_steps"] == [3, 4] and c["accept_lengths"] == [2, 3, 2, 2, 3, 3]
    # Spec-Bench speed.py's arithmetic on our file
    assert sum(c["new_tokens"]) / sum(c["wall_time"]) == pytest.approx(15 / 2.0)
    assert answer_records(rows, "m")[0]["answer_id"] != answer_records(rows, "m")[0]["answer_id"]   # random, as FastChat


def test_answer_ids_random_tstamp_per_question_model_id_names_the_run(tmp_path):
    base = {"pair": "p", "target": "vicuna-7b", "draft": "vicuna-68m", "repeat": 0, "category": "qa", "turn": 0,
            "text": "a", "decoding_steps": 1, "new_tokens": 1, "wall_time": 0.1, "accept_lengths": [1], "status": "ok"}
    rows = pd.DataFrame([{**base, "policy": "fixed", "policy_spec": "fixed", "gamma": 3, "question_id": q, "tstamp": 1000.0 + q}
                         for q in (1, 2)] + [{**base, "policy": "ar", "policy_spec": "ar", "gamma": 0, "question_id": 1,
                                              "tstamp": 5.0}])
    paths = {p.name.split("__")[1]: read_answers(p) for p in write_all(rows, tmp_path)}
    fixed, ar = paths["fixed"], paths["ar"]
    assert [a["tstamp"] for a in fixed] == [1001.0, 1002.0] and ar[0]["tstamp"] == 5.0
    assert fixed[0]["model_id"] == "target=vicuna-7b draft=vicuna-68m policy=fixed gamma=3"
    assert ar[0]["model_id"] == "target=vicuna-7b policy=ar"
    ids = [a["answer_id"] for a in fixed + ar] + [read_answers(p)[0]["answer_id"] for p in write_all(rows, tmp_path)]
    assert len(set(ids)) == len(ids) and all(len(i) == 22 for i in ids)   # random: new ids on every write
