"""Question files by path: MT-Bench and SPEED-Bench style JSONL, and one line for each refusal.

Every file is written into the test's tmp folder (no download, no model): the accepted fields of
``jobs/question_file.py``, the id mapping of SPEED-Bench's string ids, each refusal as one line
naming the file and line, and a sweep config with such a path through ``load_config``,
``load_questions`` and the CLI (``specsweep: error: …``, exit 2, nothing written).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from jobs.config import load_config
from jobs.dataset import load_questions
from jobs.question_file import FIELDS, TURNS_PLACEHOLDER, numeric_id, parse_jsonl
from policies.errors import SpecsweepError

MT_BENCH = [
    {"question_id": 81, "category": "writing", "turns": ["Write a travel blog post.", "Rewrite it in limericks."]},
    {"question_id": 111, "category": "math", "turns": ["What is 2 + 2?", "And times 3?"], "reference": ["4", "12"]},
    {"question_id": 131, "category": "extraction", "turns": ["List the names."], "reference": None},
]
SPEED = [
    {"question_id": "a3f9c2", "category": "coding", "sub_category": "livecodebench", "turns": ["Write fizzbuzz."],
     "source": "livecodebench/code_generation_lite", "src_id": "1873_A", "difficulty": "easy", "multiturn": False},
    {"question_id": "77", "category": "multilingual", "sub_category": None, "turns": ["Translate: hi", "Now: bye"],
     "source": "Helsinki-NLP/opus-100", "src_id": "opus_de-en_3", "difficulty": None, "multiturn": True},
    {"question_id": "b-12", "category": "rag", "turns": ["Context: x. Question: y?"]},
]


def write(tmp: Path, rows, name: str = "q.jsonl") -> Path:
    p = tmp / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return p


def refusal(path: Path) -> str:
    with pytest.raises(SpecsweepError) as e:
        parse_jsonl(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}:"), msg
    return msg


# ------------------------------------------------------------------------------------------ formats

def test_mt_bench_question_jsonl(tmp_path):
    qs = parse_jsonl(write(tmp_path, MT_BENCH))
    assert [q.question_id for q in qs] == [81, 111, 131]
    assert qs[0].turns == ("Write a travel blog post.", "Rewrite it in limericks.") and qs[0].category == "writing"
    assert qs[1].reference == ("4", "12") and qs[2].reference == ()


def test_speed_bench_rows_and_their_string_ids(tmp_path):
    qs = parse_jsonl(write(tmp_path, SPEED))
    assert [q.category for q in qs] == ["coding", "multilingual", "rag"]
    assert qs[1].question_id == 77 and qs[1].turns == ("Translate: hi", "Now: bye")   # a decimal string: that number
    want = int(hashlib.sha256(b"a3f9c2").hexdigest()[:12], 16)
    assert qs[0].question_id == want == numeric_id("a3f9c2") < 2 ** 48
    again = parse_jsonl(write(tmp_path, list(reversed(SPEED)) + MT_BENCH, "mixed.jsonl"))  # any order, mixed formats
    assert {q.question_id for q in again} == {q.question_id for q in qs} | {81, 111, 131}


def test_sweep_config_with_such_a_path_loads(tmp_path):
    for name, rows in (("mt.jsonl", MT_BENCH), ("speed.jsonl", SPEED)):
        path = write(tmp_path, rows, name)
        cfg_file = tmp_path / f"{name}.yaml"
        cfg_file.write_text(f"name: files\noutput: {tmp_path / 'out'}\npairs: [{{target: t, draft: d}}]\n"
                            f"policies: [fixed]\ndataset: {{source: {path}}}\n")
        cfg = load_config(str(cfg_file))
        assert cfg.dataset.source == str(path)
        qs = load_questions(cfg.dataset.source, cfg.dataset.categories, cfg.dataset.limit_per_category,
                            cfg.dataset.question_ids)
        assert len(qs) == len(rows)
    # a category only the file holds is a valid filter of that file, not of sample
    cfg_file = tmp_path / "multi.yaml"
    cfg_file.write_text(f"name: files\noutput: {tmp_path / 'out'}\npairs: [{{target: t, draft: d}}]\n"
                        "policies: [fixed]\n"
                        f"dataset: {{source: {tmp_path / 'speed.jsonl'}, categories: [multilingual]}}\n")
    ds = load_config(str(cfg_file)).dataset
    assert [q.question_id for q in load_questions(ds.source, ds.categories)] == [77]
    with pytest.raises(SpecsweepError, match="unknown category 'poetry': valid categories are .*multilingual"):
        load_questions(ds.source, ["poetry"])
    cfg_file.write_text(cfg_file.read_text().replace(str(tmp_path / "speed.jsonl"), "sample"))
    with pytest.raises(SpecsweepError, match=r"config dataset.categories\[0\]: unknown category 'multilingual'"):
        load_config(str(cfg_file))


# ------------------------------------------------------------------------------------------ refusals

GOOD = {"question_id": 1, "category": "qa", "turns": ["hi"]}


@pytest.mark.parametrize("row,needle", [
    ({**GOOD, "question_id": 2, "answer": "x"}, "unknown field 'answer' (valid fields: " + ", ".join(FIELDS) + ")"),
    ({**GOOD, "question_id": 2, "prompt": "x"}, "unknown field 'prompt'"),
    ({**GOOD, "question_id": 2.5}, "question_id must be an integer or a non-empty string, got 2.5"),
    ({**GOOD, "question_id": True}, "question_id must be an integer or a non-empty string, got True"),
    ({**GOOD, "question_id": " "}, "question_id must be an integer or a non-empty string"),
    ({**GOOD, "question_id": 2, "category": 7}, "category must be a non-empty string, got 7"),
    ({**GOOD, "question_id": 2, "turns": "hi"}, "turns must be a list of strings, got str"),
    ({**GOOD, "question_id": 2, "turns": []}, "question 2 has no turns"),
    ({**GOOD, "question_id": 2, "turns": ["ok", ""]}, "question 2 has a turn that is not a non-empty string"),
    ({**GOOD, "question_id": 2, "turns": [3]}, "has a turn that is not a non-empty string"),
    ({**GOOD, "question_id": 2, "multiturn": "yes"}, "multiturn must be a bool or null, got str"),
    ({**GOOD, "question_id": 2, "difficulty": 3}, "difficulty must be a str or null, got int"),
    ({**GOOD, "question_id": 2, "reference": "4"}, "reference must be a list or null, got str"),
    ({**GOOD, "question_id": 2, "turns": [TURNS_PLACEHOLDER + "\n\n{question}"]}, "holds SPEED-Bench's placeholder"),
    ({"question_id": 2, "turns": ["hi"]}, "missing field 'category'"),
    ([GOOD], "expected a JSON object"),
    ("{not json", "not valid JSON"),
    (GOOD, "duplicate question_id 1, first on line 1"),
    ({**GOOD, "question_id": "1"}, "duplicate question_id '1' (as 1), first on line 1"),
])
def test_each_refusal_is_one_line_naming_file_and_line(tmp_path, row, needle):
    path = write(tmp_path, [GOOD, row])
    msg = refusal(path)
    assert msg.startswith(f"{path}:2: ") and needle in msg, msg


def test_duplicate_string_ids_and_an_empty_file(tmp_path):
    msg = refusal(write(tmp_path, [SPEED[0], SPEED[2], SPEED[0]]))
    assert ":3: duplicate question_id 'a3f9c2'" in msg and "first on line 1" in msg
    empty = write(tmp_path, ["", "  "], "empty.jsonl")
    with pytest.raises(SpecsweepError, match="no questions in file"):
        parse_jsonl(empty)


def test_the_cli_refuses_a_bad_file_with_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from jobs.cli import main

    monkeypatch.chdir(tmp_path)
    bad = write(tmp_path, [GOOD, {**GOOD, "question_id": 2, "turns_extra": []}], "bad.jsonl")
    cfg_file = tmp_path / "bad.yaml"
    cfg_file.write_text(f"name: files\noutput: {tmp_path / 'out'}\npairs: [{{target: t, draft: d}}]\n"
                        f"policies: [fixed]\ndataset: {{source: {bad}}}\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for args in (["sweep", str(cfg_file)], ["generate", "--dataset", str(bad)]):
        assert main(args) == 2, args
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith(f"specsweep: error: {bad}:2: unknown field 'turns_extra'"), lines
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


# ------------------------------------------------------------------------------------------ the source path

def one_line_refusal(fn, *args, **kw) -> str:
    with pytest.raises(SpecsweepError) as e:
        fn(*args, **kw)
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def cli_refusal(args, capsys) -> str:
    from jobs.cli import main

    assert main(args) == 2, args
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("specsweep: error: "), lines
    return lines[0]


def test_a_folder_or_special_file_as_source_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "questions"
    folder.mkdir()
    want = f"dataset source {folder} is a directory, not a question file (give a JSONL file, 'sample' or 'specbench')"
    assert one_line_refusal(load_questions, str(folder)) == want
    assert one_line_refusal(load_questions, "questions") == want             # relative: named by its absolute path
    assert one_line_refusal(load_questions, "/dev/null").startswith("dataset source /dev/null is a special file")
    assert refusal(folder).startswith(f"{folder}: cannot be read as a question file (")   # parse_jsonl alone
    cfg_file = tmp_path / "dir.yaml"
    cfg_file.write_text(f"name: files\noutput: {tmp_path / 'out'}\npairs: [{{target: t, draft: d}}]\n"
                        f"policies: [fixed]\ndataset: {{source: {folder}}}\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for args in (["sweep", str(cfg_file), "--dry-run"], ["sweep", str(cfg_file)],
                 ["generate", "--dataset", str(folder)]):
        assert cli_refusal(args, capsys) == f"specsweep: error: {want}", args
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_an_unreadable_file_is_one_line(tmp_path, monkeypatch):
    path = write(tmp_path, [GOOD])

    def denied(*a, **kw):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("jobs.question_file.open", denied, raising=False)   # root reads any file: fake the refusal
    want = f"{path}: cannot be read as a question file (Permission denied): give a readable JSONL file"
    assert refusal(path) == want
    assert one_line_refusal(load_questions, str(path)) == want


def test_a_relative_source_is_read_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    msg = one_line_refusal(load_questions, "q.jsonl")
    assert msg == (f"dataset source 'q.jsonl' is not 'sample', 'specbench' or an existing file: "
                   f"{tmp_path / 'a' / 'q.jsonl'} does not exist (a relative path is read from the working directory)")
    assert one_line_refusal(load_questions, str(tmp_path / "nope.jsonl")).endswith(
        f"{tmp_path / 'nope.jsonl'} does not exist")                          # absolute: no note about the cwd
    write(tmp_path / "a", [GOOD, {**GOOD, "question_id": 2, "answer": "x"}])
    assert one_line_refusal(load_questions, "q.jsonl").startswith(f"{tmp_path / 'a' / 'q.jsonl'}:2: unknown field")


# ------------------------------------------------------------------------------------------ lines and ids

@pytest.mark.parametrize("line,needle", [
    ('{"question_id": 1' + "0" * 5000 + ', "category": "qa", "turns": ["hi"]}',   # Python < 3.10.7: no digit limit
     "not readable JSON (Exceeds the limit|(5001 digits) does not fit a 64-bit integer"),
    ('{"question_id": 2, "category": "qa", "turns": ["hi"], "reference": ' + "[" * 100000 + "]" * 100000 + "}",
     "not readable JSON (nested too deep)"),
    ('{"question_id": 1' + "0" * 100 + ', "category": "qa", "turns": ["hi"]}',
     "question_id 100000000000… (101 digits) does not fit a 64-bit integer"),
], ids=["5001-digit id", "nested 100000 deep", "101-digit id"])
def test_a_line_past_the_parsers_limits_is_named_by_its_line(tmp_path, line, needle):
    path = write(tmp_path, [GOOD, line])
    msg = refusal(path)
    assert msg.startswith(f"{path}:2: ") and any(n in msg for n in needle.split("|")) and len(msg) < 300, msg


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(GOOD) + "\r\n" + json.dumps(MT_BENCH[0]) + "\r\n").encode())
    assert [q.question_id for q in parse_jsonl(path)] == [1, 81]


def test_a_decimal_string_id_that_fits_64_bits_is_that_number(tmp_path):
    assert numeric_id("1234567890123456789") == 1234567890123456789
    assert numeric_id(str(2 ** 63 - 1)) == 2 ** 63 - 1
    hashed = int(hashlib.sha256(str(2 ** 63).encode()).hexdigest()[:12], 16)
    assert numeric_id(str(2 ** 63)) == hashed < 2 ** 48                          # past 64 bits: a string like any other
    assert numeric_id("9" * 5000) < 2 ** 48                                      # no int() of 5000 digits
    qs = parse_jsonl(write(tmp_path, [{**GOOD, "question_id": "1234567890123456789"}]))
    assert qs[0].question_id == 1234567890123456789


# ------------------------------------------------------------------------------------------ filters

def test_a_category_the_file_does_not_hold_is_refused_naming_those_it_holds(tmp_path):
    path = str(write(tmp_path, SPEED))
    want = f"category 'translation' is not in {path}: it holds categories coding, multilingual, rag"
    assert one_line_refusal(load_questions, path, ["translation"]) == want          # it would select nothing
    assert one_line_refusal(load_questions, path, ["rag", "translation"]) == want   # it would be dropped silently
    assert [q.category for q in load_questions(path, ["rag", "coding"])] == ["coding", "rag"]
    assert len(load_questions("sample", ["translation", "editing"])) == 2 + 8        # sample holds every category


def test_a_missing_question_id_names_the_valid_ids(tmp_path):
    few = str(write(tmp_path, SPEED, "few.jsonl"))
    ids = sorted(q.question_id for q in parse_jsonl(Path(few)))
    assert one_line_refusal(load_questions, few, question_ids=[5]) == \
        f"question id 5 is not in {few}: valid ids are {', '.join(map(str, ids))}"
    gaps = str(write(tmp_path, [{**GOOD, "question_id": i} for i in range(10, 130, 10)], "gaps.jsonl"))
    assert one_line_refusal(load_questions, gaps, question_ids=[5]) == \
        f"question id 5 is not in {gaps}: valid ids are e.g. 10, 20, 30, 40, 50 (12 questions)"
    run = str(write(tmp_path, [{**GOOD, "question_id": i} for i in range(1, 13)], "run.jsonl"))
    assert one_line_refusal(load_questions, run, question_ids=[13]).endswith("valid ids are 1–12 (12 questions)")
    assert one_line_refusal(load_questions, "sample", question_ids=[1]) == \
        "question id 1 is not in sample: valid ids are 9001–9034 (34 questions)"
