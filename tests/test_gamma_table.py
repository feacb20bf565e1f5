"""The (batch, context) → γ table (jobs/report/gamma_table.py): hand-worked formula cases and a tiny sweep."""
import contextlib
import io

import pandas as pd
import pytest

from jobs.report.gamma_table import (BUCKETS, acceptance, gamma_section, speedups, step_time, survival,
                                     tokens_per_step)
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


def test_context_terms_scale_per_row_from_the_batch_surface_context():
    batch = {4: {"knots": [1, 2, 3], "values": [0.2, 0.22, 0.24], "draft": 0.03}}
    m = model(batch=batch, per_kctx=0.05, per_token_kctx=0.01, d4=0.002, context=256)
    # B = 4, K = 2, C = 1256 (ΔC = 1000): 2·(0.03 + 4·0.002) + T_4(3) + 4·(0.05 + 0.01·3) + o
    assert step_time(m, 4, 2, 1256) == pytest.approx(2 * (0.03 + 4 * 0.002) + 0.24 + 4 * (0.05 + 0.03))
    assert step_time(m, 4, 0, 256) == pytest.approx(0.2)                  # at C₀ the surface alone
    # a longer context makes every step dearer, the verify-heavy K most: the best K never grows with context here
    s = [0.7, 0.5]
    best = [max(speedups(m, s, 4, c), key=lambda o: o[3])[0] for _, c in BUCKETS]
    assert best == sorted(best, reverse=True)


def test_acceptance_reads_fixed_rows_of_every_batch_size():
    df = pd.DataFrame({"pair": ["p", "p@B2", "p"], "policy": ["fixed", "fixed", "gammatune"],
                       "policy_spec": ["fixed", "fixed", "gammatune"], "gamma": [2, 2, 2], "status": ["ok"] * 3,
                       "batch_size": [1, 2, 1], "drafted": [[2, 2], [2, 2], [2]], "accepted": [[2, 0], [1, 1], [0]],
                       "k_max": [[2, 2], [2, 2], [2]]})
    # position 1: accepted in 3 of 4 steps; position 2: both drafted in 4, both accepted in 1
    assert acceptance(df) == {"p": [0.75, 0.25]}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from actors.tiny_pair import save_tiny_pair
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
    from pathlib import Path

    rows = ParquetLog(swept).read()
    text = gamma_section(swept, rows)
    t = pd.read_csv(Path(swept) / "gamma_table.csv")
    assert set(t["batch_size"]) == {1, 2} and set(t["bucket"]) == {"<= 512", "<= 2048", "<= 8192"}
    assert (t.groupby(["batch_size", "bucket"])["best"].sum() == 1).all()        # one best K per cell
    assert (t[t["K"] == 0]["speedup"] == 1.0).all()
    assert "Best K by batch size and context" in text and "Checked against the live rows" in text
    assert "| tiny | 1 | 1 |" in text                                             # fixed γ=1 ran live at B = 1
    roof = gamma_section(swept, rows, "roofline:h100:int4")
    assert "(what-if (roofline h100, int4 target))" in roof and "Checked against" not in roof
    assert (Path(swept) / "gamma_table-roofline-h100-int4.csv").exists()
    report = (Path(swept) / "report.md").read_text()
    assert "Best K by batch size and context" in report and "Regret against the oracle bound" in report


def test_report_costs_refuses_anything_but_a_roofline(tmp_path, capsys):
    from jobs.cli import main

    assert main(["report", str(tmp_path), "--costs", "costs.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "roofline:GPU" in err[0]
