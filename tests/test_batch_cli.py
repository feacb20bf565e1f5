"""``specsweep generate --prompt-file FILE --batch-size B``: every line in file order, each row what a single
``generate`` gives that line (greedy), per-row and batch policies, dataset turns in batches, and bad input as one
line with exit status 2 before any model loads."""
import json

import pytest

from actors.loading.tiny_pair import save_tiny_pair
from tests.helpers import run_cli as run

LINES = ["hello there", "", "what is two plus two", "   ", "sky", "a longer prompt about many things", "z"]
PROMPTS = [line for line in LINES if line.strip()]               # 5 prompts: batches of 2 → 2, 2, 1
LINE_NUMBERS = [i for i, line in enumerate(LINES, 1) if line.strip()]
NEW = 8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny pair's folders, a prompt file (blank lines included) and each line's single ``generate --json``
    (``ar``: the target alone, what every lossless policy gives under greedy decoding)."""
    root = tmp_path_factory.mktemp("batch_cli")
    target, draft = save_tiny_pair(root)
    path = root / "prompts.txt"
    path.write_text("\n".join(LINES) + "\n")
    pair = ["--target", target, "--draft", draft, "--max-new-tokens", NEW]
    singles = []
    for text in PROMPTS:
        code, out, err = run("generate", "--prompt", text, *pair, "--policy", "ar", "--json")
        assert code == 0, err
        singles.append(json.loads(out))
    return {"root": root, "file": path, "pair": pair, "singles": singles}


def test_json_rows_are_the_single_generations_in_file_order(tiny):
    code, out, err = run("generate", "--prompt-file", tiny["file"], "--batch-size", 2, *tiny["pair"], "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["token_ids"] for r in rows] == [s["token_ids"] for s in tiny["singles"]]
    assert [r["text"] for r in rows] == [s["text"] for s in tiny["singles"]]
    assert [(r["batch"], r["row"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]   # last batch of 1
    assert [r["line"] for r in rows] == LINE_NUMBERS and {r["batch_size"] for r in rows} == {2}
    single_keys = set(tiny["singles"][0])
    assert all(set(r) == single_keys | {"batch_size", "batch", "row", "line"} for r in rows)
    for r in rows:
        assert sum(r["accept_lengths"]) == r["new_tokens"] == len(r["token_ids"])
        assert r["k_max"][0] == min(4, NEW - 1) and r["policy"] == "fixed" and r["gamma"] == 4
    assert sum(sum(r["accepted"]) for r in rows) > 0                 # drafts were accepted: not a vacuous pass


def test_a_batch_policy_keeps_every_row_lossless(tiny):
    code, out, err = run("generate", "--prompt-file", tiny["file"], "--batch-size", 3, *tiny["pair"],
                         "--policy", "tetris:base=2,extra=2", "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["token_ids"] for r in rows] == [s["token_ids"] for s in tiny["singles"]]
    assert all(r["policy"].startswith("tetris") for r in rows) and [r["batch"] for r in rows] == [0, 0, 0, 1, 1]
    assert max(d for r in rows for d in r["drafted"]) <= 4 and sum(sum(r["accepted"]) for r in rows) > 0


def test_summary_has_a_line_per_prompt_and_a_total(tiny):
    code, out, err = run("generate", "--prompt-file", tiny["file"], "--batch-size", 5, *tiny["pair"])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == len(PROMPTS) + 1
    assert [line.split(" · ")[0] for line in lines[:-1]] == [f"[line {n}" for n in LINE_NUMBERS]
    tokens = sum(len(s["token_ids"]) for s in tiny["singles"])
    assert lines[-1].startswith(f"--- 5 prompts in 1 batches of 5: {tokens} tokens in ")
    assert "tok/s (whole file)" in lines[-1] and "mean accepted length" in lines[-1]


def test_dataset_turns_in_batches_answer_as_unbatched(tiny):
    questions = tiny["root"] / "questions.jsonl"
    qs = [(1, ["hi", "and then?"]), (2, ["two words"])]
    questions.write_text("".join(json.dumps({"question_id": q, "category": "qa", "turns": t}) + "\n" for q, t in qs))
    answers = {}
    for label, extra in (("batched", ["--batch-size", 2]), ("single", ["--policy", "ar"])):
        path = tiny["root"] / f"{label}.jsonl"
        code, out, err = run("generate", "--dataset", questions, *extra, *tiny["pair"], "--answers", path)
        assert code == 0, err
        answers[label] = [json.loads(line) for line in path.read_text().splitlines()]
    assert [a["question_id"] for a in answers["batched"]] == [1, 2]
    assert [len(a["choices"][0]["turns"]) for a in answers["batched"]] == [2, 1]
    for b, s in zip(answers["batched"], answers["single"]):
        assert b["choices"][0]["turns"] == s["choices"][0]["turns"]
        assert b["choices"][0]["new_tokens"] == s["choices"][0]["new_tokens"]


@pytest.mark.parametrize("make_args,msg", [
    (lambda d: ["--prompt-file", d / "blank.txt"], "has no non-empty line"),
    (lambda d: ["--prompt-file", d / "missing.txt"], "cannot read it (FileNotFoundError)"),
    (lambda d: ["--prompt-file", d], "cannot read it"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--batch-size", 0], "--batch-size must be an integer >= 1, got '0'"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--batch-size", -3], "--batch-size must be an integer >= 1"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--batch-size", "two"], "--batch-size must be an integer >= 1, got 'two'"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--batch-size", 1.5], "--batch-size must be an integer >= 1"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--prompt", "hi"], "drop --prompt and --dataset"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--dataset", "sample"], "drop --prompt and --dataset"),
    (lambda d: ["--prompt", "hi", "--batch-size", 2], "a single --prompt runs alone"),
    (lambda d: ["--prompt-file", d / "ok.txt", "--answers", d / "a.jsonl"], "use it with --dataset"),
])
def test_bad_input_is_one_line_before_any_model_loads(tmp_path, make_args, msg):
    (tmp_path / "blank.txt").write_text("\n   \n\t\n")
    (tmp_path / "ok.txt").write_text("hello\n")
    code, out, err = run("generate", *make_args(tmp_path), "--target", tmp_path / "no-such-model")
    assert code == 2 and out == ""
    assert msg in err and "Traceback" not in err and "no-such-model" not in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow            # the batch engine's EAGLE path is in the fast tier (tests/test_batch_eagle.py)
def test_an_eagle_head_batches_from_the_cli(tiny):
    """``--draft eagle:PATH --batch-size``: the head drafts for every row of a batch; rows equal single generations."""
    from actors.drafting.eagle_head import init_head, save_head
    from actors.loading.models import ModelSpec, load_model

    target = tiny["pair"][1]
    head = save_head(init_head(load_model(ModelSpec(target)), seed=2), tiny["root"] / "head")
    pair = ["--target", target, "--draft", f"eagle:{head}", "--max-new-tokens", NEW]
    for policy in ("fixed", "tetris"):
        code, out, err = run("generate", "--prompt-file", tiny["file"], "--batch-size", 3, *pair, "--policy", policy,
                             "--json")
        assert code == 0, err
        rows = [json.loads(line) for line in out.splitlines()]
        assert [r["token_ids"] for r in rows] == [s["token_ids"] for s in tiny["singles"]], policy
        assert all(r["draft"] == f"eagle:{head}" for r in rows) and sum(sum(r["drafted"]) for r in rows) > 0
