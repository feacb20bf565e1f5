"""Config validation names field paths; the CLI answers bad input with one line and exit 2."""
import subprocess
import sys

import pytest

from actors.tiny_pair import char_tokenizer, llama, save_tiny_pair
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
    for f in ("jobs/configs/default.yaml", "jobs/configs/gammatune_paper.yaml"):
        c = load_config(f)
        assert c.pairs and c.policies


def test_ray_cluster_yaml_is_valid_for_ray():
    import yaml
    from ray.autoscaler._private.util import prepare_config, validate_config

    validate_config(prepare_config(yaml.safe_load(open("ray_cluster.yaml"))))   # Ray's schema, defaults filled in


def cli(*args):
    return subprocess.run([sys.executable, "-m", "jobs.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args,msg", [
    (["generate", "--prompt", ""], "prompt is empty"),
    (["generate", "--prompt", "x", "--gamma", "0"], "--gamma must be >= 1"),
    (["generate", "--prompt", "x", "--temperature", "-1"], "--temperature must be >= 0"),
    (["generate", "--prompt", "x", "--policy", "bogus"], "valid policies are"),
    (["generate", "--prompt", "x", "--target", "/does/not/exist"], "does not exist"),
    (["sweep", "/no/such.yaml"], "does not exist"),
])
def test_cli_bad_input_is_one_line(args, msg):
    r = cli(*args)
    assert r.returncode == 2
    assert msg in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_tokenizer_mismatch(tmp_path):
    target, _ = save_tiny_pair(tmp_path / "a")
    other = tmp_path / "other"
    tok = char_tokenizer()
    tok.add_tokens(["<extra>"])
    llama(vocab=len(tok)).save_pretrained(other)
    tok.save_pretrained(other)
    r = cli("generate", "--prompt", "hi", "--target", target, "--draft", str(other))
    assert r.returncode == 2 and "tokenizers differ" in r.stderr and "Traceback" not in r.stderr


def test_cli_generate_json_on_tiny_pair(tmp_path):
    import json

    target, draft = save_tiny_pair(tmp_path)
    r = cli("generate", "--prompt", "hello", "--target", target, "--draft", draft, "--policy", "gammatune",
            "--gamma", "3", "--max-new-tokens", "20", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["new_tokens"] == len(out["token_ids"]) <= 20
    assert sum(out["accept_lengths"]) == out["new_tokens"] and out["k_max"][0] == 3
    ar = json.loads(cli("generate", "--prompt", "hello", "--target", target, "--policy", "ar", "--max-new-tokens", "20",
                        "--json").stdout)
    assert ar["token_ids"] == out["token_ids"]


def test_unreachable_ray_and_mlflow_fail_before_any_model(tmp_path):
    import yaml

    raw = {**BASE, "pairs": [{"target": "/not/loaded"}], "output": str(tmp_path / "out"),
           "tracking_uri": f"sqlite:///{tmp_path}/m.db"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    r = cli("sweep", str(path), "--address", "127.0.0.1:9")
    assert r.returncode == 2 and "cannot reach the Ray cluster at '127.0.0.1:9'" in r.stderr
    assert not (tmp_path / "out").exists()                      # nothing left behind
    path.write_text(yaml.safe_dump({**raw, "tracking_uri": "http://127.0.0.1:9"}))
    r = cli("sweep", str(path))
    assert r.returncode == 2 and "cannot reach the MLflow tracking URI 'http://127.0.0.1:9'" in r.stderr


def test_more_gpus_than_the_cluster_has():
    from cluster.ray_setup import check_resources

    with pytest.raises(SpecsweepError, match="needs 2 GPUs"):
        check_resources(2, 1, {"CPU": 2.0})
