"""Sweep throughput with 1 and 2 CPU actors on a tiny random-weight pair, side by side in one run.

    python -m bench.sweep_scaling [--questions 8] [--max-new-tokens 48]
Prints generations per second for each actor count and the scaling ratio (2 actors / 1 actor).
Each actor gets cores / actors torch threads, so the ratio shows what task parallelism adds.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from cluster.ray_setup import connect, shutdown
from jobs.dataset import load_questions
from actors.loading.tiny_pair import save_tiny_pair


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    a = ap.parse_args()
    from jobs.config import parse_config  # heavy: torch (via jobs.config)
    from jobs.sweep.driver import run_sweep  # heavy: torch (via jobs.sweep.driver)

    tmp = Path(tempfile.mkdtemp(prefix="specsweep-scaling-"))
    target, draft = save_tiny_pair(tmp / "pair")
    ids = [q.question_id for q in load_questions("sample")][: a.questions]
    res = connect(None)
    print(f"# sweep scaling {time.strftime('%Y-%m-%d %H:%M')}: tiny Llama pair, {len(ids)} questions, "
          f"{res.get('CPU', 0):g} CPUs")
    rates = {}
    for n in (1, 2):
        raw = {"name": f"scaling-{n}", "output": str(tmp / f"out{n}"), "pairs": [{"name": "tiny", "target": target,
               "draft": draft, "actors": n}], "dataset": {"source": "sample", "question_ids": ids},
               "generation": {"max_new_tokens": a.max_new_tokens}, "policies": ["fixed", "gammatune"],
               "gammas": [2, 4], "warmup": 1, "calibrate": {"context": 32, "max_tokens": 8, "repeats": 2}}
        cfg = parse_config(raw)
        t = time.perf_counter()
        out = run_sweep(cfg, log_mlflow=False)
        dt = time.perf_counter() - t
        rates[n] = out["rows"] / dt
        print(f"actors={n}: {out['rows']} generations in {dt:.1f} s (actor start-up included) = {rates[n]:.2f} gen/s")
    print(f"scaling 2 actors / 1 actor: {rates[2] / rates[1]:.2f}x")
    shutdown()


if __name__ == "__main__":
    main()
