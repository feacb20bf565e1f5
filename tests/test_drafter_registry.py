"""The drafter registry (``actors/drafter_kinds/``): every kind registered once, names resolved by the registry, and
no code outside the registry switching on the drafter kind (an AST walk of actors/, cluster/, jobs/ and bench/).

A switch is: a comparison (``==``, ``!=``, ``in``, ``is``, a ``match`` case) against a registered kind's name or a
kind's name prefix (``"eagle:"``), ``isinstance``/``issubclass``/``type(…) is`` against a concrete drafter class,
a dict literal keyed by two or more kind names (a table that switches), or a reference to a kind's own name
matcher (``EAGLE_PREFIX``). Code asks the kind's record instead (``kind_of(draft).loads_model``, …)."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.drafter_kinds import eagle, eagle3, model, ngram, suffix
from actors.drafter_kinds.registry import BY_NAME, KINDS, check_draft_files, kind_name, kind_of, kind_of_drafter
from actors.drafting.drafters import NgramDrafter
from actors.loading.tiny_pair import llama
from policies.errors import SpecsweepError

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("actors", "cluster", "jobs", "bench")
REGISTRY = ROOT / "actors" / "drafter_kinds"
KIND_NAMES = frozenset(BY_NAME)
PREFIXES = frozenset(f"{n}:" for n in KIND_NAMES)
MATCHERS = frozenset({"EAGLE_PREFIX", "EAGLE_HEADS", "EAGLE3_HEADS", "is_head", "EAGLE3_PREFIX", "is_eagle3", "marks_eagle3"})
# Switches not moved into the registry yet, by (file, function): each must still be found (so the list shrinks as
# they move) and nothing else may be. distill's --kind picks which trainer runs.
KNOWN = {
    ("jobs/distill/cli.py", "cmd_distill"): "--kind eagle/eagle3 picks the head trainer (jobs/distill/eagle.py, eagle3.py)",
}
# Where the same words name something else, for good: not drafter kinds.
NOT_KINDS = {
    ("actors/drafting/eagle_head.py", "load_head"): "an EAGLE head's weight layout (EAGLE-1/2 'eagle' or 'eagle3')",
    ("jobs/recommend/schema.py", "check_vllm"): "vLLM's own method names ('ngram', 'suffix') and config key 'model'",
}


def drafter_classes() -> frozenset[str]:
    """Every concrete drafter class in actors/ (subclasses of ``Drafter``, transitively, and ``EagleRows``)."""
    bases: dict[str, set[str]] = {}
    for path in (ROOT / "actors").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(
                    b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                    if isinstance(b, (ast.Name, ast.Attribute)))
    found, grew = {"Drafter"}, True
    while grew:
        new = {c for c, bs in bases.items() if bs & found} - found
        found |= new
        grew = bool(new)
    return frozenset((found - {"Drafter"}) | {"EagleRows"})


CLASSES = drafter_classes()


def _names(node) -> list[str]:
    """Class names an isinstance target names (a Name, an Attribute, or a tuple of them)."""
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _names(e)]
    if isinstance(node, ast.Name):
        return [node.id]
    return [node.attr] if isinstance(node, ast.Attribute) else []


def _kind_constants(node) -> list[str]:
    """Kind names or kind prefixes a comparison operand spells (a string, or a tuple/list/set of strings)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _kind_constants(e)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        v = node.value
        return [v] if v in KIND_NAMES or any(v.startswith(p) for p in PREFIXES) else []
    return []


