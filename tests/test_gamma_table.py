"""The (batch, context) → γ table (jobs/report/gamma_table.py): hand-worked formula cases and a tiny sweep."""
import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jobs.report.gamma_model import (BUCKETS, acceptance, acceptance_samples, catchup_time, expected_catchup,
                                     speedups, step_time, survival, survival_samples, tokens_per_step)
from jobs.report.gamma_table import full_phase, full_phase_totals, gamma_section, gamma_table, tally
from policies.costs import CostModel


def model(batch=None, per_kctx=0.0, per_token_kctx=0.0, d4=0.0, context=0):
    draft = {"per_step": 0.0, "per_proposal": 0.01, "per_catchup": 0.0, "per_catchup_token": 0.0,
             "per_proposal_kctx": d4}
    return CostModel(draft=draft, table={"knots": [1, 2, 4], "values": [0.10, 0.11, 0.13], "per_kctx": per_kctx,
                                         "per_token_kctx": per_token_kctx}, overhead=0.0, context=context,
                     batch=batch or {})


def test_tokens_per_step_is_leviathan_under_iid_acceptance():
    alpha = 0.5
    s = [alpha ** i for i in range(1, 5)]
    for k in range(5):
        assert tokens_per_step(s, k) == pytest.approx((1 - alpha ** (k + 1)) / (1 - alpha))
    assert tokens_per_step([0.8, 0.4], 2) == pytest.approx(2.2)          # 1 + 0.8 + 0.4: the product form


def test_survival_pools_counts_and_never_rises():
    assert survival([8, 6, 7, 0], [10, 10, 10, 0]) == [0.8, 0.6, 0.6]    # 0.7 > 0.6 capped; no drafts at 4: stop


def test_step_time_and_best_k_by_hand():
    m = model()
    assert step_time(m, 1, 0, 0) == pytest.approx(0.10)
    assert step_time(m, 1, 2, 0) == pytest.approx(0.02 + 0.12)           # 2 drafts + T(3), halfway between knots 2 and 4
    s = [0.9, 0.8]
    opts = speedups(m, s, 1, 0)
    # K=1: 1.9 tokens in 0.01 + 0.11 s vs 1 token in 0.10 s → 0.10 · 1.9 / 0.12
    assert opts[1][3] == pytest.approx(0.10 * 1.9 / 0.12)
    assert opts[2][3] == pytest.approx(0.10 * 2.7 / 0.14)
    assert max(opts, key=lambda o: o[3])[0] == 2


def test_a_fully_accepted_row_makes_the_next_steps_draft_catch_up_on_one_token():
    m = model()
    m.draft.update(per_catchup=0.004, per_catchup_token=0.001)           # d₂, d₃
    assert catchup_time(m, 0, 0) == 0.0 and catchup_time(m, 50, 0) == pytest.approx(0.004 + 0.050)
    # one row: S_K of its steps catch up on one token
    assert expected_catchup(m, 1, 0.5, 0) == pytest.approx(0.5 * 0.005)
    # three rows, each fully accepted with probability 0.5: the level pays d₂ unless no row was (1 − 0.5³), d₃ per row
    assert expected_catchup(m, 3, 0.5, 0) == pytest.approx((1 - 0.125) * 0.004 + 3 * 0.5 * 0.001)
    assert expected_catchup(m, 3, 0.0, 0) == 0.0
    # the step of K = 2 with S = [0.9, 0.8]: 2 drafts + T(3) + 0.8 of a catch-up
    assert speedups(m, [0.9, 0.8], 1, 0)[2][2] == pytest.approx(0.02 + 0.12 + 0.8 * 0.005)


def test_context_terms_scale_per_row_from_the_batch_surface_context():
    batch = {4: {"knots": [1, 2, 3], "values": [0.2, 0.22, 0.24], "draft": 0.03}}
    m = model(batch=batch, per_kctx=0.05, per_token_kctx=0.01, d4=0.002, context=256)
    # B = 4, K = 2, C = 1256 (ΔC = 1000): 2·(0.03 + 4·0.002) + T_4(3) + 4·(0.05 + 0.01·3) + o
    assert step_time(m, 4, 2, 1256) == pytest.approx(2 * (0.03 + 4 * 0.002) + 0.24 + 4 * (0.05 + 0.03))
    assert step_time(m, 4, 0, 256) == pytest.approx(0.2)                  # at C₀ the surface alone
    # a context term per verified token makes a wide verify dearer the longer the context: the best K falls
    batch = {4: {"knots": [1, 2, 3, 4, 5], "values": [0.2, 0.21, 0.22, 0.23, 0.24], "draft": 0.01}}
    m = model(batch=batch, per_token_kctx=0.01, context=256)
    best = [max(speedups(m, [0.9, 0.8, 0.7, 0.6], 4, c), key=lambda o: o[3])[0] for _, c in BUCKETS]
    assert best == [4, 4, 2]


