"""Config validation names field paths; the CLI answers bad input with one line and exit 2."""
import subprocess
import sys

import pytest

from actors.loading.tiny_pair import char_tokenizer, llama, save_tiny_pair
from jobs.config import PAPER_GAMMAS, load_config, parse_config
from policies.errors import SpecsweepError

BASE = {"name": "x", "pairs": [{"target": "t"}], "policies": ["fixed"]}


def cfg(**over):
    return {**BASE, **over}


def test_defaults_and_policy_forms():
    c = parse_config(cfg(policies=["fixed", "gammatune:eta=0.5", {"threshold": {"tau": 0.3}},
                                   {"name": "gt", "params": {"c": 0.2}}, "ar"]))
    assert c.gammas == PAPER_GAMMAS
    assert [p[0] for p in c.policies] == ["fixed", "gammatune", "threshold", "gt"]
    assert c.policies[1][1]["eta"] == 0.5 and c.policies[2][1]["tau"] == 0.3


@pytest.mark.parametrize("raw,path", [
    (cfg(pairs=[{"target": "t", "dtype": "fp8"}]), "pairs[0].dtype"),
    (cfg(pairs=[{"target": "t", "colour": 1}]), "pairs[0].colour"),
    (cfg(pairs=[{"draft": "d"}]), "pairs[0].target"),
    (cfg(policies=["fixed", {"gammatune": {"eta": 3}}]), "policies[1]"),
    (cfg(policies=["nope"]), "policies[0]"),
    (cfg(gammas=[1, 0]), "gammas[1]"),
    (cfg(generation={"temperature": -1}), "generation.temperature"),
    (cfg(generation={"max_new_tokens": 0}), "generation.max_new_tokens"),
    (cfg(dataset={"source": "sample", "cats": ["qa"]}), "dataset.cats"),
    (cfg(repeats=0), "repeats"),
    (cfg(policies=["oracle"], generation={"temperature": 0.5}), "policies"),
    ({"pairs": [{"target": "t"}], "policies": ["fixed"]}, "name"),
])
def test_errors_name_the_field(raw, path):
    with pytest.raises(SpecsweepError, match=r"config " + path.replace("[", r"\[").replace("]", r"\]")):
        parse_config(raw)


def test_shipped_configs_validate():
    from pathlib import Path

    shipped = sorted(Path("jobs/configs").glob("*.yaml"))
    assert {"default.yaml", "gammatune_paper.yaml", "batches.yaml"} <= {p.name for p in shipped}
    from jobs.config.lists import load_configs

    for f in shipped:
        for c in load_configs(str(f)):              # a temperature list is one config per temperature
            assert c.pairs and c.policies
    assert load_config("jobs/configs/batches.yaml").batch_sizes == [1, 4]


def test_ray_cluster_yaml_is_valid_for_ray():
    import yaml
    from ray.autoscaler._private.util import prepare_config, validate_config

    validate_config(prepare_config(yaml.safe_load(open("ray_cluster.yaml"))))   # Ray's schema, defaults filled in


def cli(*args):
    """The installed command line in a fresh interpreter (what a user runs)."""
    return subprocess.run([sys.executable, "-m", "jobs.cli", *args], capture_output=True, text=True, timeout=120)


def cli_in_process(capsys, *args) -> tuple[int, str]:
    """(exit status, stderr) of ``jobs.cli.main`` run here: the same code path without a new interpreter."""
    from jobs.cli import main

    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("args,msg", [
    (["generate", "--prompt", ""], "prompt is empty"),
    (["generate", "--prompt", "x", "--gamma", "0"], "--gamma must be an integer >= 1"),
    (["generate", "--prompt", "x", "--temperature", "-1"], "--temperature must be 0 (greedy) or a number >= 0.0001"),
    (["generate", "--prompt", "x", "--policy", "bogus"], "valid policies are"),
    (["generate", "--prompt", "x", "--target", "/does/not/exist"], "does not exist"),
    (["sweep", "/no/such.yaml"], "does not exist"),
    (["sweep", "c.yaml", "--backend", "threads"], "invalid choice: 'threads'"),
])
def test_cli_bad_input_is_one_line(capsys, args, msg):
    code, err = cli_in_process(capsys, *args)
    assert code == 2
    assert msg in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_sweep_hands_its_flags_to_the_driver(monkeypatch):
    import jobs.sweep.command as command
    from jobs.cli import main

    seen = []
    monkeypatch.setattr(command, "main", lambda argv: seen.append(argv) or 0)
    assert main(["sweep", "c.yaml", "--backend", "inprocess", "--fresh"]) == 0
    assert main(["sweep", "c.yaml"]) == 0
    assert seen == [["c.yaml", "--fresh", "--backend", "inprocess"], ["c.yaml"]]


