"""Suffix decoding in sweeps: request order is recorded and replay reproduces it exactly (``actors/pair_actor.py``,
"Request order"; ``actors/drafter_kinds/suffix.py``'s rollouts). A sweep asks the same two questions twice (ids
1–2, then 3–4 with the same turns): the second pass drafts from the first pass's responses, and every replayed row
equals its live twin step for step."""
import contextlib
import io
import json
from pathlib import Path

import pytest

from actors.tracing.replay import replay_batch
from actors.rollouts import record_trace
from actors.drafting.suffix_drafter import SuffixDrafter
from actors.core.engine import SpecEngine
from actors.loading.tiny_pair import llama, save_tiny_pair, sharpen
from jobs.config import parse_config
from jobs.store.parquet_log import ParquetLog
from jobs.sweep.driver import run_sweep
from actors.tracing.traces import read_traces
from policies.registry import build

TURNS = [["Rewrite this line so it reads better: the cat sat on the mat and the cat sat."],
         ["Edit the code: def add(a, b): return a + b", "Now rename add to plus."]]
STEPS = ("accept_lengths", "drafted", "accepted", "k_max")


def test_a_suffix_rollout_ends_where_the_drafter_has_nothing_more():
    target = sharpen(llama(vocab=50, seed=50))
    drafter = SuffixDrafter()
    engine = SpecEngine(target, drafter)
    prompt = [5, 9, 5, 9, 5, 9, 11, 12, 13, 5, 9]
    drafter.remember([9, 11, 12, 13, 14, 15])
    trace = record_trace(engine, prompt, max_new_tokens=12, max_draft=6)
    assert trace.meta["ends_short"] and any(0 < len(r) < 6 for r in trace.rollouts)
    drafter.hold(True)
    live = engine.generate(prompt, build("fixed", 6), max_new_tokens=12)
    rep = replay_batch([trace], [build("fixed", 6)])[0]
    assert rep.token_ids == live.token_ids and rep.drafted == live.drafted and rep.accepted == live.accepted
    assert sum(live.drafted) > 0                                  # not vacuous: it drafted


@pytest.fixture(scope="module")         # a whole (small) sweep in process: ~2 s on a quiet 2-core CPU
def swept(tmp_path_factory):
    return _sweep(tmp_path_factory.mktemp("sfx"))


def _sweep(tmp):
    target, _ = save_tiny_pair(tmp / "pair")
    qfile = tmp / "questions.jsonl"
    lines = [{"question_id": i + 1 + 2 * p, "category": "editing", "turns": t}
             for p in range(2) for i, t in enumerate(TURNS)]
    qfile.write_text("".join(json.dumps(x) + "\n" for x in lines))
    raw = {"name": "sfx", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
           "pairs": [{"name": "tiny", "target": target, "draft": "suffix"}],
           "dataset": {"source": str(qfile)}, "generation": {"max_new_tokens": 12},
           "policies": ["fixed", "gammatune"], "gammas": [2, 6], "warmup": 0, "mode": "both",
           "calibrate": {"context": 16, "max_tokens": 4, "repeats": 2, "judge": False}}
    cfg = parse_config(raw)
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    return cfg, res, ParquetLog(cfg.output).read()


def test_two_passes_replay_equal_live_step_for_step(swept):
    cfg, res, df = swept
    assert res["failed_rows"] == 0, df[df["status"] != "ok"]["error"].tolist()
    part = df[(df["policy"] != "ar") & (df["policy"] != "oracle-bound")]
    live, rep = part[part["mode"] == "live"], part[part["mode"] == "replay"]
    keys = ["config_key", "question_id", "turn"]
    twins = live.merge(rep, on=keys, suffixes=("_live", "_replay"), validate="one_to_one")
    assert len(twins) == len(live) == 4 * 3 * 2                  # 4 configs × 3 turns × 2 passes
    for _, r in twins.iterrows():
        assert list(r["token_ids_replay"]) == list(r["token_ids_live"]), (r["config_key"], r["question_id"])
        for c in STEPS:
            assert list(r[f"{c}_replay"]) == list(r[f"{c}_live"]), (c, r["config_key"], r["question_id"], r["turn"])
    # the second pass drafts from the first pass's answers: more tokens per step
    first = live[live["question_id"] <= 2]["accept_lengths"].map(lambda a: sum(a) / len(a)).mean()
    second = live[live["question_id"] > 2]["accept_lengths"].map(lambda a: sum(a) / len(a)).mean()
    assert second > first


def test_traces_record_the_request_order(swept):
    cfg, _, _ = swept
    traces = read_traces(Path(cfg.output) / "traces")
    by_q = {t.meta["question_id"]: t.meta for t in traces}
    assert by_q[1]["memory"] == [] and by_q[1]["request"] == 0
    assert by_q[3]["memory"] == [1, 2] and by_q[4]["memory"] == [1, 2, 3]
    assert all(m["ends_short"] for m in by_q.values())


@pytest.mark.slow          # a second in-process sweep (~10 s per case); the fast tier keeps the two-pass replay above
@pytest.mark.parametrize("primed", [True, False])
def test_a_resumed_sweep_drafts_from_the_memory_the_interrupted_one_had(swept, tmp_path, monkeypatch, primed):
    """The last task's log file removed (as if the sweep stopped before it finished), the sweep run again: the
    resumed actor learns the finished tasks' answers first, so the task's rows (every one but the oracle bound, which
    reads the measured cost model) equal the uninterrupted run's; with nothing learnt (``primed`` False: the old behaviour) they differ — the check can fail."""
    import jobs.sweep.driver as driver

    cfg, _, df = _sweep(tmp_path)
    last = df[df["ar_timing"] == "first"].sort_values("tstamp")["task_key"].iloc[-1]
    log = ParquetLog(cfg.output)
    (log.dir / log.file_name(last)).unlink()
    if not primed:
        monkeypatch.setattr(driver, "learnt_before", lambda df: {})
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(cfg, backend="inprocess", log_mlflow=False)
    assert res["failed_rows"] == 0
    new = ParquetLog(cfg.output).read()
    keys = ["config_key", "question_id", "turn", "mode"]
    cols = ["token_ids", "accept_lengths", "drafted"]
    mine = lambda d: d[(d["task_key"] == last) & (d["ar_timing"] != "last") & (d["policy"] != "oracle-bound")]
    a, b = mine(df).sort_values(keys), mine(new).sort_values(keys)           # the bound reads measured costs
    assert len(a) == len(b) > 0
    same = all(list(x) == list(y) for c in cols for x, y in zip(a[c], b[c]))
    assert same == primed
