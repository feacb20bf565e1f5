"""Multi-node sweeps on one machine: Ray's `cluster_utils.Cluster` with logical GPUs, models on CPU.

Each worker node declares GPUs Ray schedules like real ones (it sets CUDA_VISIBLE_DEVICES per actor)
while the pair runs with ``device: cpu`` (the test-only device override). Checked: one pair per logical
GPU with no GPU given twice, a two-GPU pair on one node, tokens identical to an in-process sweep,
one line for a pair no node can hold, and a node lost mid-sweep whose tasks run again exactly once.
"""
import contextlib
import io
import json
import os
import re
from pathlib import Path

import pandas as pd
import psutil
import pytest

from actors.loading.tiny_pair import save_tiny_pair
from jobs.config import parse_config
from jobs.sweep.driver import run_sweep
from jobs.store.parquet_log import ParquetLog
from policies.errors import SpecsweepError

pytestmark = pytest.mark.slow     # conftest puts slow tests in one serial group: never beside another Ray cluster
QUESTIONS = [9017, 9021]
MB = 2 ** 20


@pytest.fixture(scope="module")
def pair_paths(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def cluster():
    saved = dict(os.environ)              # Cluster sets RAY_ADDRESS: later tests in this worker must not join it
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "object_store_memory": 80 * MB,
                                                      "node_ip_address": "127.0.0.1"})
    workers = [c.add_node(num_cpus=1, num_gpus=2, object_store_memory=80 * MB, node_ip_address="127.0.0.1")
               for _ in range(2)]
    c.wait_for_nodes()
    yield c, workers
    ray.shutdown()
    c.shutdown()
    os.environ.clear()
    os.environ.update(saved)


def config(tmp: Path, pairs: list[dict], questions=QUESTIONS, name="mn"):
    return parse_config({
        "name": f"{name}-{tmp.name}", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
        "pairs": pairs, "dataset": {"source": "sample", "question_ids": questions},
        "generation": {"max_new_tokens": 6}, "policies": ["fixed"], "gammas": [2], "warmup": 0,
        "calibrate": {"context": 8, "max_tokens": 2, "repeats": 1, "judge": False}})


def tiny(pair_paths, name, gpus, actors=1):
    target, draft = pair_paths
    return {"name": name, "target": target, "draft": draft, "device": "cpu", "num_gpus": gpus, "actors": actors}


def quiet_sweep(cfg, **kw):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        res = run_sweep(cfg, log_mlflow=False, **kw)
    return res, err.getvalue()


def test_pairs_get_their_own_logical_gpus_and_match_a_one_node_sweep(cluster, pair_paths, tmp_path, monkeypatch):
    from cluster import backends

    c, _ = cluster
    pairs = [tiny(pair_paths, "one-gpu", 1, actors=2), tiny(pair_paths, "two-gpu", 2)]
    monkeypatch.setattr(backends, "STARTING_LINE_S", 0.05)      # actors take seconds to start: progress lines show
    res, err = quiet_sweep(config(tmp_path / "ray", pairs), address=c.address, wait_for_gpus_s=30)
    assert res["failed_rows"] == 0, err
    assert "autoscaler" not in err                                # the GPUs are there: nothing asked, no wait
    assert re.search(r"specsweep: [0-2] of 3 actor\(s\) ready after \d+ s; still starting .*: (one|two)-gpu", err), err
    infos = json.loads((tmp_path / "ray" / "out" / "actors.json").read_text())
    placed = [(i["node"], g) for acts in infos.values() for i in acts for g in i["gpu_ids"]]
    assert len(placed) == 4 and len(set(placed)) == 4                 # four logical GPUs, none given twice
    assert all(len(i["gpu_ids"]) == 1 for i in infos["one-gpu"])
    (two,) = infos["two-gpu"]
    assert len(two["gpu_ids"]) == 2                                   # both GPUs of one node (STRICT_PACK)
    for acts in infos.values():                                       # the actor read its GPUs from Ray
        for i in acts:
            assert sorted(i["cuda_visible_devices"].split(",")) == sorted(i["gpu_ids"])
    one_node = [{**p, "num_gpus": 0} for p in pairs]              # the same pairs in this process, no Ray
    local, err = quiet_sweep(config(tmp_path / "local", one_node), backend="inprocess")
    for label in ("one-gpu", "two-gpu"):                          # each start phase as it happens
        phases = [line for line in err.splitlines() if line.startswith(f"specsweep: {label}: ")]
        assert [p.split(": ")[2].split(" ")[0] for p in phases] == ["models", "measuring", "ready"], err
    a = ParquetLog(str(tmp_path / "ray" / "out")).read()
    b = ParquetLog(str(tmp_path / "local" / "out")).read()
    key = ["pair", "question_id", "turn", "policy", "gamma", "ar_timing"]
    both = a.merge(b, on=key, suffixes=("_ray", "_local"))
    assert len(both) == len(a) == len(b) > 0
    assert all(list(x) == list(y) for x, y in zip(both["token_ids_ray"], both["token_ids_local"]))


def test_a_pair_no_node_can_hold_is_refused_in_one_line(cluster, pair_paths, tmp_path):
    c, _ = cluster
    cfg = config(tmp_path, [tiny(pair_paths, "three-gpu", 3)])        # 4 GPUs in all, but 2 per node
    with pytest.raises(SpecsweepError, match=r"pair three-gpu: an actor needs 3 GPUs on one node.*GPUs per node: 2, 2"):
        quiet_sweep(cfg, address=c.address)


def test_a_node_lost_mid_sweep_reruns_its_tasks_exactly_once(cluster, pair_paths, tmp_path):
    c, workers = cluster
    cfg = config(tmp_path, [tiny(pair_paths, "lossy", 2)], questions=[9017, 9018, 9019, 9020, 9021], name="loss")
    out = Path(cfg.output)
    lost = []

    def lose_the_actors_node(n: int) -> None:
        if n == 1 and not lost:                       # one task finished: remove the node its actor runs on
            info = json.loads((out / "actors.json").read_text())["lossy"][0]
            (victim,) = [w for w in workers if w.node_id == info["node"]]
            c.remove_node(victim, allow_graceful=False)
            pid = int(info["actor"].rsplit(":", 1)[1])          # label@host:pid
            try:                                                 # the node's processes are gone, the actor with them
                psutil.Process(pid).wait(timeout=30)
            except psutil.NoSuchProcess:
                pass
            lost.append(info["node"])

    res, err = quiet_sweep(cfg, address=c.address, on_task_done=lose_the_actors_node)
    assert lost and res["failed_rows"] == 0, err
    log = ParquetLog(str(out)).read()
    assert "actor restarted as" in err and "recorded once" in err, (err[-1500:], sorted(set(log["actor"])))
    log = ParquetLog(str(out)).read()
    assert log["task_key"].nunique() == 5
    counts = log.groupby(["task_key", "config_key", "turn", "ar_timing"]).size()
    assert (counts == 1).all()                                 # no row written twice
    assert set(log["question_id"]) == {9017, 9018, 9019, 9020, 9021}
    assert log["actor"].nunique() == 2                         # the first actor, then its restart
    assert not pd.isna(log["token_ids"]).any()
