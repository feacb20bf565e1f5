"""Layers import one way: policies ← actors ← cluster ← jobs (a lower layer never imports a higher one)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["policies", "actors", "cluster", "jobs"]


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """Top-level names imported anywhere in the file (function-level imports included), with line numbers."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {(a.name.split(".")[0], node.lineno) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add((node.module.split(".")[0], node.lineno))
    return out


@pytest.mark.parametrize("package", ORDER[:-1])
def test_no_import_against_the_layer_direction(package):
    higher = set(ORDER[ORDER.index(package) + 1:])
    bad = [f"{f.relative_to(ROOT)}:{line} imports {name}"
           for f in sorted((ROOT / package).rglob("*.py"))
           for name, line in sorted(imported_packages(f)) if name in higher]
    assert not bad, "imports against policies ← actors ← cluster ← jobs:\n" + "\n".join(bad)


def test_the_checker_sees_function_level_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from jobs.config import load_config\n")
    assert ("jobs", 2) in imported_packages(f)


# Known over the limit, with the size they may not grow past while being split (none now: keep it so).
KNOWN_LONG: dict[str, int] = {}   # module → its pinned length while it is being split (none now)


def test_no_module_over_400_lines():
    long = [f"{rel}: {n}" for pkg in ORDER for f in sorted((ROOT / pkg).rglob("*.py"))
            if (n := len(f.read_text().splitlines())) > KNOWN_LONG.get(rel := str(f.relative_to(ROOT)), 400)]
    assert not long, "modules over 400 lines:\n" + "\n".join(long)
