"""Hardening: strict config, preflight, output-folder marker and lock, loopback-only Ray, exit codes.

Bad input must give one line naming what is wrong, a non-zero exit and no files left behind.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from jobs.config import load_config, parse_config
from jobs.redact import redact
from policies.errors import SpecsweepError
from actors.loading.tiny_pair import save_tiny_pair
from tests.sweep_process import PROGRESS, tiny_raw

ROOT = Path(__file__).resolve().parents[1]
BASE = {"name": "x", "pairs": [{"target": "t"}], "policies": ["fixed"]}
NAN, INF = float("nan"), float("inf")


def cfg(**over):
    return {**BASE, **over}


def pair(**over):
    return cfg(pairs=[{"target": "t", **over}])


# --------------------------------------------------------------------------------------- config battery

BAD_CONFIGS = [
    # booleans only as YAML booleans (a quoted "false" is truthy in Python)
    (pair(trust_remote_code="false"), "pairs[0].trust_remote_code"),
    (pair(trust_remote_code="no"), "pairs[0].trust_remote_code"),
    (pair(trust_remote_code=0), "pairs[0].trust_remote_code"),
    (pair(trust_remote_code=None), "pairs[0].trust_remote_code"),
    (cfg(policies=[{"threshold": {"adaptive": "false"}}]), "policies[0].threshold.adaptive"),
    (cfg(policies=[{"name": "hf-heuristic", "params": {"persist": "yes"}}]), "policies[0].params.persist"),
    # types
    (pair(num_cpus="abc"), "pairs[0].num_cpus"),
    (pair(num_gpus="1"), "pairs[0].num_gpus"),
    (pair(actors=1.5), "pairs[0].actors"),
    (pair(actors=True), "pairs[0].actors"),
    (cfg(pairs=[{"target": 123}]), "pairs[0].target"),
    (cfg(pairs=[{"target": ""}]), "pairs[0].target"),
    (cfg(pairs=[{"target": "   "}]), "pairs[0].target"),
    (pair(draft=""), "pairs[0].draft"),
    (pair(dtype=["float32"]), "pairs[0].dtype"),
    (pair(dtype="fp8"), "pairs[0].dtype"),
    (pair(device="tpu"), "pairs[0].device"),
    (pair(device="cuda:x"), "pairs[0].device"),
    (pair(quantization="int3"), "pairs[0].quantization"),
    (pair(template="alpaca"), "pairs[0].template"),
    (cfg(pairs="t"), "pairs"),
    (cfg(pairs=["t"]), "pairs[0]"),
    (cfg(pairs=[]), "pairs"),
    (cfg(name=123), "name"),
    (cfg(name=""), "name"),
    (cfg(dataset={"limit_per_category": "2"}), "dataset.limit_per_category"),
    (cfg(dataset={"limit_per_category": 0}), "dataset.limit_per_category"),
    (cfg(dataset={"question_ids": "9017"}), "dataset.question_ids"),
    (cfg(dataset={"question_ids": ["9017"]}), "dataset.question_ids[0]"),
    (cfg(dataset={"categories": "qa"}), "dataset.categories"),
    (cfg(dataset={"categories": ["qa", "poetry"]}), "dataset.categories[1]"),
    (cfg(dataset={"source": ""}), "dataset.source"),
    (cfg(dataset="sample"), "dataset"),
    (cfg(generation={"max_new_tokens": "12"}), "generation.max_new_tokens"),
    (cfg(generation={"max_new_tokens": 10**9}), "generation.max_new_tokens"),
    (cfg(generation={"top_p": 0}), "generation.top_p"),
    (cfg(repeats="2"), "repeats"),
    (cfg(seed=-1), "seed"),
    (cfg(seed=1.5), "seed"),
    (cfg(warmup=-1), "warmup"),
    (cfg(block_size="all"), "block_size"),
    (cfg(output=""), "output"),
    (cfg(output=["runs"]), "output"),
    (cfg(experiment=1), "experiment"),
    (cfg(calibrate={"context": 0}), "calibrate.context"),
    (cfg(calibrate={"max_tokens": "8"}), "calibrate.max_tokens"),
    (cfg(calibrate={"warmup": 1}), "calibrate.warmup"),
    (cfg(colour="red"), "colour"),
    # finite numbers
    (cfg(generation={"temperature": NAN}), "generation.temperature"),
    (cfg(generation={"temperature": INF}), "generation.temperature"),
    (cfg(generation={"top_p": NAN}), "generation.top_p"),
    (pair(num_gpus=INF), "pairs[0].num_gpus"),
    (cfg(policies=[{"gammatune": {"delta": INF}}]), "policies[0].gammatune.delta"),
    (cfg(policies=[{"gammatune": {"eta": NAN}}]), "policies[0].gammatune.eta"),
    (cfg(policies=[{"threshold": {"tau": "0.4"}}]), "policies[0].threshold.tau"),
    # policies
    (cfg(policies=["ar"]), "policies"),
    (cfg(policies=[]), "policies"),
    (cfg(policies="fixed"), "policies"),
    (cfg(policies=[["fixed"]]), "policies[0]"),
    (cfg(policies=[{"name": "fixed", "extra": 1}]), "policies[0].extra"),
    (cfg(policies=["gammatune:eta"]), "policies[0]"),
    # duplicates
    (cfg(policies=["fixed", "fixed"]), "policies[1]"),
    (cfg(policies=["gammatune", {"gammatune": {"eta": 0.3}}]), "policies[1]"),
    (cfg(policies=["fixed", "ar", "ar"]), "policies[2]"),
    (cfg(gammas=[1, 2, 2]), "gammas[2]"),
    (cfg(gammas=[1, 0]), "gammas[1]"),
    (cfg(gammas=[4096]), "gammas[0]"),
    (cfg(gammas=["1"]), "gammas[0]"),
    (cfg(gammas=4), "gammas"),
    (cfg(gammas=[]), "gammas"),
    (cfg(dataset={"question_ids": [9001, 9001]}), "dataset.question_ids[1]"),
    (cfg(dataset={"categories": ["qa", "qa"]}), "dataset.categories[1]"),
    (cfg(pairs=[{"target": "a"}, {"target": "a"}]), "pairs[1]"),
    # seeds: one range everywhere, [0, 2**32 - 1]
    (cfg(seed=-1), "seed"),
    (cfg(seed=2 ** 32), "seed"),
    (cfg(seed=1.5), "seed"),
    # tracking store
    (cfg(tracking_uri="bogus://x"), "tracking_uri"),
    (cfg(tracking_uri="mlruns"), "tracking_uri"),
    (cfg(tracking_uri=5), "tracking_uri"),
]


@pytest.mark.parametrize("raw,path", BAD_CONFIGS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_CONFIGS)])
def test_bad_config_is_one_line_naming_the_field(raw, path):
    with pytest.raises(SpecsweepError) as e:
        parse_config(raw)
    msg = str(e.value)
    assert msg.startswith(f"config {path}:"), msg
    assert "\n" not in msg and len(msg) < 400


def test_yaml_booleans_are_booleans(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: x\npairs: [{target: t, trust_remote_code: no}]\npolicies: [fixed]\n")
    assert load_config(str(p)).pairs[0].trust_remote_code is False
    p.write_text("name: x\npairs: [{target: t, trust_remote_code: true}]\npolicies: [fixed]\n")
    assert load_config(str(p)).pairs[0].trust_remote_code is True
    p.write_text('name: x\npairs: [{target: t, trust_remote_code: "false"}]\npolicies: [fixed]\n')
    with pytest.raises(SpecsweepError, match="YAML boolean"):
        load_config(str(p))


@pytest.mark.parametrize("text,msg", [
    ("name: x\nname: y\npairs: [{target: t}]\npolicies: [fixed]\n", "key 'name' appears twice"),
    ("name: x\npairs: [{target: t, dtype: float16, dtype: float32}]\npolicies: [fixed]\n", "key 'dtype' appears twice"),
    ("- a\n- b\n", "expected a YAML mapping"),
    ("name: [x\n", "not valid YAML"),
    ("name: x\npolicies: [fixed\ngammas: [1]\n", r"not valid YAML \(.* at line 3, column \d+\)"),
])
def test_bad_yaml_files(tmp_path, text, msg):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(SpecsweepError, match=msg) as e:
        load_config(str(p))
    assert "\n" not in str(e.value)


def test_model_spec_refuses_a_string_for_trust_remote_code():
    from actors.loading.models import ModelSpec

    with pytest.raises(SpecsweepError, match="trust_remote_code must be a boolean"):
        ModelSpec("t", trust_remote_code="false")


@pytest.mark.parametrize("uri,secret", [
    ("http://user:s3cret@host:5000/path", "s3cret"),
    ("http://user:pa/ss@host:5000", "pa/ss"),                     # '/' in a raw password
    ("https://user:a+b@c@mlflow.example.org/x", "a+b@c"),         # '+' and '@'
    ("https://user:p%2Fq%40r@mlflow.example.org", "p%2Fq%40r"),   # percent-encoded
    ("https://mlflow.example.org/api?access_token=Tok123&x=1", "Tok123"),
    ("https://h/api?a=1&token=Tok123", "Tok123"),
    ("https://h/blob?sv=1&sig=Sig%2B99", "Sig%2B99"),
    ("https://h/p?API_KEY=K9#frag", "K9"),
])
def test_every_secret_in_a_uri_is_redacted(uri, secret):
    text = redact(f"cannot open {uri} (refused)")
    assert secret not in text and "***" in text and text.endswith("(refused)")


def test_credentials_are_redacted():
    assert redact("http://user:s3cret@host:5000/path") == "http://***@host:5000/path"
    assert redact("https://h/x?token=t&a=1") == "https://h/x?token=***&a=1"
    assert redact("sqlite:///mlflow.db") == "sqlite:///mlflow.db"
    c = parse_config(cfg(tracking_uri="https://u:Zq9secret@mlflow.example.org"))
    assert "Zq9secret" not in json.dumps(c.public_dict())
    with pytest.raises(SpecsweepError) as e:
        parse_config(cfg(tracking_uri="bogus://u:Zq9secret@h"))
    assert "Zq9secret" not in str(e.value)


# --------------------------------------------------------------------------------------- output folder

def test_output_folder_rules(tmp_path):
    from jobs.store.output import KNOWN, check_usable, clear, write_marker

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SpecsweepError, match="is a file, not a folder"):
        check_usable(f)
    with pytest.raises(SpecsweepError, match="is a file"):
        check_usable(f / "sub")
    foreign = tmp_path / "foreign"
    (foreign / "log").mkdir(parents=True)
    (foreign / "mine.txt").write_text("keep")
    for fresh in (False, True):
        with pytest.raises(SpecsweepError, match="not a specsweep output"):
            check_usable(foreign, fresh=fresh)
    with pytest.raises(SpecsweepError, match="not a specsweep output"):
        clear(foreign)
    assert (foreign / "log").is_dir() and (foreign / "mine.txt").exists()
    check_usable(tmp_path / "new" / "deeper")           # a folder to create is fine
    out = tmp_path / "out"
    out.mkdir()
    check_usable(out)                                   # an empty folder is fine
    write_marker(out, "f")
    (out / ".specsweep-manifest.jsonl").unlink()        # a folder written before the manifest existed
    ours = []
    for folder, patterns in KNOWN.items():              # specsweep's own names and patterns, one file each
        d = out / folder.replace("*", "policies")
        d.mkdir(parents=True, exist_ok=True)
        ours += [(d / p.replace("*", "x")).relative_to(out).as_posix() for p in patterns]
        (d / "mine.bin").write_text("the user's")      # not a specsweep name: stays
    for rel in ours:
        (out / rel).write_text("x")
    (out / "notes.txt").write_text("the user's")
    check_usable(out, fresh=True)
    done = clear(out)
    assert sorted(done.removed) == sorted(set(ours))
    assert done.kept == sorted([p.relative_to(out).as_posix() for p in out.rglob("mine.bin")] + ["notes.txt"])


def test_one_rule_for_every_place_a_command_writes(tmp_path):
    """``check_writable``: the folder and file rules every command shares, each refusal one line naming the flag."""
    import os

    from jobs.store.output import check_writable

    f = tmp_path / "afile"
    f.write_text("x")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    for path, needle in ((f, "--o .*afile is a file, not a folder: choose a new or existing folder"),
                         (f / "sub", "afile is a file, not a folder"),
                         (tmp_path / "dangling", "is a symlink to nothing"),
                         (tmp_path / "loop", r"cannot be used \(Too many levels of symbolic links\)")):
        with pytest.raises(SpecsweepError, match=needle):
            check_writable(path, "--o")
    assert check_writable(tmp_path / "new" / "deeper", "--o") == tmp_path / "new" / "deeper"
    for path, needle in ((tmp_path, "is a folder: give a JSON file path$"),
                         (tmp_path / "no" / "c.json", "folder .*no does not exist: give a JSON file path in an existing"),
                         (f / "c.json", "afile is not an existing folder: give a JSON file path")):
        with pytest.raises(SpecsweepError, match=needle):
            check_writable(path, "--out", folder=False, what="JSON file path")
    assert check_writable(tmp_path / "c.json", "--out", folder=False, beside=(tmp_path / "c.json.md",)).name == "c.json"
    assert not (tmp_path / "new").exists() and not (tmp_path / "c.json").exists()      # nothing created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "dangling", "loop"]  # the probes removed


def test_a_place_no_file_can_be_created_is_refused_even_for_root():
    """/proc passes every permission check for root, yet no file can be created there: a sweep's output folder,
    ``--out`` and ``--answers`` there are refused up front, one line each."""
    from jobs.store.output import check_writable

    with pytest.raises(SpecsweepError, match="output /proc/specout cannot be created .*/proc is not writable"):
        check_writable("/proc/specout", "output", what="output folder")
    with pytest.raises(SpecsweepError, match="--out /proc/x.yaml: /proc/x.yaml is not writable"):
        check_writable("/proc/x.yaml", "--out", folder=False, what="file path")


def test_lock_is_exclusive_and_names_the_holder(tmp_path):
    from jobs.store.output import LOCK, OutputLock

    out = tmp_path / "out"
    with OutputLock(out):
        assert (out / LOCK).exists()
        with pytest.raises(SpecsweepError, match=rf"in use by another sweep \(pid {os.getpid()} on "):
            OutputLock(out).acquire()
    assert not out.exists()                             # created for the lock only: removed again
    out.mkdir()
    with OutputLock(out):
        (out / "state.json").write_text("{}")
    with OutputLock(out):                               # released: can be taken again
        pass
    assert out.exists()


def test_corrupt_state_json_is_one_line(tmp_path):
    from jobs.store.parquet_log import ParquetLog

    log = ParquetLog(tmp_path)
    (tmp_path / "log").mkdir()
    (tmp_path / "state.json").write_text("{not json")
    log.check("abc")                                    # no results yet: nothing to protect
    (tmp_path / "log" / "task-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(SpecsweepError, match="unreadable or not a specsweep state file"):
        log.check("abc")
    assert log.done_keys() == set()                     # an unreadable task file is simply run again


def test_fresh_clears_every_derived_artifact(tmp_path):
    from jobs.store.output import record_written
    from jobs.store.parquet_log import ParquetLog

    log = ParquetLog(tmp_path / "out")
    log.prepare("fp1", {"a": 1})
    root = log.root

    def written(path):                                  # as specsweep's writers do: noted, then written
        record_written(path)
        path.write_text("x")

    for sub in ("answers", "figures", "token_views", "traces", "replays/p"):
        (root / sub).mkdir(parents=True)
        written(root / sub / "stale")
    for name in ("summary.csv", "replay_agreement.csv", "report.md"):
        written(root / name)
    written(root / "log" / "task-x.parquet")
    (root / "notes.md").write_text("mine")
    with pytest.raises(SpecsweepError, match="different config"):
        log.prepare("fp2", {"a": 2})
    log.prepare("fp2", {"a": 2}, fresh=True)
    assert sorted(p.name for p in root.iterdir()) == [".specsweep", ".specsweep-manifest.jsonl", "log", "notes.md",
                                                      "state.json"]
    assert not any((root / "log").iterdir())
    assert json.loads((root / "state.json").read_text())["fingerprint"] == "fp2"


def test_fresh_on_a_new_folder_starts(tmp_path):
    """``--fresh`` on a folder that does not exist yet (or holds only the lock) is a plain start."""
    from jobs.store.output import LOCK, OutputLock, check_usable, clear

    root = tmp_path / "new"
    check_usable(root, fresh=True)
    with OutputLock(root):
        assert (root / LOCK).exists() and clear(root).removed == []


def test_exit_status_of_a_finished_sweep():
    from jobs.sweep.driver import EXIT_FAILED_ROWS, outcome

    assert outcome({"rows": 5, "failed_rows": 0, "failed_tasks": 0}) == (0, None)
    code, line = outcome({"rows": 20, "failed_rows": 20, "failed_tasks": 0, "output": "o", "first_error": "E: x"})
    assert code == EXIT_FAILED_ROWS and "20 of 20 rows failed" in line and "E: x" in line
    assert outcome({"rows": 5, "failed_rows": 1, "failed_tasks": 1, "output": "o"})[0] == EXIT_FAILED_ROWS
    assert outcome({"rows": 0, "failed_rows": 0, "failed_tasks": 0, "output": "o"})[0] == EXIT_FAILED_ROWS


def test_root_cause_of_remote_tracebacks():
    from jobs.sweep.driver import root_cause

    text = ("The actor died because of an error raised in its creation task, \x1b[36mray::PairActor.__init__()\x1b[39m\n"
            "  File \"x.py\", line 1, in __init__\n    raise SpecsweepError('...')\n"
            "policies.errors.SpecsweepError: model path /m does not exist\n")
    assert root_cause(RuntimeError(text)) == "model path /m does not exist"
    assert root_cause(RuntimeError("ray::f()\n  File...\nsafetensors_rust.SafetensorError: header too large")) == \
        "SafetensorError: header too large"
    assert root_cause(SpecsweepError("bad thing")) == "bad thing"


# --------------------------------------------------------------------------------------- preflight

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


def raw_config(tmp, target, draft, **over):
    return tiny_raw(tmp, target, draft, prefix="h", **over)


def test_preflight_finds_what_used_to_fail_in_the_actor(tiny, tmp_path):
    from actors.loading.tiny_pair import llama
    from actors.loading.tiny_pair import char_tokenizer

    from jobs.sweep.preflight import check_pairs

    target, draft = tiny
    check_pairs(parse_config(raw_config(tmp_path, target, draft)), local_cluster=True)
    other = tmp_path / "other"
    tok = char_tokenizer()
    tok.add_tokens(["<extra>"])
    llama(vocab=len(tok)).save_pretrained(other)
    tok.save_pretrained(other)
    cases = [
        (raw_config(tmp_path, str(tmp_path / "missing"), draft), r"config pairs\[0\]\.target: model path .* does not exist"),
        (raw_config(tmp_path, target, str(other)), r"config pairs\[0\]\.draft: tokenizers differ"),
        (raw_config(tmp_path, target, str(tmp_path)), r"config pairs\[0\]\.draft: .* not a Hugging Face model folder"),
        (raw_config(tmp_path, target, draft, calibrate={"context": 5000}), r"config calibrate\.context: .* exceeds"),
    ]
    import torch

    if not torch.cuda.is_available():
        cases.append((raw_config(tmp_path, target, draft, pairs=[{"target": target, "device": "cuda", "num_gpus": 1}]),
                      r"config pairs\[0\]\.device: .*no CUDA GPU"))
    for raw, msg in cases:
        with pytest.raises(SpecsweepError, match=msg) as e:
            check_pairs(parse_config(raw), local_cluster=True)
        assert "\n" not in str(e.value)


# --------------------------------------------------------------------------------------- CLI battery

def _tree(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def cli_cases(tmp: Path, target: str, draft: str) -> list[tuple[list[str], str]]:
    def conf(name, **over):
        p = tmp / f"{name}.yaml"
        p.write_text(yaml.safe_dump(raw_config(tmp, target, draft, **over)))
        return str(p)

    (tmp / "afile").write_text("x")
    (tmp / "foreign").mkdir()
    (tmp / "foreign" / "thesis.tex").write_text("x")
    (tmp / "notutf8.yaml").write_bytes(b"\xff\xfe\x00")
    (tmp / "manifested").mkdir()                       # a manifest alone does not make a folder specsweep's
    (tmp / "manifested" / ".specsweep-manifest.jsonl").write_text('"thesis.tex"\n')
    (tmp / "manifested" / "thesis.tex").write_text("x")
    (tmp / "corrupt" / "log").mkdir(parents=True)
    (tmp / "corrupt" / "log" / "task-x.parquet").write_bytes(b"not parquet")

    def pol(name, text):
        p = tmp / f"pol-{name}.yaml"
        p.write_text(text)
        return str(p)

    return [
        (["report", "--parquet", str(tmp / "corrupt")], "unreadable task file(s)"),
        (["report", "--parquet", str(tmp / "foreign")], "holds no sweep log"),
        (["report", str(tmp / "notutf8.yaml")], "is a file, not a sweep's output folder"),
        (["report", str(tmp / "nowhere")], "does not exist: give a sweep's output folder"),
        (["report"], "report needs --parquet"),
        (["sweep", conf("trc", pairs=[{"target": target, "draft": draft, "trust_remote_code": "false"}])], "trust_remote_code"),
        (["sweep", conf("nan", generation={"temperature": NAN})], "generation.temperature"),
        (["sweep", conf("dup", policies=["fixed", "fixed"])], "policies[1]"),
        (["sweep", conf("dupg", gammas=[2, 2])], "gammas[1]"),
        (["sweep", conf("qid", dataset={"source": "sample", "question_ids": "9017"})], "dataset.question_ids"),
        (["sweep", conf("cats", dataset={"source": "sample", "categories": "qa"})], "dataset.categories"),
        (["sweep", conf("tpu", pairs=[{"target": target, "device": "tpu"}])], "pairs[0].device"),
        (["sweep", conf("nomodel", pairs=[{"target": str(tmp / "nope"), "draft": draft}])], "does not exist"),
        (["sweep", conf("fileout", output=str(tmp / "afile"))], "is a file, not a folder"),
        (["sweep", conf("foreign", output=str(tmp / "foreign"))], "not a specsweep output"),
        (["sweep", conf("foreignf", output=str(tmp / "foreign")), "--fresh"], "refusing to clear"),
        (["sweep", conf("filef", output=str(tmp / "afile")), "--fresh"], "is a file, not a folder"),
        (["sweep", conf("manif", output=str(tmp / "manifested")), "--fresh"], "refusing to clear"),
        (["sweep", conf("bogus", tracking_uri="bogus://x")], "tracking_uri"),
        (["sweep", conf("ar", policies=["ar"])], "ar alone"),
        (["sweep", conf("nofilter", dataset={"source": "sample", "question_ids": [1]})], "question id 1 is not in sample: valid ids are 9001–9034"),
        (["sweep", str(tmp / "notutf8.yaml")], "not a UTF-8 text file"),
        (["sweep", str(tmp)], "is not a file"),
        (["generate", "--prompt", "x", "--temperature", "nan"], "--temperature must be"),
        (["generate", "--prompt", "x", "--top-p", "nan"], "--top-p must be"),
        (["generate", "--prompt", "x", "--max-new-tokens", "10000000"], "--max-new-tokens must be"),
        (["generate", "--prompt", "x", "--gamma", "99999"], "--gamma must be"),
        (["generate", "--prompt", "x", "--target", ""], "--target is empty"),
        (["generate", "--dataset", "sample", "--question-ids", "abc"], "--question-ids must be"),
        (["generate", "--dataset", "sample", "--question-ids", "9001,9001"], "lists an id twice"),
        (["generate", "--dataset", "sample", "--answers", str(tmp)], "is a folder"),
        (["generate", "--dataset", "sample", "--answers", str(tmp / "no" / "a.jsonl")], "does not exist"),
        (["generate", "--dataset", "sample", "--answers", "/proc/a.jsonl"], "is not writable"),
        (["generate", "--prompt", "x", "--answers", str(tmp / "a.jsonl")], "use it with --dataset, not --prompt"),
        (["distill", "--target", str(tmp / "nope"), "--out", str(tmp / "d1")], "does not exist"),
        (["distill", "--target", target, "--steps", "0", "--out", str(tmp / "d2")], "--steps must be >= 1"),
        (["distill", "--target", target, "--lr", "2", "--out", str(tmp / "d3")], "--lr must be in"),
        (["distill", "--target", target, "--out", str(tmp / "afile")], "is a file, not a folder"),
        (["distill", "--target", target, "--layers", "99", "--out", str(tmp / "d4")], "exceeds the target"),
        (["distill", "--target", target, "--extra-text", str(tmp / "nope.txt"), "--out", str(tmp / "d5")],
         "does not exist"),
        (["replay", str(tmp / "foreign"), "--policies", str(tmp / "nope.yaml")], "does not exist"),
        (["replay", str(tmp / "foreign"), "--policies", str(tmp / "notutf8.yaml")], "not a valid YAML"),
        (["replay", str(tmp / "foreign"), "--policies", pol("list", "- fixed\n")], "expected a mapping"),
        (["replay", str(tmp / "foreign"), "--policies", pol("unk", "policies: [nosuch]\n")], "unknown policy"),
        (["replay", str(tmp / "foreign"), "--policies", pol("g0", "policies: [fixed]\ngammas: [0]\n")], "gammas[0]"),
        (["replay", str(tmp / "foreign"), "--policies", pol("ok", "policies: [fixed]\n")], "holds no traces"),
        (["replay", str(tmp / "foreign"), "--policies", pol("ok2", "policies: [fixed]\n"), "--costs", "roofline:v100"],
         "unknown GPU kind 'v100'"),
        (["generate", "--prompt", "x", "--seed", "-1"], "--seed must be an integer >= 0 and <= 4294967295"),
        (["generate", "--prompt", "x", "--seed", str(2 ** 32)], "--seed must be an integer >= 0"),
        (["distill", "--target", target, "--seed", str(2 ** 40), "--out", str(tmp / "d6")], "--seed must be"),
        (["report", "--experiment", "x", "--tracking-uri", f"sqlite:///{tmp}/none.db"], "no MLflow store at"),
        (["report", "--experiment", "x"], "no MLflow store at mlflow.db"),
        (["plan", str(tmp / "nope.yaml")], "does not exist"),
        (["plan", conf("plan-big", pairs=[{"target": "meta-llama/Llama-3.1-70B-Instruct", "draft": draft,
                                           "dtype": "bfloat16", "num_gpus": 1}])], "pair Llama-3.1-70B-Instruct+"),
        (["plan", conf("plan-nocfg", pairs=[{"target": "nobody/nothing", "draft": draft, "num_gpus": 1}])],
         "no config.json for model 'nobody/nothing'"),
    ]


def test_cli_bad_input_battery(tiny, tmp_path, capsys, monkeypatch):
    from jobs.cli import main

    monkeypatch.chdir(tmp_path)
    cases = cli_cases(tmp_path, *tiny)
    for args, msg in cases:
        before = _tree(tmp_path)
        code = main(args)
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2, (args, err)
        assert len(lines) == 1 and lines[0].startswith("specsweep: error: ") and msg in lines[0], (args, err)
        leftover = _tree(tmp_path) - before
        assert not leftover, (args, leftover)
    assert len(cases) + len(BAD_CONFIGS) >= 60


# --------------------------------------------------------------------------------------- on a local Ray cluster

@pytest.fixture(scope="module")
def cluster(tiny):
    ray = pytest.importorskip("ray")
    from cluster.ray_setup import connect

    if ray.is_initialized():
        ray.shutdown()
    connect(None, num_cpus=2, object_store_mb=200)
    yield tiny
    ray.shutdown()


def listening_sockets() -> list[tuple[str, int, str]]:
    """(address, port, process name) of every listening TCP socket of this process and its descendants."""
    import psutil

    me = psutil.Process()
    out = []
    for p in [me] + me.children(recursive=True):
        try:
            conns = p.net_connections(kind="inet")
            name = p.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out += [(c.laddr.ip, c.laddr.port, name) for c in conns if c.status == psutil.CONN_LISTEN]
    return out


def is_loopback(ip: str) -> bool:
    import ipaddress

    addr = ipaddress.ip_address(ip)
    if getattr(addr, "ipv4_mapped", None):
        addr = addr.ipv4_mapped
    return addr.is_loopback


def test_sweep_cluster_listens_on_loopback_only(cluster, tmp_path):
    from jobs.sweep.driver import run_sweep

    seen = []
    run_sweep(parse_config(raw_config(tmp_path, *cluster)), log_mlflow=False,
              on_task_done=lambda n: seen.extend(listening_sockets()) if not seen else None)
    names = {n for _, _, n in seen}
    assert any("raylet" in n for n in names) and any("gcs_server" in n for n in names), names
    assert any("PairActor" in n for n in names), names           # the actors were alive when we looked
    exposed = [s for s in seen if not is_loopback(s[0])]
    assert not exposed, f"listening on a non-loopback address: {exposed}"


def test_actor_error_is_one_line_and_does_not_lock_the_folder(cluster, tmp_path, capfd):
    from jobs.store.output import LOCK
    from jobs.sweep.driver import run_sweep

    target, draft = cluster
    broken = tmp_path / "broken"
    shutil.copytree(target, broken)
    # a well-formed weights file that passes the preflight's file checks but does not fit the model: only the
    # actor, loading the weights, finds out
    from safetensors.torch import load_file, save_file

    state = load_file(str(broken / "model.safetensors"))
    state[next(k for k in state if k.endswith("mlp.down_proj.weight"))] = torch.zeros(3, 3)
    save_file(state, str(broken / "model.safetensors"), metadata={"format": "pt"})
    raw = raw_config(tmp_path, str(broken), draft)
    with pytest.raises(SpecsweepError) as e:
        run_sweep(parse_config(raw), log_mlflow=False)
    msg = str(e.value)
    assert msg.startswith("pair tiny: the actor failed to start: ") and "\n" not in msg, msg
    log_path = Path(msg.rsplit("full traceback in ", 1)[1].rstrip(")"))
    assert log_path.exists() and "Traceback" in log_path.read_text()
    time.sleep(1)                                               # Ray prints its error messages from a thread
    console = capfd.readouterr()
    assert "Traceback" not in console.err + console.out, console.err[-2000:]
    # the corrected config takes the same folder over: no "different config", no lock left
    res = run_sweep(parse_config(raw_config(tmp_path, target, draft)), log_mlflow=False)
    assert res["failed_rows"] == 0 and res["rows"] > 0
    from jobs.store.output import OutputLock

    with OutputLock(raw["output"]):
        assert (Path(raw["output"]) / LOCK).exists()


def test_failed_tasks_give_exit_status_3(cluster, tmp_path):
    import ray

    from jobs.sweep.driver import EXIT_FAILED_ROWS, outcome, run_sweep

    cfg = parse_config(raw_config(tmp_path, *cluster, dataset={"source": "sample", "question_ids": [9017, 9021, 9023]}))

    def kill_for_good(n):
        if n == 1:
            for a in ray.util.list_named_actors(all_namespaces=True):
                if cfg.fingerprint() in a["name"]:
                    ray.kill(ray.get_actor(a["name"], namespace=a["namespace"]), no_restart=True)

    res = run_sweep(cfg, log_mlflow=False, on_task_done=kill_for_good)
    assert res["failed_tasks"] >= 1 and res["failed_rows"] >= 1
    code, line = outcome(res)
    assert code == EXIT_FAILED_ROWS and "rows failed" in line and "\n" not in line
    assert "Traceback" not in res["first_error"] and "full traceback in" in res["first_error"]


def test_sigterm_is_clean_and_a_second_sweep_is_refused(cluster, tmp_path):
    import ray

    raw = raw_config(tmp_path, *cluster, dataset={"source": "sample", "question_ids": [9001, 9017, 9021, 9023]},
                     gammas=[1, 2, 3], generation={"max_new_tokens": 24}, block_size=1)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(raw))
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "jobs.sweep", str(path), "--address", address]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    logdir = tmp_path / "out" / "log"
    deadline = time.time() + 240
    while time.time() < deadline and not list(logdir.glob("task-*.parquet")) and proc.poll() is None:
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2
    assert second.stderr.strip().splitlines() == [second.stderr.strip()]
    assert f"is in use by another sweep (pid {proc.pid} on " in second.stderr
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "terminated (SIGTERM)" in err
    assert [ln for ln in err.splitlines() if ln.startswith("specsweep") and not PROGRESS.match(ln)] == \
        [err.strip().splitlines()[-1]]


def test_sweep_main_exit_codes(tmp_path, capsys, monkeypatch):
    import jobs.sweep.command as sweep

    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**BASE, "output": str(tmp_path / "out")}))
    monkeypatch.setattr(sweep, "run_sweep", lambda cfg, **kw: {"rows": 20, "failed_rows": 20, "failed_tasks": 0,
                                                               "output": cfg.output, "first_error": "ValueError: x"})
    assert sweep.main([str(p)]) == sweep.EXIT_FAILED_ROWS
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "20 of 20 rows failed" in err[0]
    monkeypatch.setattr(sweep, "run_sweep", lambda cfg, **kw: {"rows": 4, "failed_rows": 0, "failed_tasks": 0})
    assert sweep.main([str(p)]) == 0 and capsys.readouterr().err == ""

    def boom(cfg, **kw):
        raise RuntimeError("unexpected\nsecond line")

    monkeypatch.setattr(sweep, "run_sweep", boom)
    assert sweep.main([str(p)]) == sweep.EXIT_INTERNAL
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error: RuntimeError: unexpected" in err[0]
    log = Path(err[0].rsplit("full traceback in ", 1)[1].rstrip(")"))
    assert "Traceback" in log.read_text()
    log.unlink()


def test_fingerprints_are_stable():
    """What identifies a config changes only when what it computes changes. Pinned after gammatune+ gained
    ``stop_on`` (its default now stops on the draft's top probability: old gammatune+ rows meant q(x_i));
    the engine options and ``mode: live`` at their defaults leave the fingerprint alone. The default config
    was re-pinned when it moved to replay with the paper's γ grid and every sequence policy, and again when it
    shrank to 3 single-turn questions × 32 tokens (to keep the laptop run near 5 minutes), and when it gained
    the EAGLE-head pair (smollm2-eagle), and when that pair became the EAGLE-3 head's (smollm2-eagle3)."""
    assert load_config("jobs/configs/default.yaml").fingerprint() == "a3dd8d321aae5faf"
    assert load_config("jobs/configs/gammatune_paper.yaml").fingerprint() == "edce8ae365b8aef5"


def test_unreachable_tracking_uri_message_hides_credentials(tmp_path, capsys):
    import jobs.sweep.command as sweep

    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**BASE, "output": str(tmp_path / "out"),
                                 "tracking_uri": "http://alice:Zq9secret@127.0.0.1:9"}))
    assert sweep.main([str(p)]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the MLflow tracking URI" in err and "***@127.0.0.1:9" in err and "Zq9secret" not in err
    assert not (tmp_path / "out").exists()


def test_yaml_alias_bombs_are_refused_in_one_short_line(tmp_path):
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(lines) + "\n")
    t = time.time()
    with pytest.raises(SpecsweepError) as e:
        load_config(str(p))
    assert time.time() - t < 1.0 and len(str(e.value)) < 300 and "aliases" in str(e.value)


