"""``specsweep recommend``: the choice per batch size from synthetic sweeps, the written configs parse and pass their
engine's schema, bad configs are refused, and bad input is one line with exit status 2 and nothing written."""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re

import numpy as np
import pytest
import yaml

from actors.loading.schema import batch_label, config_key, to_table
from actors.drafter_kinds.ngram import LOOKUP_SIZES as NGRAM_SIZES
from jobs.cli import main as cli_main
from jobs.recommend.engines import setting
from jobs.recommend.schema import check_sglang, check_trtllm, check_vllm
from jobs.recommend.selection import recommend
from jobs.recommend.writers import WRITERS, notes_md
from jobs.report.batches import by_batch_size
from jobs.store.parquet_log import ParquetLog
from policies.errors import SpecsweepError

DRAFT = "some-org/draft-135m"
# speed of each config relative to ar, per batch size: K=4 wins at 1, K=2 at 4, ar at 16; gammatune beats every K at 1
SPEEDS = {1: {"fixed:2": 1.3, "fixed:4": 1.5, "fixed:6": 1.4, "gammatune:2": 1.7},
          4: {"fixed:2": 1.1, "fixed:4": 0.9, "fixed:6": 0.8, "gammatune:2": 1.05},
          16: {"fixed:2": 0.9, "fixed:4": 0.8, "fixed:6": 0.7, "gammatune:2": 0.85}}
TASKS = 6


def sweep_rows(speeds=SPEEDS, draft=DRAFT, pair="p", seed=0, extra_policies=None) -> list[list[dict]]:
    """One list of rows per task: every batch of each batch size runs ar (first and last) and each config on the
    same B questions; a row's wall time is 10 s / speed with a small seeded jitter."""
    rng = random.Random(seed)
    tasks = []
    for size, per in speeds.items():
        label = batch_label(pair, size)
        for t in range(TASKS):
            key = f"{label}|t{t}"
            rows = []
            configs = [("ar", "ar", 0, 1.0, "first"), ("ar", "ar", 0, 1.0, "last")]
            for s, v in per.items():
                name, g = s.split(":")
                configs.append((name, (extra_policies or {}).get(s, name), int(g), v, ""))
            for policy, spec, gamma, speed, timing in configs:
                for q in range(size):
                    k = 0 if policy == "ar" else gamma
                    rows.append({"task_key": key, "config_key": config_key(label, spec, gamma), "pair": label,
                                 "target": "some-org/target-8b", "draft": None if policy == "ar" else draft,
                                 "policy": policy, "policy_spec": spec, "gamma": gamma, "ar_timing": timing,
                                 "repeat": 0,
                                 "question_id": 100 * t + q, "category": "qa", "turn": 0, "new_tokens": 20,
                                 "wall_time": 10.0 / speed * (1 + 0.02 * rng.random()), "status": "ok", "mode": "live",
                                 "batch_size": size, "accept_lengths": [2] * 10, "drafted": [k] * 10,
                                 "accepted": [min(k, 1)] * 10, "k_max": [k] * 10})
            tasks.append(rows)
    return tasks


def write_sweep(folder, tasks) -> str:
    log = ParquetLog(folder)
    log.dir.mkdir(parents=True, exist_ok=True)
    for rows in tasks:
        log.write(to_table(rows))
    return str(folder)


def frame(tasks):
    return to_table([r for rows in tasks for r in rows]).to_pandas()


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli_main(["recommend", *argv])
    return rc, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------------- the choice


def _missing(tasks, spec, gamma, from_task):
    """``tasks`` with config (spec, γ) dropped from task ``from_task`` on (as if it failed there), the easier
    remaining batches twice as fast for every other config."""
    out = []
    for t, rows in enumerate(tasks):
        kept = []
        for r in rows:
            if t >= from_task and r["policy_spec"] == spec and r["gamma"] == gamma:
                continue
            kept.append({**r, "wall_time": r["wall_time"] / 2} if t >= from_task else r)
        out.append(kept)
    return out