def test_the_full_phase_ends_with_the_first_row_and_counts_every_rows_tokens_until_then():
    # one static batch of 3 rows: 2, 4 and 3 steps; the first row ends 0.5 s after a 0.1 s prefill
    rows = pd.DataFrame({"task_key": ["t"] * 3, "turn": [0] * 3, "repeat": [0] * 3,
                         "accept_lengths": [[3, 1], [1, 1, 2, 1], [2, 2, 1]], "wall_time": [0.6, 1.1, 0.9],
                         "prefill_time": [0.1] * 3})
    assert full_phase(rows) == (3 + 1 + 1 + 1 + 2 + 2, pytest.approx(0.5))
    other = rows.assign(task_key="u", accept_lengths=[[1] * 5, [1] * 6, [1] * 5], wall_time=[0.7, 0.8, 0.7])
    tok, t = full_phase_totals(pd.concat([rows, other]), [("u", 0), ("t", 0), ("v", 0)])
    assert list(tok) == [15, 10, 0] and t == pytest.approx([0.6, 0.5, 0.0])       # "v" did not run: 0


def test_tally_counts_only_rows_with_a_verdict():
    assert tally([True, False, None, True]) == "2 of 3 rows within the live noise floor."
    assert tally(pd.Series([None, None], dtype=object)) == "0 of 0 rows within the live noise floor."


def test_acceptance_reads_fixed_rows_of_every_batch_size():
    df = pd.DataFrame({"pair": ["p", "p@B2", "p"], "policy": ["fixed", "fixed", "gammatune"],
                       "policy_spec": ["fixed", "fixed", "gammatune"], "gamma": [2, 2, 2], "status": ["ok"] * 3,
                       "batch_size": [1, 2, 1], "drafted": [[2, 2], [2, 2], [2]], "accepted": [[2, 0], [1, 1], [0]],
                       "k_max": [[2, 2], [2, 2], [2]]})
    # position 1: accepted in 3 of 4 steps; position 2: both drafted in 4, both accepted in 1
    assert acceptance(df) == {"p": [0.75, 0.25]}


def test_resampled_survival_sums_the_drawn_questions_counts():
    accepted = np.array([[4.0, 2.0], [1.0, 1.0]])          # question 0: 4 of 5 at position 1, 2 of 4 at 2
    drafted = np.array([[5.0, 4.0], [5.0, 0.0]])           # question 1 never drafted position 2
    w = np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 2.0]])     # both once; question 0 twice; question 1 twice
    out = survival_samples(accepted, drafted, w)
    assert out[0] == pytest.approx(survival([5, 3], [10, 4]))          # the pooled rule: [0.5, 0.5] (0.75 capped)
    assert out[1] == pytest.approx([0.8, 0.5])
    assert out[2] == pytest.approx([0.2, 0.2])                          # no drafts at 2: the previous rate kept


def rows_of(qid, drafted, accepted, pair="p"):
    return {"pair": pair, "policy": "fixed", "policy_spec": "fixed", "gamma": 2, "status": "ok", "batch_size": 1,
            "question_id": qid, "drafted": drafted, "accepted": accepted, "k_max": [2] * len(drafted)}