def test_cli_bad_input_in_a_fresh_interpreter_is_one_line():
    r = cli("generate", "--prompt", "x", "--gamma", "0")
    assert r.returncode == 2 and "--gamma must be" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_tokenizer_mismatch(tmp_path, capsys):
    target, _ = save_tiny_pair(tmp_path / "a")
    other = tmp_path / "other"
    tok = char_tokenizer()
    tok.add_tokens(["<extra>"])
    llama(vocab=len(tok)).save_pretrained(other)
    tok.save_pretrained(other)
    code, err = cli_in_process(capsys, "generate", "--prompt", "hi", "--target", target, "--draft", str(other))
    assert code == 2 and "tokenizers differ" in err and "Traceback" not in err


@pytest.mark.slow          # a fresh interpreter loading torch (~9 s); in-process generate: tests/test_batch_cli.py
def test_cli_generate_json_on_tiny_pair(tmp_path, capsys):
    import json

    target, draft = save_tiny_pair(tmp_path)
    r = cli("generate", "--prompt", "hello", "--target", target, "--draft", draft, "--policy", "gammatune",
            "--gamma", "3", "--max-new-tokens", "20", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["new_tokens"] == len(out["token_ids"]) <= 20
    assert sum(out["accept_lengths"]) == out["new_tokens"] and out["k_max"][0] == 3
    from jobs.cli import main

    capsys.readouterr()
    assert main(["generate", "--prompt", "hello", "--target", target, "--policy", "ar", "--max-new-tokens", "20",
                 "--json"]) == 0
    ar = json.loads(capsys.readouterr().out)
    assert ar["token_ids"] == out["token_ids"]


def test_unreachable_ray_and_mlflow_fail_before_any_model(tmp_path, capsys):
    import yaml

    raw = {**BASE, "pairs": [{"target": "/not/loaded"}], "output": str(tmp_path / "out"),
           "tracking_uri": f"sqlite:///{tmp_path}/m.db"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    code, err = cli_in_process(capsys, "sweep", str(path), "--address", "127.0.0.1:9")
    assert code == 2 and "cannot reach the Ray cluster at '127.0.0.1:9'" in err
    assert not (tmp_path / "out").exists()                      # nothing left behind
    path.write_text(yaml.safe_dump({**raw, "tracking_uri": "http://127.0.0.1:9"}))
    code, err = cli_in_process(capsys, "sweep", str(path))
    assert code == 2 and "cannot reach the MLflow tracking URI 'http://127.0.0.1:9'" in err


def test_more_gpus_than_the_cluster_has():
    from cluster.ray_setup import check_resources

    with pytest.raises(SpecsweepError, match="needs 2 GPUs"):
        check_resources(2, 1, {"CPU": 2.0})


def test_config_fingerprints_are_pinned():
    """Resuming an output folder matches on the fingerprint: the one-schema config must keep every old value."""
    raw = {"name": "pin", "pairs": [{"target": "smollm2-135m", "draft": "ngram", "num_gpus": 1, "num_cpus": 2,
                                     "engine": "eager", "max_context": 2048},
                                    {"target": "t2", "name": "second", "dtype": "bfloat16"}],
           "policies": ["fixed", {"gammatune": {"eta": 0.5}}, {"name": "gt", "params": {"c": "0.3"}}, "ar"],
           "gammas": [1, 4, 8], "dataset": {"categories": ["math_reasoning"], "limit_per_category": 2},
           "generation": {"max_new_tokens": 32}, "calibrate": {"repeats": 3}, "repeats": 2, "seed": 7}
    assert load_config("jobs/configs/default.yaml").fingerprint() == "a3dd8d321aae5faf"
    assert load_config("jobs/configs/gammatune_paper.yaml").fingerprint() == "edce8ae365b8aef5"
    assert parse_config(raw).fingerprint() == "e561d54115ce943c"
    assert parse_config({**raw, "mode": "replay", "validate": 0.5, "rollout_length": 16}).fingerprint() == "ffb6fd761c1a8a6e"
    assert parse_config({**raw, "output": "elsewhere", "experiment": "e"}).fingerprint() == "e561d54115ce943c"
    # a parameter added later (gt's ahead) keeps the fingerprint at its default and changes it otherwise
    with_gt = {**raw, "policies": ["fixed", "gt"]}
    assert parse_config({**with_gt, "policies": ["fixed", "gt:ahead=0"]}).fingerprint() == parse_config(with_gt).fingerprint()
    assert parse_config({**with_gt, "policies": ["fixed", "gt:ahead=0.5"]}).fingerprint() != parse_config(with_gt).fingerprint()
    assert parse_config({**raw, "task_warmup": 0}).fingerprint() != "e561d54115ce943c"



def test_a_question_files_selected_questions_are_part_of_the_fingerprint(tmp_path, monkeypatch):
    """The same YAML over another file (another folder's q.jsonl), or over an edited selected question, is another
    sweep; editing a question the filter leaves out is not; the built-in sources keep their pinned values above."""
    import json

    def line(qid, text):
        return json.dumps({"question_id": qid, "category": "writing", "turns": [text]}) + "\n"

    raw = {"name": "files", "pairs": [{"target": "t"}], "policies": ["fixed"],
           "dataset": {"source": "q.jsonl", "question_ids": [1]}}
    fps = {}
    for sub, text in (("a", "Write a poem."), ("b", "Translate: good morning")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "q.jsonl").write_text(line(1, text) + line(2, "left out"))
        monkeypatch.chdir(tmp_path / sub)
        fps[sub] = parse_config(raw).fingerprint()
    assert fps["a"] != fps["b"]
    q = tmp_path / "b" / "q.jsonl"
    q.write_text(line(1, "Translate: good morning") + line(2, "edited, still left out"))
    assert parse_config(raw).fingerprint() == fps["b"]
    q.write_text(line(1, "Translate: good evening") + line(2, "left out"))
    assert parse_config(raw).fingerprint() != fps["b"]

# (γ or generation setting, bad value, the rule every entry point quotes)
ONE_RULE = [
    ("gamma", 0, "must be an integer >= 1 and <= 1024"),
    ("gamma", 5000, "must be an integer >= 1 and <= 1024"),
    ("temperature", -1.0, "must be 0 (greedy) or a number >= 0.0001 and <= 100"),
    ("temperature", 1e-300, "must be 0 (greedy) or a number >= 0.0001 and <= 100"),   # NaN probabilities below
    ("top_p", 0.0, "must be a number in (0, 1]"),
    ("top_p", 1.5, "must be a number in (0, 1]"),
    ("max_new_tokens", 0, "must be an integer >= 1 and <= 65536"),
]


@pytest.mark.parametrize("key,value,rule", ONE_RULE)
def test_one_bad_value_gets_one_message_everywhere(tmp_path, capsys, key, value, rule):
    """The registry, the sweep config, the replay CLI's policy file, `specsweep generate` and the engine all
    refuse the same value with the same rule (policies/registry.py holds it once)."""
    from jobs.replay_cli import load_policy_file
    from policies.registry import build

    messages = []
    if key == "gamma":
        with pytest.raises(SpecsweepError) as e:
            build("fixed", value)
        messages.append(str(e.value))
        with pytest.raises(SpecsweepError) as e:
            parse_config(cfg(gammas=[value]))
        messages.append(str(e.value))
        assert str(e.value).startswith("config gammas[0]: ")
        f = tmp_path / "p.yaml"
        f.write_text(f"policies: [fixed]\ngammas: [{value}]\n")
        with pytest.raises(SpecsweepError) as e:
            load_policy_file(str(f))
        messages.append(str(e.value))
    else:
        with pytest.raises(SpecsweepError) as e:
            parse_config(cfg(generation={key: value}))
        messages.append(str(e.value))
        assert str(e.value).startswith(f"config generation.{key}: ")
        from actors.core.engine import SpecEngine
        from actors.loading.tiny_pair import llama
        from policies.fixed import Fixed

        engine = SpecEngine(llama(vocab=32), None)
        with pytest.raises(SpecsweepError) as e:
            engine.generate([1, 2], Fixed(1), **{key: value})
        messages.append(str(e.value))
    flag = "--" + key.replace("_", "-")
    code, err = cli_in_process(capsys, "generate", "--prompt", "x", flag, str(value), "--target", str(tmp_path / "none"))
    assert code == 2
    messages.append(err)
    assert messages[-1].startswith(f"specsweep: error: {flag} must be")
    assert all(rule in m for m in messages), messages
