"""The sweep service on a real local Ray cluster with a tiny pair: Parquet, MLflow, faults, resume."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ray = pytest.importorskip("ray")

from cluster.ray_setup import connect  # noqa: E402
from jobs.config import parse_config  # noqa: E402
from jobs.store.parquet_log import ParquetLog  # noqa: E402
from jobs.sweep.driver import run_sweep  # noqa: E402
from policies.errors import SpecsweepError  # noqa: E402
from actors.loading.tiny_pair import save_tiny_pair  # noqa: E402

QUESTIONS = [9001, 9017, 9021, 9023]       # writing (2 turns), translation, qa, math_reasoning
TURNS = 2 + 1 + 1 + 1
CONFIGS = 2 * 2                             # fixed, gammatune × γ ∈ {2, 4}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    target, draft = save_tiny_pair(root)
    connect(None, num_cpus=2, object_store_mb=200)
    yield target, draft
    ray.shutdown()


def raw_config(tmp, target, draft, **over):
    cfg = {"name": f"t-{tmp.name}", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
           "pairs": [{"name": "tiny", "target": target, "draft": draft, "actors": 1}],
           "dataset": {"source": "sample", "question_ids": QUESTIONS},
           "generation": {"max_new_tokens": 12}, "policies": ["fixed", {"gammatune": {"eta": 0.5}}],
           "gammas": [2, 4], "warmup": 1, "block_size": 2, "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}}
    cfg.update(over)
    return cfg


def expected_rows():
    # every task = block of 2 configs + ar timed first and last; 2 blocks per question
    return TURNS * (CONFIGS + 2 * 2)


def check_exactly_once(out: Path):
    df = ParquetLog(out).read()
    assert (df["status"] == "ok").all(), df[df["status"] != "ok"]["error"].tolist()
    key = df[["task_key", "config_key", "ar_timing", "repeat", "turn"]].astype(str).agg("|".join, axis=1)
    assert key.is_unique
    assert len(df) == expected_rows()
    return df


def mlflow_runs(uri, experiment):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    exp = c.get_experiment_by_name(experiment)
    return c.search_runs([exp.experiment_id], max_results=1000)


def test_sweep_end_to_end_and_resume_reuses_runs(cluster, tmp_path):
    raw = raw_config(tmp_path, *cluster)
    cfg = parse_config(raw)
    res = run_sweep(cfg)
    df = check_exactly_once(Path(cfg.output))
    assert set(df["policy"]) == {"ar", "fixed", "gammatune"}
    assert df[df["policy"] == "ar"]["accept_lengths"].map(lambda a: set(a) <= {1}).all()
    assert res["configs"] == CONFIGS + 1
    runs = mlflow_runs(cfg.tracking_uri, cfg.name)
    assert len(runs) == 1 + 2 + 1                             # sweep run + one run per policy (ar included)
    child = [r for r in runs if r.data.tags.get("specsweep.role") == "policy"][0]
    assert child.data.metrics["throughput"] > 0 and "mean_accepted_length" in child.data.metrics
    # answers in Spec-Bench format, one file per config
    assert len(list((Path(cfg.output) / "answers").glob("*.jsonl"))) == CONFIGS + 1
    # tables, figures and token views are attached to the parent run
    parent = [r for r in runs if r.data.tags.get("specsweep.role") == "sweep"][0]
    from mlflow.tracking import MlflowClient

    arts = {a.path for a in MlflowClient(tracking_uri=cfg.tracking_uri).list_artifacts(parent.info.run_id)}
    assert {"summary.csv", "table2.csv", "throughput_vs_gamma.png", "speedup_by_category.png", "tables"} <= arts
    assert any(a.endswith(".html") for a in arts)
    # the report reads the same experiment from MLflow and from Parquet
    from jobs.report.tables import build_report, summary_from_parquet
    from jobs.report_cli import summary_from_mlflow

    for source in (summary_from_mlflow(cfg.name, cfg.tracking_uri), summary_from_parquet(cfg.output)):
        text = build_report(*source)
        assert "1.00 ±" in text and "gammatune:eta=0.5" in text
    # a second run finds everything in the log and reuses the MLflow runs
    run_sweep(parse_config(raw))
    check_exactly_once(Path(cfg.output))
    assert len(mlflow_runs(cfg.tracking_uri, cfg.name)) == len(runs)


def test_output_folder_of_another_config_is_refused(cluster, tmp_path):
    run_sweep(parse_config(raw_config(tmp_path, *cluster, dataset={"source": "sample", "question_ids": [9021]})),
              log_mlflow=False)
    other = parse_config(raw_config(tmp_path, *cluster, gammas=[3]))
    with pytest.raises(SpecsweepError, match="different config"):
        run_sweep(other, log_mlflow=False)


def test_actor_killed_mid_sweep_loses_nothing(cluster, tmp_path):
    cfg = parse_config(raw_config(tmp_path, *cluster))
    killed = []

    def kill_once(n):
        if not killed:
            actor = [a for a in ray.util.list_named_actors(all_namespaces=True) if cfg.fingerprint() in a["name"]]
            assert len(actor) == 1
            handle = ray.get_actor(actor[0]["name"], namespace=actor[0]["namespace"])
            ray.kill(handle, no_restart=False)
            killed.append(n)

    run_sweep(cfg, log_mlflow=False, on_task_done=kill_once)
    assert killed
    check_exactly_once(Path(cfg.output))


def test_driver_killed_mid_sweep_then_resumed(cluster, tmp_path):
    raw = raw_config(tmp_path, *cluster)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(raw))
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "jobs.sweep", str(path), "--address", address], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    logdir = tmp_path / "out" / "log"
    deadline = time.time() + 240
    while time.time() < deadline and len(list(logdir.glob("task-*.parquet"))) < 2:
        time.sleep(0.05)          # kill soon after the second task lands (a coarse poll let a loaded run finish)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(list(logdir.glob("task-*.parquet")))
    assert 2 <= partial < 8, "the driver should have been killed mid-sweep"
    (logdir / "task-torn.tmp").write_bytes(b"PAR1 torn write")   # a crash mid-write leaves such a file
    res = run_sweep(parse_config(raw))
    check_exactly_once(Path(raw["output"]))
    assert res["failed_rows"] == 0
