"""What a new user sees first: no deprecated calls into transformers/torch from any engine mode or drafter kind,
a silent stderr from a healthy ``specsweep generate``, and the version set the suite is pinned to."""
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from actors.drafting.drafters import ModelDrafter, NgramDrafter
from actors.drafting.eagle_drafter import EagleDrafter
from actors.core.engine import SpecEngine
from actors.runtime.hf_api import CACHE_ARG
from actors.loading.tiny_pair import gpt2, llama, perturbed, save_tiny_pair, sharpen
from policies import build
from policies.fixed import TargetOnly

ROOT = Path(__file__).resolve().parents[1]
HEAD = ROOT / "tests" / "fixtures" / "eagle_tiny" / "head"


def _drafters(target, kind, tmp_path):
    if kind == "model":
        return ModelDrafter(perturbed(target, noise=0.3))
    if kind == "ngram":
        return NgramDrafter()
    return EagleDrafter.from_folder(Path(shutil.copytree(HEAD, tmp_path / "head")), target)


@pytest.mark.parametrize("engine", ["eager", "static"])
@pytest.mark.parametrize("kind", ["model", "ngram", "eagle"])
def test_no_deprecated_call_from_any_engine_mode_or_drafter(engine, kind, tmp_path):
    """Every FutureWarning/DeprecationWarning raised while we load and generate is an error: the next
    transformers release that removes what we call fails here, not on a user's fresh install."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        target = sharpen(llama(vocab=70, seed=5))
        engine_ = SpecEngine(target, _drafters(target, kind, tmp_path), engine=engine)
        ar = SpecEngine(target, engine=engine).generate([3, 4, 5], TargetOnly(), max_new_tokens=12).token_ids
        for spec in ("fixed", "gammatune", "eagle2:depth=3,topk=2,n=8"):
            if spec.startswith("eagle2") and kind == "ngram":
                continue
            assert engine_.generate([3, 4, 5], build(spec, 3), max_new_tokens=12).token_ids == ar


def test_gpt2_family_calls_are_current_too():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        target = gpt2(vocab=60, seed=2)
        out = SpecEngine(target, ModelDrafter(perturbed(target, noise=0.3))).generate([1, 2], build("fixed", 2),
                                                                                       max_new_tokens=10)
        assert len(out.token_ids) == 10


def test_the_cache_argument_matches_the_installed_transformers():
    import inspect

    from transformers import LlamaForCausalLM

    assert CACHE_ARG in inspect.signature(LlamaForCausalLM.forward).parameters


def test_a_healthy_generate_writes_nothing_to_stderr(tmp_path):
    target, draft = save_tiny_pair(tmp_path)
    r = subprocess.run([sys.executable, "-m", "jobs.cli", "generate", "--prompt", "hello", "--target", target,
                        "--draft", draft, "--max-new-tokens", "8"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("--- new_tokens=8") and "policy=fixed" in last


QUIET_PROBE = """
import logging, sys, warnings
from actors.costs.quiet import quiet_third_party
quiet_third_party(sys.argv[1] == "verbose")
logging.basicConfig(format="%(message)s")
logging.getLogger("torchao").warning("NOISE-torchao")
logging.getLogger("torch.utils._pytree").warning("NOISE-pytree")
warnings.warn_explicit("NOISE-transformers", FutureWarning, "x.py", 1, module="transformers.modeling_utils")
logging.getLogger("specsweep").warning("OURS-log")
warnings.warn_explicit("OURS-warning", UserWarning, "x.py", 1, module="actors.core.engine")
"""


@pytest.mark.parametrize("mode", ["quiet", "verbose"])
def test_quiet_hides_third_party_noise_only(mode):
    r = subprocess.run([sys.executable, "-c", QUIET_PROBE, mode], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "OURS-log" in r.stderr and "OURS-warning" in r.stderr
    noise = [n for n in ("NOISE-torchao", "NOISE-pytree", "NOISE-transformers") if n in r.stderr]
    assert noise == ([] if mode == "quiet" else ["NOISE-torchao", "NOISE-pytree", "NOISE-transformers"])


def _pins(text: str) -> dict:
    return {m[0].lower(): m[1] for m in re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", text, re.M)}


def test_the_constraints_file_pins_what_is_installed():
    """constraints.txt is the version set CI installs: each core package is pinned, and to what runs here."""
    from importlib.metadata import version

    pins = _pins((ROOT / "constraints.txt").read_text())
    for name in ("torch", "transformers", "ray", "mlflow", "pyarrow", "torchao", "optimum-quanto", "accelerate"):
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert version(name).split("+")[0] == pins[name].split("+")[0], (name, version(name), pins[name])


def test_pyproject_bounds_admit_the_pinned_set():
    from packaging.requirements import Requirement

    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = _pins((ROOT / "constraints.txt").read_text())
    for dep in map(Requirement, deps):
        name = dep.name.lower()
        if name in pins:
            assert dep.specifier.contains(pins[name].split("+")[0], prereleases=True), (str(dep), pins[name])
        if name in ("torch", "transformers", "ray", "mlflow", "pyarrow", "torchao", "optimum-quanto"):
            assert any(s.operator in ("<", "<=") for s in dep.specifier), f"{dep} has no upper bound"