def test_a_config_that_missed_some_of_ars_batches_is_left_out_and_named():
    tasks = _missing(sweep_rows({1: {"fixed:4": 1.2, "fixed:2": 1.1}}), "fixed", 4, 3)
    rec = recommend(frame(tasks), "vllm")
    (c,) = rec.choices
    assert c.chosen.name == "fixed γ=2" and c.runner.name == "ar (speculation off)"
    assert c.batches == TASKS and any("fixed γ=4 left out: it ran 3 of the 6 batches ar ran" in n for n in c.notes)
    lo, hi = c.runner_ratio[1:]
    assert lo < c.runner_ratio[0] < hi and np.isfinite([lo, hi]).all()
    with pytest.raises(SpecsweepError, match="fixed γ=4 left out: it ran 3 of the 6 batches ar ran at batch size 1"):
        recommend(frame(_missing(sweep_rows({1: {"fixed:4": 1.2}}), "fixed", 4, 3)), "vllm")
    best = by_batch_size(frame(tasks)).iloc[0]
    assert (best["best_spec"], best["best_gamma"], best["batches"]) == ("fixed", 2, TASKS)


def test_vllm_choice_per_batch_size_runner_up_and_the_policy_beyond_the_engine():
    rec = recommend(frame(sweep_rows()), "vllm")
    assert [(c.batch_size, c.chosen.name) for c in rec.choices] == [(1, "fixed γ=4"), (4, "fixed γ=2"),
                                                                     (16, "ar (speculation off)")]
    one, four, sixteen = rec.choices
    assert one.chosen.speedup == pytest.approx(1.5, rel=0.03) and one.chosen.lo < one.chosen.speedup < one.chosen.hi
    assert one.runner.name == "fixed γ=6" and one.runner_ratio[0] == pytest.approx(1.5 / 1.4, rel=0.03)
    assert one.within_noise is False                              # 7 % apart with a 2 % jitter: resolved
    assert one.adaptive.name == "gammatune γ=2" and one.adaptive_ratio[0] == pytest.approx(1.7 / 1.5, rel=0.03)
    assert four.adaptive is None                                  # gammatune (1.05) does not beat K=2 (1.1) at 4
    assert sixteen.runner.name == "fixed γ=2" and sixteen.chosen.setting == {"K": 0}
    assert rec.method == "draft_model" and rec.kind == "model" and rec.modes == {"live": sum(
        len(r) for r in sweep_rows())}


def test_an_adaptive_policy_slower_than_ar_is_not_beyond_the_engine():
    rec = recommend(frame(sweep_rows({1: {"fixed:2": 0.8, "gammatune:2": 0.9}, 4: {"fixed:2": 1.2,
                                                                                   "gammatune:2": 1.1}})), "vllm")
    assert [c.chosen.name for c in rec.choices] == ["ar (speculation off)", "fixed γ=2"]
    assert rec.choices[0].adaptive is None and rec.choices[1].adaptive is None


def test_vllm_config_ranges_interpolated_and_valid():
    rec = recommend(frame(sweep_rows()), "vllm")
    text = WRITERS["vllm"](rec)
    cfg = check_vllm(text)
    assert cfg == {"method": "draft_model", "model": DRAFT, "num_speculative_tokens": 4,
                   "num_speculative_tokens_per_batch_size": [[1, 1, 4], [2, 4, 2], [5, 16, 0]]}
    notes = notes_md(rec)
    assert "batch size 2–3: K=2 interpolated" in notes and "batch size 5–15: K=0 interpolated" in notes
    assert "batch size 4: K=2 measured" in notes
    assert "above batch size 16: the engine keeps the last range's K=0" in notes
    assert "| 1 | 6 | fixed γ=4 | K=4 | 1.5" in notes and "gammatune γ=2: 1.7" in notes