def test_yaml_merge_keys_work_and_explicit_keys_win(tmp_path):
    p = tmp_path / "merge.yaml"
    p.write_text("name: m\nbase: &base {target: smollm2-135m, draft: ngram, actors: 2}\n"
                 "pairs:\n  - <<: *base\n    name: one\n    actors: 1\npolicies: [fixed]\n")
    with pytest.raises(SpecsweepError, match="base"):            # the anchor's holder is not a config field ...
        load_config(str(p))
    p.write_text("name: m\npairs:\n  - &base {target: smollm2-135m, draft: ngram, actors: 2, name: zero}\n"
                 "  - <<: *base\n    name: one\n    actors: 1\npolicies: [fixed]\n")
    cfg = load_config(str(p))                                    # ... but merging from another entry is
    assert [(q.name, q.draft, q.actors) for q in cfg.pairs] == [("zero", "ngram", 2), ("one", "ngram", 1)]


def test_a_policy_parameter_given_twice_is_refused():
    from policies.registry import build

    with pytest.raises(SpecsweepError, match="'eta' is given twice in 'gammatune:eta=0.5,eta=0.9'"):
        build("gammatune:eta=0.5,eta=0.9", 4)


def test_an_unreachable_hub_id_fails_in_seconds_with_one_line(monkeypatch):
    """No network here (and in CI): a hub id that is not cached is refused by the probe, not after retries."""
    from actors.loading.models import resolve_source

    import huggingface_hub.constants as hc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "ENDPOINT", "https://127.0.0.1:9")        # a port nothing listens on: refused at once
    t = time.time()
    with pytest.raises(SpecsweepError) as e:
        resolve_source("someorg/not-a-cached-model")
    assert time.time() - t < 5
    assert "not in the Hugging Face cache" in str(e.value) and "\n" not in str(e.value)


