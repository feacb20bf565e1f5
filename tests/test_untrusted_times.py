"""Refusing to be confidently wrong: when the cost model's measurement is not trusted (or validation finds replayed
times off beyond the machine's noise), replayed times are marked in the Parquet log, left out of the report's and
MLflow's time figures (token and step figures stay), and one line says why and how to re-measure."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jobs.report import metrics
from jobs.report.agreement import mark_untrusted, untrusted_by_validation
from jobs.report.costs import REMEASURE, costs_text, untrusted_pairs, untrusted_text
from jobs.report.derived import trusted_times
from tests.helpers import q_rows


def test_untrusted_rows_give_no_time_figures_but_keep_token_figures():
    rows = q_rows("ar", 0, [10, 10, 10]) + q_rows("fixed", 2, [20, 20, 20], al={q: [3, 3, 3] for q in (1, 2, 3)})
    df = pd.DataFrame(rows)
    df["mode"] = np.where(df["policy"] == "ar", "live", "replay")
    df["time_reliable"] = np.where(df["policy"] == "ar", True, False)
    shown = trusted_times(df)
    assert shown.loc[shown["policy"] == "fixed", "wall_time"].isna().all()
    assert shown.loc[shown["policy"] == "ar", "wall_time"].notna().all()
    s = metrics.config_summary(shown).set_index("policy")
    assert np.isnan(s.loc["fixed", "throughput"]) and s.loc["ar", "throughput"] == pytest.approx(10)
    assert s.loc["fixed", "mean_accepted_length"] == pytest.approx(3.0)          # exact: stays
    sp = metrics.speedup_vs_ar(shown)
    assert sp.empty or sp.loc[sp["policy_spec"] == "fixed", "overall"].isna().all()
    assert metrics.table2_from_summary(s.reset_index()).empty        # no baseline time left: no Table 2 row
    trusted = df.assign(time_reliable=True)
    assert trusted_times(trusted) is trusted                                     # nothing to mask: the same frame


def twins(error: float, ar_spread: float) -> pd.DataFrame:
    """A pair whose replayed configs were validated live: replay predicts ``1 + error`` × the live time; its
    ar ran first and last ``ar_spread`` apart."""
    base = dict(pair="p", policy_spec="fixed", gamma=2, repeat=0, turn=0, status="ok", new_tokens=10,
                accept_lengths=[2] * 5, drafted=[2] * 5, accepted=[1] * 5, k_max=[2] * 5, token_ids=[1] * 10,
                policy="fixed", config_key="p|fixed|2", ar_timing="")
    rows = []
    for q in range(8):
        rows.append({**base, "question_id": q, "mode": "live", "wall_time": 1.0})
        rows.append({**base, "question_id": q, "mode": "replay", "wall_time": 1.0 + error})
        for timing, t in (("first", 1.0), ("last", 1.0 + ar_spread)):
            rows.append({**base, "question_id": q, "mode": "live", "policy": "ar", "policy_spec": "ar", "gamma": 0,
                         "config_key": "p|ar|0", "ar_timing": timing, "wall_time": t})
    return pd.DataFrame(rows)


def test_validation_flags_replayed_times_off_beyond_the_machines_noise():
    why = untrusted_by_validation(twins(0.30, 0.05))
    assert list(why) == ["p"] and "30%" in why["p"][0] and "limit 10%" in why["p"][0]
    assert untrusted_by_validation(twins(0.30, 0.40)) == {}      # the machine's own noise is larger
    assert untrusted_by_validation(twins(0.05, 0.02)) == {}      # within 10 %
    marked = mark_untrusted(twins(0.30, 0.05), why)
    assert (marked.loc[marked["mode"] == "replay", "time_reliable"] == False).all()   # noqa: E712
    assert marked.loc[marked["mode"] == "live", "time_reliable"].isna().all()


def model(reliable: bool) -> dict:
    from policies.costs import CostModel

    m = CostModel.measured(0.01, {1: 0.05, 2: 0.08, 5: 0.09})
    m.trust = {"reliable": reliable, "reasons": [] if reliable else ["steps scatter 40% around the fit"]}
    return m.to_dict()


def test_cost_section_and_the_one_line_per_untrusted_pair():
    infos = {"good": [{"actor": "a", "costs": model(True)}], "bad": [{"actor": "b", "costs": model(False)}]}
    text = costs_text(infos)
    assert "Φ(1)" in text and "Φ(4)" in text and "0.2" in text       # c = 0.01 / 0.05
    assert "NO: steps scatter 40% around the fit" in text
    reasons = untrusted_pairs(infos)
    assert reasons == {"bad": ["steps scatter 40% around the fit"]}
    line = untrusted_text(reasons)
    assert line.count("\n") == 0 and line.startswith("UNRELIABLE: replayed times of bad are not shown")
    assert REMEASURE in line and untrusted_text({}) == ""


@pytest.fixture(scope="module")
def untrusted_sweep(tmp_path_factory):
    """A real replay sweep (tiny pair, in-process) whose cost measurement is judged untrusted."""
    pytest.importorskip("mlflow")
    import actors.costs.calibrate as cal
    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.sweep.driver import run_sweep

    tmp = tmp_path_factory.mktemp("untrusted")
    target, draft = save_tiny_pair(tmp / "pair")
    cfg = parse_config({"name": "untrusted", "output": str(tmp / "out"), "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
                        "pairs": [{"name": "tiny", "target": target, "draft": draft}],
                        "dataset": {"source": "sample", "question_ids": [9017]},
                        "generation": {"max_new_tokens": 8}, "policies": ["fixed"], "gammas": [1, 3],
                        "warmup": 0, "mode": "replay", "validate": 0.0,
                        "calibrate": {"context": 16, "max_tokens": 4, "repeats": 1}})
    mp = pytest.MonkeyPatch()
    mp.setattr(cal, "judge", lambda m, own_load, sibling_load=0.0: {"reliable": False, "reasons": ["load 3.0 besides ours"]})
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        res = run_sweep(cfg, backend="inprocess")
    finally:
        os.chdir(cwd)
        mp.undo()
    return cfg, res


def test_an_untrusted_sweep_marks_its_replayed_times_everywhere(untrusted_sweep, capsys):
    from jobs.cli import main
    from jobs.store.parquet_log import ParquetLog
    from tests.mlflow_rows import client, runs_of

    cfg, res = untrusted_sweep
    assert res["failed_rows"] == 0
    df = ParquetLog(cfg.output).read()
    assert (df.loc[df["mode"] == "replay", "time_reliable"] == False).all()      # noqa: E712  the log
    assert (df.loc[df["mode"] == "live", "time_reliable"] == True).all()        # noqa: E712
    summary = pd.read_csv(Path(cfg.output) / "summary.csv")
    fixed = summary[summary["policy"] == "fixed"]
    assert fixed["throughput"].isna().all() and fixed["mean_accepted_length"].notna().all()
    runs = {(r.data.tags["policy_spec"], r.data.tags["mode"]): r for r in runs_of(client(cfg), cfg, "policy")}
    rep = runs[("fixed", "replay")]
    assert rep.data.tags.get("times") == "unreliable"                             # MLflow
    assert not any(k.startswith("throughput") or k.startswith("speedup") for k in rep.data.metrics)
    assert any(k.startswith("mean_accepted_length") for k in rep.data.metrics)
    assert "times" not in runs[("ar", "live")].data.tags
    capsys.readouterr()
    assert main(["report", cfg.output]) == 0                                      # the report
    out = capsys.readouterr().out
    assert "UNRELIABLE: replayed times of tiny are not shown (load 3.0 besides ours)" in out
    assert "cost model per actor" in out and "NO: load 3.0 besides ours" in out
    infos = json.loads((Path(cfg.output) / "actors.json").read_text())
    assert infos["tiny"][0]["costs"]["trust"]["reliable"] is False


def test_bias_corrected_speedup_carries_the_bias_interval():
    from jobs.report.agreement import bias_corrected, corrected_text, pair_bias

    df = twins(0.20, 0.05)                                   # replay predicts 20 % slower than the machine ran
    bias = pair_bias(df)
    assert bias.loc[0, "bias_median"] == pytest.approx(0.20) and bias.loc[0, "generations"] == 8
    speed = pd.DataFrame([{"pair": "p", "policy_spec": "fixed", "gamma": 2, "overall": 1.5, "overall_lo": 1.4,
                           "overall_hi": 1.6}])
    t = bias_corrected(speed, df, bias)
    assert t.loc[0, "corrected"] == pytest.approx(1.5 * 1.2)
    assert (t.loc[0, "corrected_lo"], t.loc[0, "corrected_hi"]) == pytest.approx((1.4 * 1.2, 1.6 * 1.2))
    assert "bias-corrected" in corrected_text(t) and "+20.0%" in corrected_text(t)
    live_only = df[df["mode"] == "live"]                     # nothing replayed: nothing to correct
    assert bias_corrected(speed, live_only, bias).empty


def test_judge_false_keeps_validation_from_hiding_replayed_times(tmp_path):
    from jobs.report.costs import untrusted_reasons

    df = twins(0.30, 0.05)                                   # validation alone would flag pair p
    assert list(untrusted_reasons(str(tmp_path), df)) == ["p"]          # no state.json: judged
    (tmp_path / "state.json").write_text(json.dumps({"config": {"calibrate": {"judge": False}}}))
    assert untrusted_reasons(str(tmp_path), df) == {}
