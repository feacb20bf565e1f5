"""Inside jobs/, folders import one way: ``store/`` (a sweep's files) ← ``report/`` ← ``mlflow/`` ← ``sweep/`` ← the
commands. A lower folder never imports a higher one, so no folder loop can form (docs/architecture.md)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["store", "report", "mlflow", "sweep"]


def jobs_folders_imported(source: str) -> set[tuple[str, int]]:
    """(jobs sub-folder, line) of every ``jobs.X…`` import in ``source`` (function-level imports included)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
        out |= {(n.split(".")[1], node.lineno) for n in names if n.startswith("jobs.") and n.count(".") >= 1}
    return out


@pytest.mark.parametrize("folder", ORDER[:-1])
def test_no_jobs_folder_imports_a_higher_one(folder):
    higher = set(ORDER[ORDER.index(folder) + 1:])
    bad = [f"{f.relative_to(ROOT)}:{line} imports jobs.{name}"
           for f in sorted((ROOT / "jobs" / folder).rglob("*.py"))
           for name, line in sorted(jobs_folders_imported(f.read_text())) if name in higher]
    assert not bad, "imports against store ← report ← mlflow ← sweep:\n" + "\n".join(bad)


def test_the_checker_sees_a_folder_loop():
    assert ("sweep", 2) in jobs_folders_imported("def f():\n    from jobs.sweep.driver import run_sweep\n")
    assert ("mlflow", 1) in jobs_folders_imported("import jobs.mlflow.read\n")
