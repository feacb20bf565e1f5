"""Acceptance by draft position and the accepted-length histogram: hand-worked counts, the stored tables, the summary
columns, report.md's section and the MLflow metrics ``positions/accept_rate_pos_{i}``."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from actors.loading.schema import to_table
from jobs.report.derived import PositionCounts, position_tables, step_depth
from jobs.report.positions import (BY_POSITION, HISTOGRAM, positions_md, positions_section, rate_columns,
                                   read_positions, with_positions, write_positions)


def _row(policy, gamma, drafted, accepted, k_max, pair="p", batch=1, timing="", qid=1):
    al = [a + 1 for a in accepted]
    return {"status": "ok", "pair": pair, "batch_size": batch, "policy": policy, "policy_spec": policy, "gamma": gamma,
            "ar_timing": timing, "drafted": drafted, "accepted": accepted, "k_max": k_max, "accept_lengths": al,
            "question_id": qid, "turn": 0, "repeat": 0, "new_tokens": sum(al), "wall_time": 1.0,
            "task_key": f"{pair}|{qid}"}


ROWS = [
    # a chain at γ = 3: steps drafting 3, 3, 3 (accepting 3, 1, 0), then a second turn drafting 2 (n-gram short match,
    # both accepted) and a step drafting nothing
    _row("fixed", 3, [3, 3, 3], [3, 1, 0], [3, 3, 3]),
    _row("fixed", 3, [2, 0], [2, 0], [3, 3], qid=2),
    # a tree: 10 and 8 nodes at depth 4; the accepted paths are 2 and 4 deep
    _row("eagle2", 0, [10, 8], [2, 4], [4, 4]),
    # ar (no drafts) and the closing ar control are left out
    _row("ar", 0, [0, 0], [0, 0], [0, 0]),
    _row("ar", 0, [0], [0], [0], timing="last"),
]


def test_step_depth_is_the_chain_length_or_the_tree_depth():
    assert step_depth(3) == 3 and step_depth(3, 5) == 3       # a chain that stopped before its cap
    assert step_depth(10, 4) == 4 and step_depth(0, 4) == 0    # a tree of 10 nodes, 4 deep; nothing drafted


def test_counts_by_position_on_a_hand_worked_chain():
    c = PositionCounts()
    c.add([3, 3, 3], [3, 1, 0], [3, 3, 3])
    c.add([2, 0], [2, 0], [3, 3])
    assert (c.forwards, c.drafts, c.accepted_tokens) == (5, 4, 6)
    assert c.drafts_per_pos == [4, 4, 3]          # every drafting step reaches position 1 and 2; three reach 3
    assert c.accepted_per_pos == [3, 2, 1]        # accepted 3 → positions 1-3; 1 → 1; 0; 2 → 1-2
    assert c.rates() == pytest.approx([3 / 4, 2 / 4, 1 / 3])
    assert c.histogram == {(3, 3): 1, (3, 1): 1, (3, 0): 1, (2, 2): 1}


def test_position_tables_per_config_and_batch_size():
    rows = ROWS + [_row("fixed", 3, [3], [2], [3], pair="p@B4", batch=4)]
    pos, hist = position_tables(pd.DataFrame(rows))
    assert set(pos["policy"]) == {"fixed", "eagle2"}                               # ar has no draft positions
    chain = pos[(pos["policy"] == "fixed") & (pos["batch_size"] == 1)].iloc[0]
    assert list(chain["num_drafts_per_pos"]) == [4, 4, 3] and list(chain["num_accepted_tokens_per_pos"]) == [3, 2, 1]
    assert chain["num_drafts"] == 4 and chain["forwards"] == 5 and chain["num_accepted_tokens"] == 6
    assert [chain[c] for c in ("accept_rate_pos_1", "accept_rate_pos_2", "accept_rate_pos_3")] == \
        pytest.approx([0.75, 0.5, 1 / 3])
    assert math.isnan(chain["accept_rate_pos_4"])                                   # the chain never drafted 4
    tree = pos[pos["policy"] == "eagle2"].iloc[0]
    assert list(tree["accept_rate_pos"]) == pytest.approx([1.0, 1.0, 0.5, 0.5])    # depth, not nodes
    b4 = pos[pos["batch_size"] == 4].iloc[0]
    assert b4["pair"] == "p@B4" and list(b4["accept_rate_pos"]) == pytest.approx([1.0, 1.0, 0.0])
    h = hist[(hist["policy"] == "fixed") & (hist["batch_size"] == 1)]
    assert sorted(zip(h["drafted"], h["accepted"], h["steps"])) == [(2, 2, 1), (3, 0, 1), (3, 1, 1), (3, 3, 1)]
    assert h[h["drafted"] == 3]["share"].tolist() == pytest.approx([1 / 3] * 3)
    assert h[h["drafted"] == 2]["share"].tolist() == [1.0]


def test_no_drafts_gives_empty_tables():
    pos, hist = position_tables(pd.DataFrame([_row("ar", 0, [0], [0], [0])]))
    assert pos.empty and hist.empty and positions_md(pos, hist) == ""


def test_tables_round_trip_through_parquet_and_the_summary(tmp_path):
    df = to_table(ROWS).to_pandas()           # the schema's column types, as a sweep log holds them
    pos, hist = position_tables(df)
    write_positions(pos, hist, tmp_path)
    assert (tmp_path / BY_POSITION).is_file() and (tmp_path / HISTOGRAM).is_file()
    back, hback = read_positions(tmp_path)
    assert list(back["accept_rate_pos"].iloc[0]) == pytest.approx(list(pos["accept_rate_pos"].iloc[0]))
    assert len(hback) == len(hist)
    summary = pd.DataFrame([{"pair": "p", "policy_spec": "fixed", "gamma": 3, "throughput": 10.0},
                            {"pair": "p", "policy_spec": "ar", "gamma": 0, "throughput": 8.0}])
    merged = with_positions(summary, pos)
    assert rate_columns(merged) == ["accept_rate_pos_1", "accept_rate_pos_2", "accept_rate_pos_3", "accept_rate_pos_4"]
    assert merged.loc[0, "accept_rate_pos_1"] == pytest.approx(0.75) and math.isnan(merged.loc[1, "accept_rate_pos_1"])
    md = positions_section(tmp_path, df)
    assert "## Acceptance by draft position" in md and "| p | 1 | fixed | 3 | 4 | 0.75 | 0.50 | 0.33 | – |" in md
    assert "3→0 (33%)" in md and "2→2 (100%)" in md and "![" not in md        # no figure drawn in this folder


def test_figure_is_drawn(tmp_path):
    from jobs.report.figures import acceptance_by_position

    pos, hist = position_tables(pd.DataFrame(ROWS))
    path = acceptance_by_position(pos, hist, tmp_path / "f.png")
    assert path.is_file() and path.stat().st_size > 1000
    assert acceptance_by_position(pos.iloc[0:0], hist, tmp_path / "g.png") is None


def test_mlflow_policy_runs_get_accept_rate_pos_at_each_gamma(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    import pyarrow as pa

    from jobs.mlflow.tracking import SweepTracker
    from jobs.report import metrics
    from tests.mlflow_rows import GAMMAS, client, history, make_cfg, runs_of, scripted_table, tasks_of

    monkeypatch.chdir(tmp_path)
    cfg = make_cfg(tmp_path)
    c = client(cfg)
    tasks = tasks_of(cfg)
    tracker = SweepTracker(c, cfg, tasks)
    tracker.start()
    tables = [scripted_table(t) for t in tasks]
    for t in tables:
        tracker.task_done(t)
    df = pa.concat_tables(tables).to_pandas()
    ok = df[df["status"] == "ok"]
    pos, _ = position_tables(ok)
    summary = with_positions(metrics.config_summary(ok), pos)
    tracker.finish("FINISHED", summary, metrics.speedup_vs_ar(ok), 0)
    fixed = next(r for r in runs_of(c, cfg, "policy") if r.data.tags["policy"] == "fixed")
    points = dict(history(c, fixed, "positions/accept_rate_pos_1"))      # their own chart section
    assert sorted(points) == GAMMAS
    for g in GAMMAS:
        want = pos[(pos["policy"] == "fixed") & (pos["gamma"] == g)]["accept_rate_pos_1"].iloc[0]
        assert points[g] == pytest.approx(want)
    ar = next(r for r in runs_of(c, cfg, "policy") if r.data.tags["policy"] == "ar")
    assert not any("accept_rate_pos" in k for k in ar.data.metrics)


def test_the_oracle_bound_is_not_shown_as_a_config_that_drafts():
    """The bound's hindsight schedule drafts only accepted tokens (α = 1 everywhere): not an acceptance to compare."""
    bound = {**_row("fixed", 0, [2, 1], [2, 1], [2, 1]), "policy": "oracle-bound", "policy_spec": "oracle (bound)"}
    pos, hist = position_tables(pd.DataFrame(ROWS + [bound]))
    assert "oracle (bound)" in set(pos["policy_spec"])                               # kept in the stored table
    md = positions_md(pos, hist)
    assert "| fixed | 3 |" in md and "oracle" not in md
