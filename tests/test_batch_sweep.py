"""A sweep with ``batch_sizes``: blocks of questions decoded together, rows carrying their batch size, reports and
MLflow per pair and batch size, tokens equal to the batch-1 run's (greedy)."""
import contextlib
import io
from pathlib import Path

import pytest

from actors.loading.tiny_pair import save_tiny_pair
from jobs.config import parse_config
from jobs.report import metrics
from jobs.sweep.driver import run_sweep
from jobs.store.parquet_log import ParquetLog
from jobs.sweep.plan import plan_tasks
from policies.errors import SpecsweepError

QUESTIONS = [9001, 9017, 9021]              # writing (2 turns), translation, qa


def raw(tmp: Path, target, draft, **over):
    cfg = {"name": f"b-{tmp.name}", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
           "pairs": [{"name": "tiny", "target": target, "draft": draft}],
           "dataset": {"source": "sample", "question_ids": QUESTIONS},
           "generation": {"max_new_tokens": 10}, "policies": ["fixed", "tetris", "gt-batch"],   # gt-batch: c=auto
           "gammas": [2], "warmup": 0, "batch_sizes": [1, 2],
           "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}}
    cfg.update(over)
    return cfg


pytestmark_swept = pytest.mark.slow          # a whole sweep with MLflow: the slow tier


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bsweep")
    target, draft = save_tiny_pair(tmp / "pair")
    cfg = parse_config(raw(tmp, target, draft))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=True)
    return cfg, res, err.getvalue()


def test_plan_makes_question_blocks_per_batch_size(tmp_path):
    cfg = parse_config(raw(tmp_path, "t", "d", pairs=[{"name": "tiny", "target": "smollm2-135m", "draft": "ngram"}],
                           batch_sizes=[2, 1]))
    qs = [type("Q", (), {"question_id": i, "category": "qa", "turns": ["hi"]})() for i in range(5)]
    tasks = plan_tasks(cfg, qs)
    batch = [t for t in tasks if t.get("batch_size", 1) == 2]
    assert [len(t["questions"]) for t in batch] == [2, 2, 1]          # the last block is smaller: normal
    assert len(tasks) - len(batch) == 5
    assert len({t["task_key"] for t in tasks}) == len(tasks)
    for bad, needle in (([0], "batch_sizes[0]"), ([2, 2], "listed"), ([257], "<= 256")):
        with pytest.raises(SpecsweepError, match=needle.replace("[", r"\[").replace("]", r"\]")):
            parse_config(raw(tmp_path, "t", "d", batch_sizes=bad))
    assert parse_config(raw(tmp_path, "t", "d", batch_sizes=[1])).fingerprint() == \
        parse_config({k: v for k, v in raw(tmp_path, "t", "d").items() if k != "batch_sizes"}).fingerprint()


@pytestmark_swept
def test_rows_carry_batch_size_and_match_batch_one_tokens(swept):
    cfg, res, err = swept
    df = ParquetLog(cfg.output).read()
    assert (df["status"] == "ok").all(), df[df["status"] != "ok"]["error"].tolist()
    assert set(df["batch_size"]) == {1, 2}
    assert set(df["pair"]) == {"tiny", "tiny@B2"}
    # greedy: every config gives each question's turn the same tokens alone and in a batch
    key = ["policy_spec", "gamma", "question_id", "turn", "ar_timing"]
    one = df[df["batch_size"] == 1].set_index(key)["token_ids"].map(list)
    two = df[df["batch_size"] == 2].set_index(key)["token_ids"].map(list)
    assert len(two) == len(one) and (two.sort_index() == one.sort_index()).all()
    # the writing question's second turn was batched with the other block's question only where it has one
    assert (df[(df["batch_size"] == 2) & (df["policy"] == "tetris")]["accept_lengths"].map(len) > 0).all()