def test_trtllm_schedule_keeps_its_longest_draft_at_batch_one():
    speeds = {1: {"fixed:2": 1.3, "fixed:4": 1.5}, 4: {"fixed:2": 1.1, "fixed:4": 1.0, "fixed:6": 1.2}}
    rec = recommend(frame(sweep_rows(speeds)), "trtllm")
    assert [c.chosen.name for c in rec.choices] == ["fixed γ=4", "fixed γ=2"]      # K=6 is faster at 4 but > 4
    assert "fixed γ=6 (1.20×) left out" in notes_md(rec)
    text = WRITERS["trtllm"](rec)
    cfg = check_trtllm(text)
    assert cfg == {"decoding_type": "Draft_Target", "max_draft_len": 4, "speculative_model": DRAFT,
                   "draft_len_schedule": {1: 4, 4: 2}}
    assert "# 2–3 interpolated, 4 measured" in text
    vllm = check_vllm(WRITERS["vllm"](recommend(frame(sweep_rows(speeds)), "vllm")))
    assert vllm["num_speculative_tokens_per_batch_size"] == [[1, 1, 4], [2, 4, 6]]   # vLLM can take K=6 at 4


def test_trtllm_full_schedule_and_off_when_ar_wins_at_batch_one():
    text = WRITERS["trtllm"](recommend(frame(sweep_rows()), "trtllm"))
    assert check_trtllm(text)["draft_len_schedule"] == {1: 4, 4: 2, 16: 0}
    slow = {1: {"fixed:2": 0.9}, 4: {"fixed:2": 0.8}}
    rec = recommend(frame(sweep_rows(slow)), "trtllm")
    text = WRITERS["trtllm"](rec)
    assert check_trtllm(text) is None and "speculation off" in text
    assert WRITERS["vllm"](recommend(frame(sweep_rows(slow)), "vllm")) == "null\n"
    assert check_sglang(WRITERS["sglang"](recommend(frame(sweep_rows(slow)), "sglang"))) is None


def test_sglang_one_chain_setting_by_geometric_mean():
    rec = recommend(frame(sweep_rows()), "sglang")
    # geometric means over 1, 4, 16: K=2 1.087, K=4 1.026, K=6 0.953, ar 1
    assert rec.deploy.name == "fixed γ=2" and rec.deploy.setting == {"steps": 2, "topk": 1, "draft_tokens": 3}
    assert rec.deploy_geomean == pytest.approx((1.3 * 1.1 * 0.9) ** (1 / 3), rel=0.03)
    flags = check_sglang(WRITERS["sglang"](rec))
    assert flags == {"--speculative-algorithm": "STANDALONE", "--speculative-draft-model-path": DRAFT,
                     "--speculative-num-steps": "2", "--speculative-eagle-topk": "1",
                     "--speculative-num-draft-tokens": "3"}


def test_sglang_maps_an_eagle2_tree_and_ngram():
    speeds = {1: {"fixed:3": 1.3, "eagle2:3": 1.6}, 4: {"fixed:3": 1.1, "eagle2:3": 1.2}}
    tasks = sweep_rows(speeds, draft="smollm2-135m-eagle",
                       extra_policies={"eagle2:3": "eagle2:depth=3,topk=4,n=12"})
    rec = recommend(frame(tasks), "sglang")
    assert rec.method == "EAGLE" and rec.deploy.spec == "eagle2:depth=3,topk=4,n=12"
    flags = check_sglang(WRITERS["sglang"](rec))
    assert flags["--speculative-num-steps"] == "4" and flags["--speculative-eagle-topk"] == "4"
    assert flags["--speculative-num-draft-tokens"] == "13"
    assert flags["--speculative-draft-model-path"].endswith("smollm2-135m-eagle")
    # vLLM cannot express the tree: it is the policy beyond the engine, and the chain is chosen
    v = recommend(frame(tasks), "vllm")
    assert v.method == "eagle" and v.choices[0].chosen.name == "fixed γ=3" and v.choices[0].adaptive.policy == "eagle2"
    ngram = recommend(frame(sweep_rows(draft="ngram")), "sglang")
    assert check_sglang(WRITERS["sglang"](ngram)) == {"--speculative-algorithm": "NGRAM",
                                                       "--speculative-num-draft-tokens": "3"}
    cfg = check_vllm(WRITERS["vllm"](recommend(frame(sweep_rows(draft="ngram")), "vllm")))
    assert cfg["method"] == "ngram" and "model" not in cfg and (cfg["prompt_lookup_min"], cfg["prompt_lookup_max"]) == \
        NGRAM_SIZES


