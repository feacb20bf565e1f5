"""bench/gpu.py runs end to end before a GPU is lent: every section a lent GPU runs first (``check ar spec curve c
batch``), on the CPU at the tiny shape, in a fresh interpreter — a broken section found here costs no device time."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("check", "ar", "spec", "curve", "c", "batch")


@pytest.mark.slow
def test_every_first_section_runs_on_the_cpu_at_the_tiny_shape(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "SPECSWEEP_BENCH_DEVICE": "cpu", "SPECSWEEP_BENCH_SHAPE": "tiny"}
    run = subprocess.run([sys.executable, "-m", "bench.gpu", *SECTIONS], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    for name in SECTIONS:
        res = json.loads((tmp_path / f"gpu_{name}.json").read_text())
        assert "error" not in res, (name, res.get("error"))
        assert res["meta"]["device"] == "cpu"
    check = json.loads((tmp_path / "gpu_check.json").read_text())
    assert all(check[e]["greedy_equals_ar"] for e in ("eager", "static", "compiled"))
    eagle = check["eagle"]                                          # EAGLE γ 64 after a 300-token prompt
    assert all(eagle[e]["greedy_equals_ar"] for e in ("eager", "static")) and eagle["static"]["longest_draft"] == 64
    assert check["second_device"] == {"skipped": "the bench runs on cpu"}
    assert "check cuda:1 skipped: the bench runs on cpu" in run.stdout
    assert "greedy == target-only: False" not in run.stdout        # the batch section's lossless lines
    assert "greedy == target-only: True" in run.stdout


def test_an_unknown_section_is_one_line():
    run = subprocess.run([sys.executable, "-m", "bench.gpu", "nope"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "SPECSWEEP_BENCH_DEVICE": "cpu"}, timeout=120)
    assert run.returncode != 0 and "unknown section(s) nope: valid are check" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_gpu_training_script_passes_only_flags_distill_knows():
    """bench/gpu_eagle3.sh runs ``distill`` on a lent GPU with no chance to retry: every flag it passes must exist."""
    import argparse
    import re

    from jobs.distill.cli import add_parser

    sub = argparse.ArgumentParser().add_subparsers()
    add_parser(sub)
    distill = sub.choices["distill"]
    known = {o for action in distill._actions for o in action.option_strings}
    script = (ROOT / "bench" / "gpu_eagle3.sh").read_text()
    command = script[script.index('"$DISTILL" distill'):script.index("2>&1", script.index('"$DISTILL" distill'))]
    passed = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", command))
    assert passed and "--kind" in passed and "--init-from" in passed
    assert passed <= known, sorted(passed - known)
