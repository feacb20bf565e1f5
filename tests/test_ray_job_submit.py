"""`ray job submit` of a sweep to a two-node cluster on 127.0.0.1 (a head and a worker with one logical GPU,
started and stopped here; only their processes are stopped)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from actors.loading.tiny_pair import save_tiny_pair
from tests.helpers import free_ports

ROOT = Path(__file__).resolve().parents[1]
RAY = shutil.which("ray")


def stop_cluster(temp_dir: str) -> None:
    """Stop only the head node started here: the Ray processes whose command lines name its temp dir, and
    their children (``ray stop`` would stop every Ray cluster on the machine)."""
    import psutil

    mine = [p for p in psutil.process_iter(["cmdline"]) if any(temp_dir in a for a in (p.info["cmdline"] or []))]
    procs = {p.pid: p for p in mine}
    for p in mine:
        try:
            procs.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.NoSuchProcess:
            pass
    for p in procs.values():
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(list(procs.values()), timeout=30)
    for p in alive:
        p.kill()


def submit_when_agent_ready(cmd: list[str], env: dict, deadline_s: float = 120) -> subprocess.CompletedProcess:
    """``ray job submit``, retried while the head answers "No available agent to submit job" (its job agent starts
    a little after `ray start` returns, later on a loaded machine), up to ``deadline_s``."""
    import time

    end = time.time() + deadline_s
    while True:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode == 0 or "No available agent" not in r.stdout + r.stderr or time.time() > end:
            return r
        time.sleep(3)


@pytest.mark.slow                                   # starts a Ray head node
@pytest.mark.skipif(RAY is None, reason="ray CLI not installed")
def test_ray_job_submit_runs_a_sweep_on_the_worker_node(tmp_path):
    target, draft = save_tiny_pair(tmp_path / "pair")
    cfg = {"name": "submitted", "output": str(tmp_path / "out"), "tracking_uri": f"sqlite:///{tmp_path}/mlflow.db",
           # the only GPU is the worker's: the pair must be placed there (models on CPU, the GPU is logical)
           "pairs": [{"name": "tiny", "target": target, "draft": draft, "device": "cpu", "num_gpus": 1}],
           "dataset": {"source": "sample", "question_ids": [9021]}, "generation": {"max_new_tokens": 8},
           "policies": ["fixed"], "gammas": [2], "warmup": 0, "calibrate": {"context": 8, "max_tokens": 2, "repeats": 1, "judge": False}}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    port, gcs = free_ports(2)            # its own ports: never another cluster's 6379 / 8265
    import tempfile

    ray_tmp = tempfile.mkdtemp(prefix="rj", dir="/tmp")   # short: Ray's socket paths must fit in 107 bytes
    worker_tmp = tempfile.mkdtemp(prefix="rw", dir="/tmp")
    subprocess.run([RAY, "start", "--head", f"--port={gcs}", "--num-cpus=2", f"--dashboard-port={port}", "--dashboard-host=127.0.0.1",
                    "--include-dashboard=true", "--object-store-memory=200000000", f"--temp-dir={ray_tmp}"],
                   check=True, env=env, capture_output=True, timeout=180)
    try:
        # the worker unpacks the job's working dir under its own temp dir: two nodes on one machine sharing one
        # would unpack the same package into the same folder, one while the other's processes import from it
        subprocess.run([RAY, "start", f"--address=127.0.0.1:{gcs}", "--num-cpus=1", "--num-gpus=1",
                        "--object-store-memory=100000000", f"--temp-dir={worker_tmp}"],
                       check=True, env=env, capture_output=True, timeout=180)
        r = submit_when_agent_ready([RAY, "job", "submit", f"--address=http://127.0.0.1:{port}", "--working-dir",
                                     str(ROOT), "--runtime-env-json",
                                     '{"excludes": ["runs", "mlflow.db", ".git", "tests", "docs", "bench", "*.safetensors", ".whl"]}', "--",
                                     sys.executable, "-m", "jobs.sweep", str(path)], env)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert "succeeded" in (r.stdout + r.stderr).lower()
        import pyarrow.parquet as pq

        files = list((tmp_path / "out" / "log").glob("task-*.parquet"))
        assert len(files) == 1 and pq.read_table(files[0]).num_rows == 3     # ar (first) + fixed γ=2 + ar (last)
        import json

        (info,) = json.loads((tmp_path / "out" / "actors.json").read_text())["tiny"]
        assert info["gpu_ids"] == ["0"] and info["cuda_visible_devices"] == "0"    # the worker's one GPU
    finally:
        stop_cluster(worker_tmp)
        stop_cluster(ray_tmp)