def test_every_engine_is_given_the_eagle3_heads_folder():
    """The shipped EAGLE-3 head's alias, ``eagle3:PATH`` and ``eagle:PATH`` of an EAGLE-3 folder all name the head's
    folder as the draft model (never the text "None")."""
    from actors.drafter_kinds.eagle3 import EAGLE3_HEADS
    shipped = EAGLE3_HEADS["smollm2-135m-eagle3"]
    for draft in ("smollm2-135m-eagle3", f"eagle3:{shipped}", f"eagle:{shipped}"):
        path = shipped
        rec = recommend(frame(sweep_rows(draft=draft)), "vllm")
        assert rec.method == "eagle3" and check_vllm(WRITERS["vllm"](rec))["model"] == path
        flags = check_sglang(WRITERS["sglang"](recommend(frame(sweep_rows(draft=draft)), "sglang")))
        assert flags["--speculative-draft-model-path"] == path
        trt = yaml.safe_load(WRITERS["trtllm"](recommend(frame(sweep_rows(draft=draft)), "trtllm")))
        assert trt["speculative_config"]["speculative_model"] == path


def test_ngram_sizes_match_the_drafter():
    pytest.importorskip("torch")
    import inspect

    from actors.drafting.drafters import NgramDrafter

    sig = inspect.signature(NgramDrafter.__init__).parameters
    assert NGRAM_SIZES == (sig["n_min"].default, sig["n_max"].default)


def test_settings_each_engine_can_express():
    assert setting("vllm", False, "fixed", "fixed", 5) == {"K": 5}
    assert setting("trtllm", False, "ar", "ar", 0) == {"K": 0}
    assert setting("vllm", True, "eagle2", "eagle2", 0) is None
    assert setting("sglang", False, "eagle2", "eagle2", 0) is None               # trees need an EAGLE head
    assert setting("sglang", True, "eagle2", "eagle2", 0) == {"steps": 6, "topk": 10, "draft_tokens": 61}
    # a tree holds at most topk + depth·topk² candidates (defaults n = 60 keep only 36 here); top-k 1 is a chain
    assert setting("sglang", True, "eagle2", "eagle2:depth=2,topk=4", 0) == {"steps": 3, "topk": 4, "draft_tokens": 37}
    assert setting("sglang", True, "eagle2", "eagle2:topk=1", 0) == {"steps": 6, "topk": 1, "draft_tokens": 7}
    assert setting("sglang", True, "eagle2", "eagle2:topk=1,n=3", 0) == {"steps": 3, "topk": 1, "draft_tokens": 4}
    for spec in ("eagle2:depth=2,topk=4", "eagle2:topk=1", "eagle2:topk=1,n=3", "eagle2:depth=1,topk=2,n=40"):
        speeds = {1: {"fixed:3": 1.3, "eagle2:3": 1.6}}
        rec = recommend(frame(sweep_rows(speeds, draft="smollm2-135m-eagle", extra_policies={"eagle2:3": spec})),
                        "sglang")
        assert rec.deploy.spec == spec and check_sglang(WRITERS["sglang"](rec)), spec    # the engine's rules hold
    assert setting("vllm", False, "gammatune", "gammatune", 2) is None


# ---------------------------------------------------------------------------------------------- schemas

GOOD_VLLM = {"method": "draft_model", "model": "m", "num_speculative_tokens": 4,
             "num_speculative_tokens_per_batch_size": [[1, 2, 4], [3, 8, 2], [9, 64, 0]]}


