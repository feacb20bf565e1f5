"""ray_cluster.yaml matches the code: resource names the sweep requests, node types that hold every shipped
pair's GPUs on one node, and setup commands that install the README's pinned package set."""
import re
import shlex
from pathlib import Path

import yaml

from jobs.config import load_config
from jobs.config.lists import load_configs

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = yaml.safe_load((ROOT / "ray_cluster.yaml").read_text())
SWEEP_RESOURCES = {"CPU", "GPU"}        # cluster/backends.py asks Ray for num_cpus and num_gpus only


def _pip_args(command: str) -> set[str]:
    """The requirement arguments of one `pip install` (constraints file, pins, editable target), options dropped."""
    words = shlex.split(command.split("pip install", 1)[1].split("&&")[0])
    keep, skip = set(), False
    for w in words:
        if skip:
            keep.add(f"-c {Path(w).name}")
            skip = False
        elif w == "-c":
            skip = True
        elif not w.startswith("-"):
            keep.add("PROJECT" if w in (".", '.[dev]', "~/specsweep") else w)
    return keep


def test_node_types_declare_only_what_the_sweep_requests():
    for name, node in CLUSTER["available_node_types"].items():
        assert set(node["resources"]) <= SWEEP_RESOURCES, name
    assert CLUSTER["head_node_type"] in CLUSTER["available_node_types"]


def test_every_shipped_pair_fits_one_node_type():
    most = max(n["resources"].get("GPU", 0) for n in CLUSTER["available_node_types"].values())
    for cfg in sorted((ROOT / "jobs" / "configs").glob("*.yaml")):
        for p in load_configs(str(cfg))[0].pairs:          # the pairs are the same at every listed temperature
            assert p.num_gpus <= most, f"{cfg.name}: pair {p.label} needs {p.num_gpus} GPUs on one node; largest has {most}"


def test_setup_installs_the_readme_package_set():
    readme = (ROOT / "README.md").read_text()
    line = next(l for l in readme.splitlines() if l.startswith("pip install -c constraints.txt"))
    readme_sets = [_pip_args(part) for part in line.split("&&") if "pip install" in part]
    setup_sets = [_pip_args(c) for c in CLUSTER["setup_commands"] if "pip install" in c]
    assert readme_sets == setup_sets
    assert all("-c constraints.txt" in s for s in setup_sets)


def test_head_keeps_the_dashboard_on_loopback_and_auth_on():
    head = " ".join(CLUSTER["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head and "RAY_AUTH_MODE=token" in head
    assert not re.search(r"dashboard-host=0\.0\.0\.0", head)