def find_switches(source: str, filename: str = "<snippet>") -> list[tuple[str, str]]:
    """(enclosing function or ``<module>``, what) for every switch on the drafter kind in ``source``."""
    tree = ast.parse(source, filename=filename)
    owner = {}
    for fn in ast.walk(tree):              # outer functions first, so the innermost one is written last
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owner.update({id(sub): fn.name for sub in ast.walk(fn) if sub is not fn})
    out = []
    for node in ast.walk(tree):
        where = owner.get(id(node), "<module>")
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                out += [(where, f"compares with kind {v!r}") for v in _kind_constants(operand)]
                out += [(where, f"compares with drafter class {c}") for c in _names(operand) if c in CLASSES]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance",
                                                                                                 "issubclass"):
            if len(node.args) == 2:
                out += [(where, f"{node.func.id} against {c}") for c in _names(node.args[1]) if c in CLASSES]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "startswith", "endswith", "removeprefix"):
            out += [(where, f"{node.func.attr} with kind prefix {v!r}") for a in node.args for v in _kind_constants(a)]
        elif isinstance(node, ast.match_case):
            for sub in ast.walk(node.pattern):
                if isinstance(sub, ast.MatchValue):
                    out += [(where, f"match case on kind {v!r}") for v in _kind_constants(sub.value)]
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in KIND_NAMES]
            if len(set(keys)) >= 2:
                out.append((where, f"a table keyed by kinds {sorted(set(keys))}"))
        elif isinstance(node, (ast.Name, ast.Attribute)) and _names(node) and _names(node)[0] in MATCHERS:
            out.append((where, f"uses a kind's own matcher {_names(node)[0]}"))
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in MATCHERS:
            out.append((where, f"imports a kind's own matcher {node.name}"))
    return out


def scanned_files() -> list[Path]:
    return [p for pkg in SCANNED for p in sorted((ROOT / pkg).rglob("*.py")) if REGISTRY not in p.parents]