@pytest.mark.parametrize("change, needle", [
    ({"num_speculative_tokens_per_batch_size": [[1, 2, 5]]}, "exceeds num_speculative_tokens"),
    ({"num_speculative_tokens_per_batch_size": [[1, 4, 4], [3, 8, 2]]}, "disjoint"),
    ({"num_speculative_tokens_per_batch_size": [[1, 2, 4], [4, 8, 2]]}, "cover"),
    ({"num_speculative_tokens_per_batch_size": [[2, 8, 4]]}, "expected 1"),
    ({"num_speculative_tokens_per_batch_size": [[1, 0, 4]]}, "ends before"),
    ({"num_speculative_tokens_per_batch_size": [[1, 8, -1]]}, ">= 0"),
    ({"num_speculative_tokens_per_batch_size": [[1, 8]]}, "[start, end, K]"),
    ({"num_speculative_tokens_per_batch_size": [[1, 8, 2.5]]}, "integer"),
    ({"num_speculative_tokens": True}, "integer"),
    ({"num_speculative_tokens": 0}, ">= 1"),
    ({"method": "medusa2"}, "method must be"),
    ({"model": ""}, "needs model"),
    ({"method": "ngram"}, "takes no model"),
    ({"speculative_model": "m"}, "unknown field"),
])
def test_vllm_schema_refuses(change, needle):
    assert check_vllm(json.dumps(GOOD_VLLM)) == GOOD_VLLM
    with pytest.raises(SpecsweepError, match="invalid vLLM config: .*" + re.escape(needle)):
        check_vllm(json.dumps({**GOOD_VLLM, **change}))


def test_vllm_schema_parses_text():
    assert check_vllm("null") is None
    for bad in ("{", "[1, 2]"):
        with pytest.raises(SpecsweepError):
            check_vllm(bad)


GOOD_SGLANG = ("# a comment\n--speculative-algorithm EAGLE --speculative-draft-model-path /m "
               "--speculative-num-steps 6 --speculative-eagle-topk 10 --speculative-num-draft-tokens 61\n")


@pytest.mark.parametrize("old, new, needle", [
    ("--speculative-eagle-topk 10", "--speculative-eagle-topk 1", "steps \\+ 1 = 7"),
    ("--speculative-num-draft-tokens 61", "--speculative-num-draft-tokens 600", "offers 510 candidates"),
    ("--speculative-draft-model-path /m ", "", "needs --speculative-draft-model-path"),
    ("EAGLE ", "MEDUSA ", "must be one of"),
    ("--speculative-num-steps 6", "--speculative-num-steps 0", ">= 1"),
    ("--speculative-num-steps 6", "--speculative-num-steps six", "must be an integer"),
    ("--speculative-num-steps 6", "--speculative-steps 6", "unknown flag"),
    ("--speculative-num-steps 6", "--speculative-num-steps 6 --speculative-num-steps 6", "given twice"),
])
def test_sglang_schema_refuses(old, new, needle):
    assert check_sglang(GOOD_SGLANG)["--speculative-num-steps"] == "6"
    with pytest.raises(SpecsweepError, match="invalid SGLang config: .*" + needle):
        check_sglang(GOOD_SGLANG.replace(old, new))
    with pytest.raises(SpecsweepError, match="NGRAM takes only"):
        check_sglang("--speculative-algorithm NGRAM --speculative-num-draft-tokens 4 --speculative-num-steps 3")


GOOD_TRT = {"speculative_config": {"decoding_type": "Draft_Target", "max_draft_len": 4, "speculative_model": "m",
                                   "draft_len_schedule": {1: 4, 4: 2, 16: 0}}}


@pytest.mark.parametrize("change, needle", [
    ({"draft_len_schedule": {2: 4, 4: 2}}, "must hold batch size 1"),
    ({"draft_len_schedule": {1: 3, 4: 2}}, "must equal max_draft_len"),
    ({"draft_len_schedule": {1: 4, 4: 6}}, "exceeds max_draft_len"),
    ({"draft_len_schedule": {1: 4, 8: 2, 4: 1}}, "ascending"),
    ({"draft_len_schedule": {1: 4, 0: 2}}, ">= 1"),
    ({"draft_len_schedule": {1: 4, 4: -1}}, ">= 0"),
    ({"max_draft_len": 0}, ">= 1"),
    ({"decoding_type": "Eagle"}, "decoding_type must be"),
    ({"decoding_type": "NGram"}, "NGram takes no speculative_model"),
    ({"speculative_model": None}, "needs speculative_model"),
    ({"num_speculative_tokens": 4}, "unknown field"),
])
def test_trtllm_schema_refuses(change, needle):
    assert check_trtllm(yaml.safe_dump(GOOD_TRT))["draft_len_schedule"] == {1: 4, 4: 2, 16: 0}
    bad = {"speculative_config": {**GOOD_TRT["speculative_config"], **change}}
    with pytest.raises(SpecsweepError, match="invalid TensorRT-LLM config: .*" + needle):
        check_trtllm(yaml.safe_dump(bad, sort_keys=False))
    with pytest.raises(SpecsweepError, match="one mapping"):
        check_trtllm(yaml.safe_dump({**GOOD_TRT, "model": "x"}))