def test_the_table_carries_an_interval_over_questions_and_how_often_each_k_wins():
    # question 1 accepts everything, question 2 nothing: which K is best depends on which questions are drawn
    df = pd.DataFrame([rows_of(1, [2, 2], [2, 2]), rows_of(2, [2, 2], [0, 0]), rows_of(3, [2, 2], [1, 0])])
    samples = acceptance_samples(df, resamples=400, seed=1)["p"]
    assert samples.shape == (401, 2) and list(samples[0]) == pytest.approx(acceptance(df)["p"])
    t = gamma_table({"p": model()}, {"p": samples}, [1], "m")
    t = t[t["bucket"] == "<= 512"]
    assert t["best_share"].sum() == pytest.approx(1.0) and 0 < t["best_share"].max() < 1      # the choice unsettled
    k2 = t[t["K"] == 2].iloc[0]
    assert k2.speedup_lo < k2.speedup < k2.speedup_hi
    point = speedups(model(), list(samples[0]), 1, 256)
    assert list(t["speedup"]) == pytest.approx([o[3] for o in point])
    one = acceptance_samples(df[df["question_id"] == 1])["p"]           # one question: no interval, no share
    single = gamma_table({"p": model()}, {"p": one}, [1], "m")
    assert len(one) == 1 and single[["speedup_lo", "speedup_hi", "best_share"]].isna().all().all()


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.sweep.driver import run_sweep
    from tests.sweep_process import tiny_raw

    tmp = tmp_path_factory.mktemp("gsweep")
    target, draft = save_tiny_pair(tmp / "pair")
    raw = tiny_raw(tmp, target, draft, dataset={"source": "sample", "question_ids": [9017, 9019, 9021, 9023]},
                   gammas=[1, 2], mode="replay", validate=1.0, batch_sizes=[1, 2])
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(parse_config(raw), backend="inprocess", log_mlflow=False)
    assert res["failed_rows"] == 0
    return res["output"]


def test_tiny_sweep_table_csv_validation_and_roofline_what_if(swept):
    from jobs.store.parquet_log import ParquetLog

    rows = ParquetLog(swept).read()
    text = gamma_section(swept, rows)
    t = pd.read_csv(Path(swept) / "gamma_table.csv")
    assert set(t["batch_size"]) == {1, 2} and set(t["bucket"]) == {"<= 512", "<= 2048", "<= 8192"}
    assert (t.groupby(["batch_size", "bucket"])["best"].sum() == 1).all()        # one best K per cell
    assert (t[t["K"] == 0]["speedup"] == 1.0).all() and t["speedup"].notna().all()
    assert "Best K by batch size and context" in text and "Checked against the live rows" in text
    assert "| tiny | 1 | 1 |" in text                                             # fixed γ=1 ran live at B = 1
    assert "whole static batches" in text and "refitted per batch size on its live steps" in text
    assert re.search(r"^\| tiny \| 1 \| 1 \| \d+ \| \d+\.\d\d× \[.*\] \| \d+\.\d\d×.* \| (yes|no|–) \|$", text, re.M)
    assert "while every row runs" in text
    assert "The checked configs ran 1 repeat(s), fewer than 5" in text                 # the tiny sweep runs one
    assert len(re.findall(r"^\d+ of \d+ rows within the live noise floor\.$", text, re.M)) == 1      # the while-full tally
    assert re.search(r"^\d+ of \d+ rows within the live noise floor\. The table's prediction", text, re.M)
    assert re.search(r"^\| tiny \| 2 \| 1 \| \d+ \| \d+\.\d\d× \[\d+\.\d\d, \d+\.\d\d\] \| \d+\.\d\d×( \[.*\])? \| .* \| (yes|no|–) \|$",
                     text, re.M)                                                  # the prediction's interval (4 questions)
    assert t[["speedup_lo", "speedup_hi", "best_share"]].notna().all().all()
    assert (t["speedup_lo"] <= t["speedup"] + 1e-12).all() and (t["speedup"] <= t["speedup_hi"] + 1e-12).all()
    assert (t.groupby(["batch_size", "bucket"])["best_share"].sum() - 1).abs().max() < 1e-9
    roof = gamma_section(swept, rows, "roofline:h100:int4")
    assert "(what-if (roofline h100, int4 target))" in roof and "Checked against" not in roof
    assert (Path(swept) / "gamma_table-roofline-h100-int4.csv").exists()
    report = (Path(swept) / "report.md").read_text()
    assert "Best K by batch size and context" in report and "Regret against the oracle bound" in report


def stored_model(folder):
    from jobs.report.costs import pair_cost_models, read_actor_infos

    return pair_cost_models(read_actor_infos(folder))["tiny"]


def test_replay_sweep_stores_the_batch_surface_it_measured(swept):
    import json

    m = stored_model(swept)
    assert set(m.batch) == {2}                      # measured mid-sweep (replay at B = 2), stored at the end; B = 1
    fitted = json.loads((Path(swept) / "traces" / "cost_models.json").read_text())["tiny"][0]   # is the single-row model
    assert set(fitted["batch"]) == {"2"}            # `specsweep replay` reads the same surface