def switches_in(paths, root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """{(file relative to ``root``, enclosing function): [what]} over ``paths``."""
    found = {}
    for path in paths:
        rel = str(path.relative_to(root))
        for where, what in find_switches(path.read_text(), rel):
            found.setdefault((rel, where), []).append(what)
    return found


def test_no_switch_on_the_drafter_kind_outside_the_registry():
    found = switches_in(scanned_files())
    new = {k: v for k, v in found.items() if k not in KNOWN and k not in NOT_KINDS}
    assert not new, "switches on the drafter kind outside actors/drafter_kinds/ (ask the kind's record instead):\n" \
        + "\n".join(f"{f}:{w}: {', '.join(v)}" for (f, w), v in sorted(new.items()))
    gone = sorted((set(KNOWN) | set(NOT_KINDS)) - set(found))
    assert not gone, f"no longer switching (remove them from KNOWN): {gone}"


SWITCHES = {
    "compare": "def f(p):\n    if p.drafter_kind == 'eagle':\n        return 1\n",
    "in tuple": "def f(kind):\n    return kind in ('model', 'eagle')\n",
    "isinstance": "from actors.drafting.drafters import NgramDrafter\ndef f(d):\n    return isinstance(d, NgramDrafter)\n",
    "isinstance tuple": "def f(d):\n    return isinstance(d, (int, drafters.ModelDrafter))\n",
    "type is": "def f(d):\n    return type(d) is EagleDrafter\n",
    "prefix": "def f(name):\n    return name.startswith('eagle:')\n",
    "matcher": "from actors.drafter_kinds.eagle import EAGLE_PREFIX\n",
    "match": "def f(kind):\n    match kind:\n        case 'ngram':\n            return 0\n",
    "table": "METHODS = {'model': 'draft_model', 'ngram': 'ngram'}\n",
}


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_the_check_finds_a_switch(name):
    assert find_switches(SWITCHES[name]), f"the {name} switch went unseen"


def test_the_walk_over_files_reports_a_planted_switch(tmp_path):
    (tmp_path / "jobs").mkdir()
    bad = tmp_path / "jobs" / "planted.py"
    bad.write_text("from actors.drafter_kinds.registry import kind_name\n\n\ndef pick(draft):\n"
                   "    return 1 if kind_name(draft) != 'ngram' else 0\n")
    assert switches_in([bad], tmp_path) == {("jobs/planted.py", "pick"): ["compares with kind 'ngram'"]}


def test_the_check_names_the_enclosing_function():
    assert find_switches(SWITCHES["compare"]) == [("f", "compares with kind 'eagle'")]


def test_the_check_leaves_asking_the_registry_alone():
    ok = ("from actors.drafter_kinds.registry import kind_of\n"
          "def f(p, state):\n    kind = kind_of(p.draft)\n    x = state['model']\n"
          "    return kind is not None and kind.loads_model and isinstance(p, dict)\n")
    assert find_switches(ok) == []


def test_the_concrete_drafter_classes_are_found():
    assert {"ModelDrafter", "NgramDrafter", "EagleDrafter", "EagleRows"} <= CLASSES and "Drafter" not in CLASSES


def test_each_kind_is_registered_once_and_names_resolve():
    assert [k.name for k in KINDS] == ["ngram", "suffix", "eagle3", "eagle", "model"] and len(BY_NAME) == len(KINDS)
    assert {ngram.KIND, suffix.KIND, eagle3.KIND, eagle.KIND, model.KIND} == set(KINDS)
    assert kind_of("eagle3:/some/head") is eagle3.KIND
    assert kind_of("suffix") is suffix.KIND
    assert kind_of(None) is None and kind_name(None) == "none"
    assert kind_of("ngram") is ngram.KIND
    assert kind_of("eagle:/some/head") is eagle.KIND and kind_of("smollm2-135m-eagle") is eagle.KIND
    assert kind_of("HuggingFaceTB/SmolLM2-135M") is model.KIND and kind_of("smollm2-135m-draft") is model.KIND
    assert kind_of_drafter(NgramDrafter()) is ngram.KIND and kind_of_drafter(None) is None


def test_what_each_kind_declares():
    assert model.KIND.loads_model and not eagle.KIND.loads_model and not ngram.KIND.loads_model
    assert eagle.KIND.reads_features and not model.KIND.reads_features and not ngram.KIND.reads_features
    assert not ngram.KIND.on_gpu and eagle.KIND.on_gpu and model.KIND.on_gpu
    assert ngram.KIND.record_rollouts is None
    assert suffix.KIND.record_rollouts is not None and not suffix.KIND.on_gpu and not suffix.KIND.has_weights


def test_the_registry_loads_no_torch():
    """``specsweep plan``, preflight's file checks and ``specsweep recommend`` ask the registry without loading torch
    (each kind imports its drafter inside the functions that need it)."""
    code = ("import sys, actors.drafter_kinds.registry, actors.plan.memory_plan, jobs.recommend.engines\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_each_kind_tells_the_serving_engines_its_names():
    assert kind_of("ngram").serving("ngram").lookup == ngram.LOOKUP_SIZES
    assert kind_of("some/model").serving("some/model").methods["vllm"] == "draft_model"
    head = kind_of("smollm2-135m-eagle").serving("smollm2-135m-eagle")
    assert head.label == "eagle" and head.trees and "trtllm" in head.refusals and "trtllm" not in head.methods
    sfx = kind_of("suffix").serving("suffix")
    assert sfx.methods == {"vllm": "suffix"} and set(sfx.refusals) == {"sglang", "trtllm"} and sfx.model is None


def _random_eagle3(target, tmp_path):
    from actors.drafting.eagle3_head import load_eagle3_head, random_eagle3_head

    return load_eagle3_head(random_eagle3_head(target, tmp_path / "e3", layers=[0, 0, 0]), target)


def test_each_kinds_drafter_carries_its_name_and_feature_reading(tmp_path):
    """A loaded drafter names its kind (``kind_of_drafter``) and reads the target's features exactly when its kind
    says so (the engine asks the drafter, the registry's callers ask the kind)."""
    from types import SimpleNamespace

    from actors.drafting.eagle3_drafter import Eagle3Drafter
    from actors.drafting.eagle_drafter import EagleDrafter
    from actors.drafting.eagle_head import init_head

    target = llama(vocab=20, layers=1, hidden=16)
    drafters = {ngram.KIND: ngram.KIND.load(SimpleNamespace(ngram_max=3), target, None),
                suffix.KIND: suffix.KIND.load(SimpleNamespace(), target, None),
                model.KIND: model.KIND.load(SimpleNamespace(), target, llama(vocab=20, layers=1, hidden=16, seed=1)),
                eagle.KIND: EagleDrafter(init_head(target, seed=1), target),
                eagle3.KIND: Eagle3Drafter(_random_eagle3(target, tmp_path), target)}
    assert set(drafters) == set(KINDS)
    for kind, drafter in drafters.items():
        assert kind_of_drafter(drafter) is kind and drafter.needs_features == kind.reads_features
        assert (kind.draft_module(drafter, getattr(drafter, "model", None)) is not None) == kind.has_weights


def test_a_kinds_file_check_runs_through_the_registry(tmp_path):
    with pytest.raises(SpecsweepError, match="does not exist"):
        check_draft_files(f"eagle:{tmp_path / 'missing'}", None)
    check_draft_files("ngram", None)
    check_draft_files(None, None)
