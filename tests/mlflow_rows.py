"""Scripted sweeps for the MLflow tests: a config, its tasks and the rows a PairActor would return.

No model and no Ray: ``scripted_table`` draws accept lengths and wall times from a seeded RNG, so
every test that builds a tracking store from these rows gets the same store.
"""
from __future__ import annotations

import random
from pathlib import Path

from actors.loading.schema import config_key, to_table
from jobs.config import parse_config
from jobs.dataset import load_questions
from jobs.sweep.driver import plan_tasks
from jobs.mlflow.runs import ROLE

QUESTIONS = [9001, 9017, 9021]          # writing (2 turns), translation, qa
GAMMAS = [2, 4]


def make_cfg(tmp: Path, output: str = "out", **over):
    raw = {"name": "surface", "output": str(tmp / output), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
           "pairs": [{"name": "tiny", "target": "t", "draft": "d"}], "dataset": {"source": "sample", "question_ids": QUESTIONS},
           "generation": {"max_new_tokens": 8}, "policies": ["fixed", {"gammatune": {"eta": 0.5}}], "gammas": GAMMAS,
           "warmup": 0, "block_size": 2}
    raw.update(over)
    return parse_config(raw)


def client(cfg):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{Path(cfg.output).parent}/mlflow.db")


def scripted_table(task: dict, fail: bool = False, seed: int = 0):
    """The rows a PairActor would return for ``task``: ar first, then each config, every turn."""
    from actors.pair_actor import policy_spec

    rng = random.Random(f"{task['task_key']}-{seed}")
    q = task["question"]
    rows = []
    for name, params, g in [("ar", {}, 0)] + [tuple(c) for c in task["configs"]]:
        spec = policy_spec(name, params) if name != "ar" else "ar"
        for turn in range(len(q["turns"])):
            steps = rng.randint(3, 6)
            al = [1] * steps if name == "ar" else [rng.randint(1, g + 1) for _ in range(steps)]
            drafted = [0] * steps if name == "ar" else [g] * steps
            rows.append({"task_key": task["task_key"], "config_key": config_key(task["pair"], spec, g),
                         "pair": task["pair"], "policy": name, "policy_spec": spec, "gamma": g, "repeat": 0,
                         "question_id": q["question_id"], "category": q["category"], "turn": turn,
                         "new_tokens": sum(al), "wall_time": 0.05 * steps + rng.random() * 0.01,
                         "accept_lengths": al, "accepted": [a - 1 for a in al], "drafted": drafted,
                         "status": "failed" if fail else "ok", "error": "boom" if fail else ""})
    return to_table(rows)


def tasks_of(cfg):
    ds = cfg.dataset
    return plan_tasks(cfg, load_questions(ds.source, None, None, ds.question_ids))


def started_tracker(tmp: Path):
    """(cfg, client, tasks, tracker) of a scripted sweep whose tracker has started (its runs exist)."""
    from jobs.mlflow.tracking import SweepTracker

    cfg = make_cfg(tmp)
    c = client(cfg)
    tasks = tasks_of(cfg)
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start()
    return cfg, c, tasks, tracker


def summarise_into(tracker, tables, status="FINISHED"):
    import pyarrow as pa

    from jobs.report import metrics

    df = pa.concat_tables(tables).to_pandas()
    ok = df[df["status"] == "ok"]
    return tracker.finish(status, metrics.config_summary(ok), metrics.speedup_vs_ar(ok), int((df["status"] != "ok").sum()))


def runs_of(c, cfg, role=None):
    exp = c.get_experiment_by_name(cfg.experiment_name)
    runs = c.search_runs([exp.experiment_id], max_results=1000)
    return [r for r in runs if role is None or r.data.tags.get(ROLE) == role]


def history(c, run, key):
    return [(m.step, m.value) for m in sorted(c.get_metric_history(run.info.run_id, key), key=lambda m: m.timestamp)]


def with_mode(table, mode, slower: float = 1.0, keep=lambda r: True):
    """``table``'s rows that ``keep`` selects, their ``mode`` set to ``mode`` (None = a row written before
    modes existed) and speculative rows' wall times scaled by ``slower`` so the modes' figures differ."""
    rows = [r for r in table.to_pylist() if keep(r)]
    for r in rows:
        r["mode"] = mode
        if r["policy"] != "ar":
            r["wall_time"] *= slower
    return to_table(rows)


def replayed(table):
    """The replayed twin of a task's speculative rows (mode = replay, different predicted times)."""
    return with_mode(table, "replay", slower=0.8, keep=lambda r: r["policy"] != "ar")


def policy_runs_by(c, cfg):
    return {(r.data.tags["policy_spec"], r.data.tags["mode"]): r for r in runs_of(c, cfg, "policy")}
