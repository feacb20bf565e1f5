"""The project's import graph: no cycle (function-level imports counted), imports inside functions only for heavy or
optional modules and saying so, jobs/ in named parts, tests and benches that stand alone."""
import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("policies", "actors", "cluster", "jobs", "bench")
# Third-party packages that take a second or more to import, or that only some runs need: an import of them (or of a
# project module that imports one at its top) may sit inside a function, with a comment naming why.
HEAVY = {"torch", "transformers", "ray", "mlflow", "matplotlib", "accelerate", "safetensors"}
OPTIONAL = {"torchao", "optimum", "gguf", "tabulate", "psutil", "scipy"}
LAZY_CHECKED = ("cluster", "jobs", "actors", "policies", "bench")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports(path: Path, modules) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import in ``path``; ``from a import b`` names ``a.b``
    when that is a module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    in_function = {id(sub) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in in_function) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.append((sub if sub in modules else node.module, node.lineno, id(node) in in_function))
    return out


def graph():
    modules = project_modules()
    return modules, {m: imports(p, modules) for m, p in modules.items()}


def cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan 1972, "Depth-first search and linear graph
    algorithms")."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_counting_function_level_imports():
    modules, imp = graph()
    edges = {m: sorted({t for t, _, _ in lst if t in modules and t != m}) for m, lst in imp.items()}
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]


def heavy_root(module: str, modules, imp, seen=()) -> str | None:
    """The heavy or optional third-party package that importing ``module`` loads at import time, if any."""
    root = module.split(".")[0]
    if root in HEAVY or root in OPTIONAL:
        return root
    if module not in modules or module in seen:
        return None
    for t, _, inside in imp[module]:
        if not inside and (r := heavy_root(t, modules, imp, seen + (module,))):
            return r
    return None


@pytest.mark.parametrize("package", LAZY_CHECKED)
def test_imports_inside_functions_are_heavy_or_optional_and_say_so(package):
    modules, imp = graph()
    bad = []
    for m, path in modules.items():
        if m.split(".")[0] != package:
            continue
        lines = path.read_text().splitlines()
        for t, line, inside in imp[m]:
            if not inside:
                continue
            said = "#" in lines[line - 1] or lines[line - 2].strip().startswith("#")
            if heavy_root(t, modules, imp) is None or not said:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {t} inside a function"
                           + ("" if said else " without a comment saying why"))
    assert not bad, "move these to the module's top (or say which heavy/optional module they defer):\n" + "\n".join(bad)


def test_jobs_is_in_named_parts():
    top = sorted(p.name for p in (ROOT / "jobs").glob("*.py") if p.name != "__init__.py")
    subpackages = sorted(p.parent.name for p in (ROOT / "jobs").glob("*/__init__.py"))
    assert len(top) <= 12, f"{len(top)} modules at the top of jobs/: {top}"
    assert len(subpackages) >= 3, f"jobs/ subpackages: {subpackages}"


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_test_modules_stand_alone_and_benches_import_no_tests():
    """Shared test helpers live in helper modules; no tests/test_*.py imports another, no bench imports tests."""
    bad = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        bad += [f"{path.relative_to(ROOT)} imports {m}" for m in sorted(_imported_modules(path))
                if m.startswith("tests.test_") or m.startswith("test_")]
    for path in sorted((ROOT / "bench").rglob("*.py")):
        bad += [f"{path.relative_to(ROOT)} imports {m}" for m in sorted(_imported_modules(path))
                if m == "tests" or m.startswith("tests.")]
    assert not bad, "\n".join(bad)
