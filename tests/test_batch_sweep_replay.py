"""Batch tasks in ``mode: replay`` / ``both``: the plan gives them the batch-1 partition, the actor traces the batch
``ar`` run row by row and replays the batch turn by turn, and the replayed batch rows equal the live ones (greedy)."""
import contextlib
import io
from pathlib import Path

import pandas as pd
import pytest

from actors.loading.tiny_pair import save_tiny_pair
from jobs.config import parse_config
from jobs.report.agreement import agreement_table, primary_rows, replay_bias
from jobs.sweep.driver import run_sweep
from jobs.store.parquet_log import ParquetLog
from jobs.sweep.plan import describe_plan, plan_tasks, replay_partition

QUESTIONS = [9001, 9017, 9021]              # writing (2 turns), translation, qa: blocks [9001, 9017] and [9021]
STEPS = ["k_max", "drafted", "accepted"]


def raw(tmp: Path, target, draft, **over):
    cfg = {"name": f"br-{tmp.name}", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
           "pairs": [{"name": "tiny", "target": target, "draft": draft}],
           "dataset": {"source": "sample", "question_ids": QUESTIONS},
           "generation": {"max_new_tokens": 10}, "policies": ["fixed", "gammatune", "tetris"],
           "gammas": [1, 3], "warmup": 0, "batch_sizes": [1, 2], "mode": "both",
           "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}}
    cfg.update(over)
    return cfg


def test_batch_tasks_take_the_batch_one_partition(tmp_path):
    pair = [{"name": "tiny", "target": "smollm2-135m", "draft": "ngram"}]
    cfg = parse_config(raw(tmp_path, "t", "d", pairs=pair, mode="replay", validate=0.5,
                           policies=["fixed", "tetris", "sequoia"]))
    to_replay, live, notes = replay_partition(cfg)
    assert {c[0] for c in to_replay} == {"fixed", "tetris"}                   # a batch policy replays
    assert len(notes) == 1 and "sequoia" in notes[0]
    qs = [type("Q", (), {"question_id": i, "category": "qa", "turns": ["hi"]})() for i in range(3)]
    tasks = plan_tasks(cfg, qs)
    batch = [t for t in tasks if t.get("batch_size", 1) == 2]
    single = [t for t in tasks if "batch_size" not in t]
    assert len(batch) == 2 and len(single) == 3
    for t in batch + single:                                                 # the same split at every batch size
        assert t["replay"] == single[0]["replay"] and t["live"] == single[0]["live"]
        assert set(map(str, t["live"] + t["replay"])) == set(map(str, t["configs"]))
    text = describe_plan(cfg, qs, tasks)
    assert "replayed and validated live as at B = 1" in text and ", live)" not in text
    both = parse_config(raw(tmp_path, "t", "d", pairs=pair, policies=["fixed", "tetris"]))
    b = [t for t in plan_tasks(both, qs) if t.get("batch_size", 1) == 2]
    # every batch size decodes every question: 2 sizes × 3 turns × (4 configs + ar first and last)
    both_text = describe_plan(both, qs, plan_tasks(both, qs))
    assert "live generations: 36 " in both_text and "ms/token (a small target on a CPU)" in both_text
    assert "not a bound" in both_text
    assert all(t["live"] == t["configs"] and t["replay"] == t["configs"] for t in b)
    live_cfg = parse_config(raw(tmp_path, "t", "d", pairs=pair, mode="live"))
    assert all("replay" not in t for t in plan_tasks(live_cfg, qs))
    assert "decoded together, live)" in describe_plan(live_cfg, qs, plan_tasks(live_cfg, qs))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("brsweep")
    target, draft = save_tiny_pair(tmp / "pair")
    cfg = parse_config(raw(tmp, target, draft))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=True)
    return cfg, res, ParquetLog(cfg.output).read()


def _twins(df: pd.DataFrame, batch: int) -> pd.DataFrame:
    part = df[(df["batch_size"] == batch) & (df["policy"] != "ar") & (df["policy"] != "oracle-bound")]
    live, rep = part[part["mode"] == "live"], part[part["mode"] == "replay"]
    keys = ["config_key", "question_id", "turn", "repeat"]
    assert len(live) == len(rep) and not live.duplicated(keys).any() and not rep.duplicated(keys).any()
    return live.merge(rep, on=keys, suffixes=("_live", "_replay"), validate="one_to_one")


