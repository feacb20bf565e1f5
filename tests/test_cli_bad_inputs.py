"""Bad input to ``generate`` and ``calibrate`` is one line ``specsweep: error: …`` naming what is wrong and what is
valid, with exit status 2 — never a traceback: a static KV cache too small for a dataset question or for the
calibration probe, calibrate's flags past the sweep config's bounds, a negative ``--warmup``, a model folder whose
config.json is malformed or disagrees with its weights, and a prompt that alone fills the positions."""
from __future__ import annotations

import json
import shutil

import pytest

from actors.loading.tiny_pair import save_tiny_pair
from policies.errors import SpecsweepError


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("tiny"))


def _one_line(capsys, argv) -> str:
    """Run the CLI on ``argv``: exit status 2 and exactly one stderr line, which is returned."""
    from jobs.cli import main

    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("specsweep: error: "), err
    return err[0]


def _no_model_loads(monkeypatch):
    import jobs.cli

    def refuse(*_a, **_k):
        raise AssertionError("a model was loaded before the flags were checked")

    monkeypatch.setattr(jobs.cli, "_pair", refuse)


def test_a_dataset_question_longer_than_the_static_cache_is_one_line(tiny, capsys):
    target, draft = tiny
    line = _one_line(capsys, ["generate", "--target", target, "--draft", draft, "--dataset", "sample",
                              "--question-ids", "9001", "--engine", "static", "--max-context", "64",
                              "--max-new-tokens", "16"])
    assert "exceed the 64 positions" in line and "--max-context" in line


def test_a_dataset_question_is_checked_before_the_warmup_runs(tiny, capsys):
    target, draft = tiny
    line = _one_line(capsys, ["generate", "--target", target, "--draft", draft, "--dataset", "sample",
                              "--question-ids", "9001", "--engine", "static", "--max-context", "64",
                              "--max-new-tokens", "16", "--warmup", "1", "--batch-size", "1"])
    assert "exceed the 64 positions" in line and "max_new_tokens 16" in line


def test_a_calibration_probe_past_max_context_is_refused_before_any_model_loads(tiny, capsys, monkeypatch,
                                                                                 tmp_path):
    target, draft = tiny
    _no_model_loads(monkeypatch)
    line = _one_line(capsys, ["calibrate", "--target", target, "--draft", draft, "--engine", "static",
                              "--max-context", "300", "--out", str(tmp_path / "c.json")])
    # --context 256 + 6 kept steps of k = 16 (17 tokens) + 1 = 359 positions
    assert "needs 359 positions" in line and "--context <= 197" in line and "--max-context >= 359" in line


def test_a_calibration_probe_past_the_models_positions_is_refused_once_the_pair_loads(tiny, capsys, tmp_path):
    target, draft = tiny                                  # 1024 positions: the cache is capped there
    line = _one_line(capsys, ["calibrate", "--target", target, "--draft", draft, "--engine", "static",
                              "--max-context", "100000", "--context", "1000", "--out", str(tmp_path / "c.json")])
    assert "needs 1103 positions" in line and "positions of " in line and "--context <= 921" in line
    assert "--max-context >=" not in line                  # a larger cache cannot help past the model's positions
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("flag, value, bound", [("--repeats", "100000", "<= 1000"), ("--repeats", "0", ">= 1"),
                                                ("--max-tokens", "5000", "<= 4096"),
                                                ("--context", "2000000", "<= 1000000")])
def test_calibrate_flags_past_the_sweep_configs_bounds_are_named(tiny, capsys, monkeypatch, tmp_path, flag, value,
                                                               bound):
    target, draft = tiny
    _no_model_loads(monkeypatch)
    out = str(tmp_path / "c.json")
    line = _one_line(capsys, ["calibrate", "--target", target, "--draft", draft, flag, value, "--out", out,
                              "--engine", "static", "--max-context", "64"])     # bounds come before the cache
    assert f"{flag} {value} is not valid" in line and bound in line and "max_new_tokens" not in line


def test_calibrate_bounds_are_the_sweep_configs():
    from jobs.calibrate_checks import BOUNDS
    from jobs.config import Calibrate

    for _, key, least, most in BOUNDS:
        rules = {type(m).__name__: m for m in Calibrate.model_fields[key].metadata}
        assert rules["Le"].le == most and rules["Ge"].ge <= least


def test_a_negative_warmup_is_refused(tiny, capsys, monkeypatch):
    target, draft = tiny
    _no_model_loads(monkeypatch)
    line = _one_line(capsys, ["generate", "--target", target, "--draft", draft, "--warmup", "-3", "--prompt", "hi"])
    assert "--warmup -3 is not valid: use an integer >= 0" in line


def test_a_warmup_past_the_sweep_configs_bound_is_refused(tiny, capsys, monkeypatch):
    target, draft = tiny
    _no_model_loads(monkeypatch)
    line = _one_line(capsys, ["generate", "--target", target, "--draft", draft, "--warmup", "1001", "--prompt", "hi"])
    assert "--warmup 1001 is not valid: use an integer >= 0 and <= 1000" in line


def _broken_copy(folder, tmp_path, **changes) -> str:
    out = tmp_path / "broken"
    shutil.copytree(folder, out)
    cfg = json.loads((out / "config.json").read_text())
    cfg.update(changes)
    (out / "config.json").write_text(json.dumps(cfg))
    return str(out)


@pytest.mark.parametrize("changes, cause", [({"intermediate_size": 128}, "a weight's shape differs from the size"),
                                            ({"model_type": "foo"}, "model type `foo`")])
def test_a_config_json_that_does_not_fit_its_weights_is_one_line(tiny, capsys, tmp_path, changes, cause):
    target, _ = tiny
    broken = _broken_copy(target, tmp_path, **changes)
    line = _one_line(capsys, ["generate", "--prompt", "hi", "--target", broken, "--draft", "ngram"])
    assert broken in line and cause in line and "config.json must name a model_type" in line


def test_load_model_names_the_folder_of_a_config_that_disagrees_with_its_weights(tiny, tmp_path):
    from actors.loading.models import ModelSpec, load_model

    target, _ = tiny
    broken = _broken_copy(target, tmp_path, intermediate_size=128)
    with pytest.raises(SpecsweepError) as e:
        load_model(ModelSpec(broken, device="cpu"))
    assert broken in str(e.value) and "\n" not in str(e.value) and "config.json" in str(e.value)


def test_a_prompt_that_alone_fills_the_positions_names_a_valid_remedy(tiny):
    from actors.pair import Pair, PairConfig

    target, draft = tiny
    pair = Pair(PairConfig(target=target, draft=draft, engine="static", max_context=64))
    with pytest.raises(SpecsweepError) as e:
        pair.check_length(70, 16)
    text = str(e.value)
    assert "<= 0" not in text and "shorter prompt" in text and "--max-context" in text and ">= 86" in text
    with pytest.raises(SpecsweepError) as e:
        pair.check_length(40, 30)                         # room for 24 new tokens: that is the first remedy
    assert "use --max-new-tokens <= 24" in str(e.value) and "--max-context" in str(e.value)


def test_a_long_generate_prompt_on_a_small_cache_is_one_line_naming_max_context(tiny, capsys):
    target, draft = tiny
    line = _one_line(capsys, ["generate", "--target", target, "--draft", draft, "--engine", "static",
                              "--max-context", "16", "--raw", "--max-new-tokens", "4", "--prompt", "x" * 40])
    assert "shorter prompt" in line and "--max-context" in line and "<= 0" not in line