def test_a_hub_id_that_must_be_downloaded_is_announced(monkeypatch, capsys):
    """The hub answers (a local listener stands in for it) and the cache lacks the model: one line says it downloads
    (the hub's progress bars are off), before ``from_pretrained`` starts."""
    import socket as socket_module

    import huggingface_hub.constants as hc

    from actors.loading.models import resolve_source

    with socket_module.create_server(("127.0.0.1", 0)) as hub:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(hc, "ENDPOINT", f"https://127.0.0.1:{hub.getsockname()[1]}")
        assert resolve_source("someorg/not-a-cached-model") == "someorg/not-a-cached-model"
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["specsweep: someorg/not-a-cached-model is not in the Hugging Face cache: downloading it from "
                   "127.0.0.1 (many GB for a large model; --verbose shows the hub's progress)"], err


def test_generation_longer_than_the_positions_is_refused_up_front(tmp_path, capsys):
    from jobs.cli import main

    target, draft = save_tiny_pair(tmp_path)                       # 1024 positions
    capsys.readouterr()
    assert main(["generate", "--prompt", "hi", "--target", target, "--draft", draft, "--max-new-tokens", "5000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "exceed the 1024 positions" in err[0] and "--max-new-tokens <=" in err[0]


def test_a_static_cache_never_allocates_past_the_positions(tmp_path):
    from actors.pair import Pair, PairConfig

    target, draft = save_tiny_pair(tmp_path)
    t = time.time()
    pair = Pair(PairConfig(target=target, draft=draft, engine="static", max_context=10**8))
    assert pair.capacity == 1024 and time.time() - t < 60
    with pytest.raises(SpecsweepError, match="exceed the 1024 positions"):
        pair.check_length(1000, 100)


def test_preflight_refuses_max_new_tokens_beyond_the_positions(tmp_path):
    from jobs.sweep.preflight import check_pairs

    target, draft = save_tiny_pair(tmp_path)
    cfg = parse_config({"name": "n", "pairs": [{"target": target, "draft": draft}], "policies": ["fixed"],
                        "generation": {"max_new_tokens": 1024}})
    with pytest.raises(SpecsweepError, match="generation.max_new_tokens: 1024 leaves no room"):
        check_pairs(cfg, local_cluster=True)


def test_fresh_on_a_new_folder_ignores_what_the_starting_sweep_wrote(tmp_path):
    """A new output folder holding only the lock and the Ray session record (written before the marker) is cleared
    by --fresh as an empty one, not refused as foreign."""
    from cluster.ray_session import SESSION_FILE
    from jobs.store.output import LOCK, check_usable, clear

    root = tmp_path / "out"
    root.mkdir()
    (root / LOCK).write_text("")
    (root / SESSION_FILE).write_text("{}")
    check_usable(root, fresh=True)
    assert not clear(root).removed
    (root / "notes.txt").write_text("mine")
    import pytest

    from policies.errors import SpecsweepError
    with pytest.raises(SpecsweepError, match="not a specsweep output"):
        clear(root)