# ---------------------------------------------------------------------------------------------- the command

@pytest.mark.parametrize("engine, suffix", [("vllm", "json"), ("sglang", "sh"), ("trtllm", "yaml")])
def test_cli_writes_a_valid_config_and_its_notes(tmp_path, engine, suffix):
    folder = write_sweep(tmp_path / "out", sweep_rows())
    dest = tmp_path / f"spec.{suffix}"
    rc, out, err = run_cli(folder, "--for", engine, "--out", str(dest))
    assert rc == 0 and f"config in {dest}" in err
    text = dest.read_text()
    {"vllm": check_vllm, "sglang": check_sglang, "trtllm": check_trtllm}[engine](text)
    notes = (tmp_path / f"spec.{suffix}.md").read_text()
    assert notes == out and "| 16 | 6 | ar (speculation off) |" in notes
    rc, out, _ = run_cli(folder, "--for", engine)                     # no --out: notes, then the config, on stdout
    assert rc == 0 and out.endswith(text)


def _one_line_error(argv, needle):
    rc, out, err = run_cli(*argv)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("specsweep: error: ") and needle in err, err


def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path):
    dest = tmp_path / "spec.json"
    _one_line_error([str(tmp_path / "nowhere"), "--for", "vllm", "--out", str(dest)], "holds no sweep log")
    empty = tmp_path / "empty"
    (empty / "log").mkdir(parents=True)
    _one_line_error([str(empty), "--for", "vllm", "--out", str(dest)], "no successful rows")
    only_adaptive = write_sweep(tmp_path / "adaptive", sweep_rows({1: {"gammatune:2": 1.4}, 4: {"gammatune:2": 1.1}}))
    _one_line_error([only_adaptive, "--for", "vllm", "--out", str(dest)], "no batch size (1, 4) has both ar and a "
                                                                          "timed configuration vLLM can express")
    untimed = sweep_rows()                     # replayed times marked unreliable (a loaded machine): NaN wall times
    for rows in untimed:
        for r in rows:
            if r["policy"] != "ar":
                r["wall_time"] = float("nan")
    untimed_out = write_sweep(tmp_path / "untimed", untimed)
    _one_line_error([untimed_out, "--for", "vllm", "--out", str(dest)], "were replayed with times marked unreliable")
    eagle = write_sweep(tmp_path / "eagle", sweep_rows(draft="smollm2-135m-eagle"))
    _one_line_error([eagle, "--for", "trtllm", "--out", str(dest)], "EAGLE-1/2 layout")
    folder = write_sweep(tmp_path / "ok", sweep_rows())
    _one_line_error([folder, "--for", "vllm", "--out", str(tmp_path / "missing" / "spec.json")], "does not exist")
    _one_line_error([folder, "--for", "vllm", "--out", str(tmp_path)], "is a folder")
    _one_line_error([folder, "--for", "vllm", "--pair", "q"], "no such pair")
    assert not dest.exists() and not (tmp_path / "spec.json.md").exists()


def test_cli_never_deletes_a_file_it_did_not_write(tmp_path, monkeypatch):
    folder = write_sweep(tmp_path / "s", sweep_rows())
    keep = tmp_path / "keep.json"
    keep.write_text("my config")
    (tmp_path / "keep.json.md").mkdir()                                 # the notes' place is taken by a folder
    _one_line_error([folder, "--for", "vllm", "--out", str(keep)], "keep.json.md is a folder")
    os.mkfifo(tmp_path / "pipe")
    _one_line_error([folder, "--for", "vllm", "--out", str(tmp_path / "pipe")], "is not a regular file")
    import jobs.store.output as output

    def no_space_for_the_notes(**k):                                   # the config is written, the notes fail
        if k["prefix"].endswith(".md."):
            raise OSError(28, "No space left on device")
        return real(**k)

    keep2, real = tmp_path / "keep2.json", output.tempfile.mkstemp
    keep2.write_text("old")
    monkeypatch.setattr(output.tempfile, "mkstemp", no_space_for_the_notes)
    _one_line_error([folder, "--for", "vllm", "--out", str(keep2)], "No space left on device")
    assert keep.read_text() == "my config" and keep2.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json", "keep.json.md", "keep2.json", "pipe", "s"]