@pytest.mark.slow
def test_replayed_batch_rows_equal_the_live_batch_rows(swept):
    cfg, res, df = swept
    assert res["failed_rows"] == 0, df[df["status"] != "ok"]["error"].tolist()
    rep = df[(df["mode"] == "replay") & (df["batch_size"] == 2)]
    assert set(rep["policy"]) == {"fixed", "gammatune", "tetris"}           # no oracle bound at B > 1
    assert (rep["pair"] == "tiny@B2").all() and (rep["ar_timing"] == "").all() and (rep["repeat"] == 0).all()
    assert rep["config_key"].str.startswith("tiny@B2|").all() and (rep["wall_time"] > 0).all()
    assert rep["time_reliable"].all()
    # every (config, question, turn) of the batch tasks: 3 configs × 2 γ × 4 turns, replayed and live
    twins = _twins(df, 2)
    assert len(twins) == 6 * 4
    for _, r in twins.iterrows():
        assert list(r["token_ids_replay"]) == list(r["token_ids_live"]), (r["config_key"], r["question_id"], r["turn"])
        for c in STEPS:
            assert list(r[f"{c}_replay"]) == list(r[f"{c}_live"]), (c, r["config_key"], r["question_id"], r["turn"])
    # the batch policy is replayed at B = 1 too (one row on the batch engine), equal to its live twin
    one = _twins(df, 1)
    assert {"tetris", "fixed"} <= set(one["policy_live"]) and len(one) == 6 * 4
    assert all(list(a) == list(b) for a, b in zip(one["token_ids_live"], one["token_ids_replay"]))
    assert all(list(a) == list(b) for a, b in zip(one["drafted_live"], one["drafted_replay"]))


@pytest.mark.slow
def test_agreement_table_has_exact_batch_rows(swept):
    cfg, res, df = swept
    agree = agreement_table(df)
    batch = agree[agree["pair"] == "tiny@B2"]
    assert set(batch["policy_spec"]) == {"fixed", "gammatune", "tetris"}
    assert (batch["tokens_identical"] == 1.0).all() and (batch["steps_identical"] == 1.0).all()
    assert (batch["generations"] == 8).all()                                # 2 γ × 4 turns each
    total = agree.iloc[-1]
    assert total["pair"] == "all" and total["generations"] == 2 * 6 * 4 and total["steps_identical"] == 1.0
    assert total["live_spread_median"] >= 0                                  # ar first/last of both batch sizes
    bias = replay_bias(df)
    assert "tiny@B2" in set(bias["pair"]) and bias["bias_median"].notna().all()
    # mode both shows the live rows, one mode per config, batch rows included
    shown = primary_rows(df[df["status"] == "ok"], "live")
    assert set(shown[shown["policy"] != "oracle-bound"]["mode"]) == {"live"}      # the bound exists replayed only
    assert not shown.duplicated(["config_key", "question_id", "turn", "repeat", "ar_timing"]).any()
    report = (Path(cfg.output) / "report.md").read_text()
    assert "tiny@B2" in report[report.index("replay vs live"):] and "exact: every validated generation" in report
    by_batch = report[report.index("## By batch size"):]
    assert "| tiny | 2 |" in by_batch and "oracle" not in by_batch.split("\n\n")[1]     # the bound ranks as no config


@pytest.mark.slow
def test_batch_traces_are_stored_and_left_out_of_specsweep_replay(swept):
    from actors.rollouts import read_traces
    from jobs.replay_cli import replay_output

    cfg, res, df = swept
    traces = read_traces(Path(cfg.output) / "traces")
    rows = [t for t in traces if t.meta.get("batch_size") == 2]
    assert len(rows) == 4 and {t.meta["question_id"] for t in rows} == set(QUESTIONS)     # one per row and turn
    assert len(traces) - len(rows) == 4                                                   # the batch-1 tasks' turns
    out, facts = replay_output(cfg.output, [("fixed", {})], [2])
    assert facts["traces"] == 4 and not out.duplicated(["question_id", "turn", "policy_spec", "gamma"]).any()


@pytest.mark.slow
def test_mlflow_has_replayed_batch_runs(swept):
    from mlflow.tracking import MlflowClient

    cfg, res, df = swept
    c = MlflowClient(tracking_uri=cfg.tracking_uri)
    runs = c.search_runs([c.get_experiment_by_name(cfg.experiment_name).experiment_id], max_results=1000)
    policy_runs = {(r.data.tags.get("pair"), r.data.tags.get("policy_spec"), r.data.tags.get("mode")): r
                   for r in runs if "policy_spec" in r.data.tags}
    for spec in ("fixed", "gammatune", "tetris"):
        assert ("tiny@B2", spec, "replay") in policy_runs and ("tiny@B2", spec, "live") in policy_runs
    assert not any(pair == "tiny@B2" and spec == "oracle (bound)" for pair, spec, _ in policy_runs)
    assert {r.info.status for r in policy_runs.values()} == {"FINISHED"}   # every planned task of every run arrived
