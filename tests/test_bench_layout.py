"""bench/ is a package run as ``python -m bench.NAME``: no script shadows a package or edits
sys.path, every script imports, the docs name only scripts that exist, and the decision-cost
benchmark covers every registered sequence policy."""
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"actors", "policies", "jobs", "cluster", "tests", "bench"}
SCRIPTS = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.stem != "__init__")


def test_bench_is_a_package_and_no_script_shadows_one():
    assert (ROOT / "bench" / "__init__.py").exists()
    assert not PACKAGES & set(SCRIPTS), f"bench scripts named after a package: {PACKAGES & set(SCRIPTS)}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_imports_as_module_without_path_edits(name):
    text = (ROOT / "bench" / f"{name}.py").read_text()
    assert "sys.path" not in text, f"bench/{name}.py edits sys.path"
    assert "python bench/" not in text, f"bench/{name}.py documents `python bench/…` (use python -m bench.{name})"
    importlib.import_module(f"bench.{name}")


def test_docs_name_only_existing_scripts():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {(f.name, m) for f in files for m in re.findall(r"\bbench[./]([a-z_]+)\b", f.read_text())}
    missing = sorted(f"{f}: bench.{m}" for f, m in named if m not in SCRIPTS and m != "py")
    assert not missing, "docs name bench scripts that do not exist:\n" + "\n".join(missing)


def test_decision_cost_covers_every_sequence_policy():
    from bench.policy_decisions import per_decision_us, sequence_policies
    from policies.base import BatchPolicy, TreePolicy
    from policies.registry import REGISTRY, build

    specs = sequence_policies()
    trees = {n for n in REGISTRY if isinstance(build(n, 4), (TreePolicy, BatchPolicy))}
    assert set(REGISTRY) - {"ar"} - trees <= set(specs) and not trees & set(specs)
    for spec in specs:
        assert per_decision_us(spec, steps=20) > 0


def test_cpu_prepack_copy_keeps_the_models_answers():
    """bench/cpu_prepack.py's packed copy (``actors/runtime/cpu_pack.py``): every linear layer packed, the original
    untouched, the LM head's dense weight kept, and the same greedy token at every position of a forward."""
    import torch

    from actors.loading.tiny_pair import llama
    from actors.runtime.cpu_pack import PackedLinear, packable
    from bench.cpu_prepack import packed_copy

    dense = llama(vocab=64, layers=2, hidden=32, seed=3)
    assert packable(dense, "eager") and not packable(dense, "static") and not packable(dense.half(), "eager")
    dense = dense.float()
    packed, n = packed_copy(dense)
    assert n == sum(isinstance(m, PackedLinear) for m in packed.modules()) > 0
    _, none = packed_copy(dense, lambda layer: False)
    assert none == 0
    assert not any(type(m) is torch.nn.Linear for m in packed.modules())
    assert any(type(m) is torch.nn.Linear for m in dense.modules())
    head = packed.get_output_embeddings()
    assert isinstance(head, PackedLinear) and head.weight.shape == (64, 32)       # EAGLE heads borrow it
    ids = torch.randint(0, 64, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a, b = dense(input_ids=ids).logits, packed(input_ids=ids).logits
    assert torch.equal(a.argmax(-1), b.argmax(-1)) and torch.allclose(a, b, atol=1e-4)