def test_cli_asks_for_a_pair_when_the_sweep_holds_several(tmp_path):
    folder = write_sweep(tmp_path / "two", sweep_rows() + sweep_rows(pair="other", draft="ngram"))
    _one_line_error([folder, "--for", "vllm"], "holds 2 pairs (other, p): pass --pair LABEL")
    rc, out, _ = run_cli(folder, "--for", "vllm", "--pair", "other")
    assert rc == 0 and '"method": "ngram"' in out


@pytest.mark.slow
def test_a_real_tiny_batch_sweep_gives_valid_configs_and_the_position_tables(tmp_path):
    """The tiny pair swept at batch sizes 1 and 2 in this process (no Ray, no MLflow): every engine's config is
    written and valid, its choices agree with report.md's best config per batch size where the engine can run it,
    and the acceptance-by-position tables, figure and report section exist."""
    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.report.batches import by_batch_size
    from jobs.report.tables import shown_rows
    from jobs.sweep.driver import run_sweep

    target, draft = save_tiny_pair(tmp_path / "pair")
    cfg = parse_config({"name": f"r-{tmp_path.name}", "output": str(tmp_path / "out"),
                        "tracking_uri": f"sqlite:///{tmp_path}/mlflow.db",
                        "pairs": [{"name": "tiny", "target": target, "draft": draft}],
                        "dataset": {"source": "sample", "question_ids": [9017, 9021, 9023, 9022]},
                        "generation": {"max_new_tokens": 8}, "policies": ["fixed", "gammatune"], "gammas": [1, 3],
                        "warmup": 0, "batch_sizes": [1, 2],
                        "calibrate": {"context": 16, "max_tokens": 4, "repeats": 1, "judge": False}})
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    out = tmp_path / "out"
    assert res["failed_rows"] == 0
    report = (out / "report.md").read_text()
    assert "## Acceptance by draft position" in report and "figures/acceptance_by_position.png" in report
    assert (out / "acceptance_by_position.parquet").is_file()
    assert (out / "figures" / "acceptance_by_position.png").is_file()
    assert "accept_rate_pos_1" in (out / "summary.csv").read_text().splitlines()[0]
    shown = shown_rows(str(out), ParquetLog(out).read())
    best = by_batch_size(shown[shown["policy"].isin(["ar", "fixed"])]).set_index("batch_size")   # what vLLM can run
    for engine, check in (("vllm", check_vllm), ("sglang", check_sglang), ("trtllm", check_trtllm)):
        dest = tmp_path / f"{engine}.cfg"
        rc, notes, err = run_cli(str(out), "--for", engine, "--out", str(dest))
        assert rc == 0, err
        check(dest.read_text())
        assert "| 1 | " in notes and "| 2 | " in notes
    rec = recommend(shown, "vllm")
    assert sorted(c.batch_size for c in rec.choices) == [1, 2]
    for c in rec.choices:                             # the report's best fixed γ per batch size, or ar where it wins
        b = best.loc[c.batch_size]
        want = f"fixed γ={b['best_gamma']}" if b["best_speedup"] > 1 else "ar (speculation off)"
        assert c.chosen.name == want


def test_the_untimed_configs_are_named_in_gamma_order():
    from jobs.recommend.selection import untimed_expressible

    rows = frame(sweep_rows({1: {"fixed:2": 1.3, "fixed:12": 1.1, "fixed:1": 1.2, "fixed:16": 1.0}}))
    rows.loc[rows["policy"] == "fixed", "wall_time"] = float("nan")
    assert untimed_expressible(rows, "vllm", False) == "4 such configs (fixed γ=1, fixed γ=2, fixed γ=12, fixed γ=16)"