def test_live_batch_sweep_prices_b2_on_the_measured_surface(tmp_path):
    """A live-only batch sweep measures no batch surface while it runs: it is measured after the tasks and stored,
    and the γ-table's B = 2 steps are priced on it refitted on the sweep's live B = 2 steps (not on one row of 2·L
    tokens)."""

    from actors.loading.tiny_pair import save_tiny_pair
    from jobs.config import parse_config
    from jobs.report.live_costs import live_segments, refit
    from jobs.store.parquet_log import ParquetLog
    from jobs.sweep.driver import run_sweep
    from tests.sweep_process import tiny_raw

    target, draft = save_tiny_pair(tmp_path / "pair")
    raw = tiny_raw(tmp_path, target, draft, gammas=[1, 2], batch_sizes=[1, 2])
    with contextlib.redirect_stderr(io.StringIO()):
        res = run_sweep(parse_config(raw), backend="inprocess", log_mlflow=False)
    assert res["failed_rows"] == 0
    m = stored_model(res["output"])
    assert set(m.batch) == {2}
    rows = ParquetLog(res["output"]).read()
    text = gamma_section(res["output"], rows)
    t = pd.read_csv(Path(res["output"]) / "gamma_table.csv")
    b2 = t[(t["batch_size"] == 2) & (t["bucket"] == "<= 512")].set_index("K")
    s = acceptance(rows)["tiny"]
    live = refit(m, live_segments(rows))           # the stored model, each size refitted on the sweep's live steps
    assert live.batch[2]["values"] != m.as_measured().batch[2]["values"]
    for k in b2.index:
        catch = expected_catchup(live, 2, s[k - 1], 256) if k else 0.0
        assert b2.loc[k, "step_ms"] == pytest.approx((step_time(live, 2, int(k), 256) + catch) * 1e3)
    surface = live.batch[2]                               # the surface's own width-1 time, not the one-row fallback
    assert live.batch_verify(2, 1) == pytest.approx(max(0.0, surface["values"][surface["knots"].index(1)]))
    assert "| tiny | 2 | <= 512 |" in text


def test_report_costs_refuses_anything_but_a_roofline(tmp_path, capsys):
    from jobs.cli import main

    assert main(["report", str(tmp_path), "--costs", "costs.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "roofline:GPU" in err[0]


def test_bench_gamma_components_splits_each_live_step_beside_the_model(swept, capsys):
    from bench.gamma_components import components, main
    from jobs.store.parquet_log import ParquetLog

    t = components(swept, resamples=200)
    assert {"ar", "fixed"} <= set(t["policy"]) and set(t["B"]) == {1, 2}
    parts = ["draft_ms", "verify_ms", "rest_ms"]
    assert t[parts].sum(axis=1).to_numpy() == pytest.approx(t["step_ms"].to_numpy())
    assert t[["model_" + p for p in parts]].sum(axis=1).to_numpy() == pytest.approx(t["model_step_ms"].to_numpy())
    assert (t[t["policy"] == "ar"]["draft_ms"] < 0.01).all()               # ar drafts nothing
    assert (t["refit_step_ms"] > 0).all() and t["refit_error"].notna().all()
    # B = 1 ar: every question is a batch of one, all its steps
    rows = ParquetLog(swept).read()
    ar = rows[(rows["policy"] == "ar") & (rows["batch_size"].fillna(1) == 1) & (rows["ar_timing"] == "first")
              & (rows["status"] == "ok") & (rows["mode"] == "live")]
    want = (ar["wall_time"] - ar["prefill_time"]).sum() / ar["decoding_steps"].sum() * 1e3
    assert t[(t["policy"] == "ar") & (t["B"] == 1)].iloc[0]["step_ms"] == pytest.approx(want)
    m = stored_model(swept).as_measured()
    want = sum(m.batch_step_parts(1, 0, len(r.prompt_ids) + i)[1] for r in ar.itertuples()
               for i in range(r.decoding_steps)) / ar["decoding_steps"].sum() * 1e3
    assert t[(t["policy"] == "ar") & (t["B"] == 1)].iloc[0]["model_verify_ms"] == pytest.approx(want)
    assert main([str(swept)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 + len(t) and len({line.count("|") for line in lines}) == 1     # one cell per column
    assert main([str(Path(swept) / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench.gamma_components:")