@pytestmark_swept
def test_summary_compares_with_ar_at_the_same_batch_size(swept):
    cfg, res, err = swept
    df = ParquetLog(cfg.output).read()
    s = metrics.config_summary(df[df["status"] == "ok"])
    for pair in ("tiny", "tiny@B2"):
        specs = set(s[s["pair"] == pair]["policy_spec"])
        assert {"ar", "fixed", "tetris"} <= specs
        assert s[(s["pair"] == pair) & (s["policy"] != "ar")]["speedup"].notna().all()
    floor = metrics.noise_floor(df)
    assert set(floor["pair"]) == {"tiny", "tiny@B2"}


@pytestmark_swept
def test_mlflow_has_runs_per_batch_size(swept):
    cfg, res, err = swept
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=cfg.tracking_uri)
    exp = c.get_experiment_by_name(cfg.experiment_name)
    runs = c.search_runs([exp.experiment_id], max_results=1000)
    pairs = {r.data.tags.get("pair") for r in runs if "pair" in r.data.tags}
    assert {"tiny", "tiny@B2"} <= pairs


@pytestmark_swept
def test_batch_table_has_a_row_per_batch_size(swept):
    from jobs.report.batches import batch_table_md, batches, by_batch_size

    cfg, res, err = swept
    df = ParquetLog(cfg.output).read()
    b = batches(df)
    two = b[(b["batch_size"] == 2) & (b["policy"] == "ar")]
    assert set(two["rows"]) <= {1, 2} and (two["rows"] == 2).any()       # blocks of 2 (a lone second turn: 1)
    t = by_batch_size(df)
    assert list(t["batch_size"]) == [1, 2] and t["best_speedup"].notna().all()
    assert (t["best_speedup_lo"] <= t["best_speedup"]).all() and (t["best_speedup"] <= t["best_speedup_hi"]).all()
    md = batch_table_md(t)
    assert md.count("\n| tiny |") == 2 and "speculation" in md


@pytestmark_swept
def test_report_md_has_the_batch_size_section(swept):
    cfg, res, err = swept
    text = (Path(cfg.output) / "report.md").read_text()
    assert "## By batch size" in text and "| tiny | 2 |" in text


def test_one_batch_gives_a_ratio_without_an_interval():
    """A batch size measured on one batch only: its speedup is shown, but no interval and no verdict (a bootstrap
    over one batch would give a zero-width interval)."""
    import pandas as pd

    from jobs.report.batches import batch_table_md, by_batch_size

    rows = [{"status": "ok", "ar_timing": timing, "pair": "p@B4", "batch_size": 4, "accept_lengths": [2, 2],
             "policy": pol, "policy_spec": pol, "gamma": g, "task_key": "k", "turn": 0, "repeat": 0,
             "new_tokens": 4, "wall_time": t}
            for pol, g, timing, t in (("ar", 0, "first", 2.0), ("fixed", 3, "", 1.6)) for _ in range(4)]
    t = by_batch_size(pd.DataFrame(rows))
    assert t["batches"].tolist() == [1] and t["best_speedup"].iloc[0] == pytest.approx(2.0 / 1.6)
    assert t["best_speedup_lo"].isna().all() and t["best_speedup_hi"].isna().all()
    md = batch_table_md(t)
    assert "1.25× (1 batch: no interval)" in md and "pays or is unresolved" in md


@pytest.mark.parametrize("intervals, said", [
    ([(1.2, 1.5), (0.8, 0.95)], "stops paying at batch size 4 (best config's interval at or below 1; it paid at "
                                "batch size 1)"),
    ([(0.9, 1.04), (0.8, 0.95)], "does not pay at batch size 4 (best config's interval at or below 1) and was not "
                                 "shown to pay below it"),
    ([(0.8, 0.95), (0.7, 0.9)], "does not pay at batch size 1 (best config's interval at or below 1)"),
    ([(1.2, 1.5), (0.9, 1.1)], "pays or is unresolved at every batch size measured")])
def test_where_speculation_stops_paying_is_said_only_after_it_paid(intervals, said):
    import pandas as pd

    from jobs.report.batches import paying_text

    part = pd.DataFrame([{"batch_size": b, "best_speedup_lo": lo, "best_speedup_hi": hi}
                         for b, (lo, hi) in zip((1, 4), intervals)])
    assert paying_text(part) == said
