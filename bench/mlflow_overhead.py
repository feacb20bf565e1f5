"""What MLflow streaming costs a sweep: the tiny pair on a local Ray cluster, with and without MLflow.

    python -m bench.mlflow_overhead [ROUNDS]

Prints, per round, the wall time of ``run_sweep`` without MLflow and with it (sqlite store), and
the tracker's own timings: ``driver`` = seconds the driver thread spent in ``task_done`` (running
sums + queueing), ``sender`` = seconds the background thread spent inside ``log_batch``, ``start``
and ``finish`` = the synchronous calls before the first task and after the last.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from cluster.ray_setup import connect
from actors.loading.tiny_pair import save_tiny_pair

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(rounds: int = 2) -> None:
    import ray  # heavy: ray

    import jobs.sweep.driver as _sw  # heavy: torch (via jobs.sweep.driver)
    from jobs.config import parse_config  # heavy: torch (via jobs.config)

    root = Path(tempfile.mkdtemp(prefix="mlflow-overhead-"))
    target, draft = save_tiny_pair(root / "pair")
    connect(None, num_cpus=2, object_store_mb=200)

    def raw(name):
        return {"name": "overhead", "output": str(root / name), "tracking_uri": f"sqlite:///{root}/mlflow.db",
                "pairs": [{"name": "tiny", "target": target, "draft": draft, "actors": 1}],
                "dataset": {"source": "sample", "question_ids": [9001, 9017, 9021, 9023]},
                "generation": {"max_new_tokens": 12}, "policies": ["fixed", {"gammatune": {"eta": 0.5}}],
                "gammas": [2, 4], "warmup": 1, "block_size": 2, "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2}}

    for i in range(rounds):
        for mlflow_on in (False, True):
            t0 = time.perf_counter()
            res = _sw.run_sweep(parse_config(raw(f"r{i}-{int(mlflow_on)}")), log_mlflow=mlflow_on)
            wall = time.perf_counter() - t0
            t = res.get("mlflow_timings", {})
            extra = (f" driver {t['driver_s'] * 1e3:.1f} ms / {t['tasks']} tasks, sender {t['sender_s'] * 1e3:.0f} ms,"
                     f" start {t['start_s'] * 1e3:.0f} ms, finish {t['finish_s'] * 1e3:.0f} ms") if t else ""
            print(f"round {i} mlflow={'on ' if mlflow_on else 'off'} wall {wall:.2f} s{extra}", file=sys.stderr)
    ray.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
