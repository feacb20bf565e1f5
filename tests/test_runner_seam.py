"""Every target forward goes through the runner seam: outside the runner modules, no code in actors/ calls a model
with ``input_ids=`` except the draft-model forwards listed here, each with its reason (an AST walk, so a new target
forward that bypasses the runners fails this test)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNERS = {"runners.py", "batch_runner.py", "static_batch_runner.py", "row_runners.py"}
DRAFT_FORWARDS = {   # (file name, enclosing function): why it is not a target forward
    ("tree_step.py", "_draft_dists"): "the draft model growing its token tree level by level on its own cache",
    ("calibrate.py", "rank_acceptance"): "the draft model's teacher-forced ranks, untimed, for static tree shapes",
    ("reduced_vocab.py", "forward"): "the reduced-vocabulary draft wrapper is itself a model forward",
}


def model_calls(path: Path):
    """(enclosing function, line) of every call with an ``input_ids`` keyword in ``path``."""
    tree = ast.parse(path.read_text())
    out = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call) and any(k.arg == "input_ids" for k in child.keywords):
                out.append((func, child.lineno))
            visit(child, name)
    visit(tree, None)
    return out


def test_no_target_forward_outside_the_runners():
    bad, seen = [], set()
    for path in sorted((ROOT / "actors").rglob("*.py")):
        if path.name in RUNNERS:
            continue
        for func, line in model_calls(path):
            if (path.name, func) in DRAFT_FORWARDS:
                seen.add((path.name, func))
            else:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({func}) calls a model with input_ids outside the runners")
    assert not bad, "route these through actors/runtime/runners.py or actors/runtime/row_runners.py:\n" + "\n".join(bad)
    assert seen == set(DRAFT_FORWARDS), f"stale allow-list entries: {set(DRAFT_FORWARDS) - seen}"


def test_the_walk_finds_a_forward(tmp_path):
    """The detector itself: a target call written the way the bypasses were is found."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f(target, ids):\n    return target(input_ids=ids, output_hidden_states=True)\n")
    assert model_calls(probe) == [("f", 2)]
