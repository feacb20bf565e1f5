"""The GT paper's table layouts (``jobs/report/gt_tables.py``) on synthetic rows: Table 5 (EAGLE-2 and GT(d) per
batch size with Δ), Table 9 (B = 2, 7 tokens: fixed / Tetris / GT with Time and Δ), Table 4 (a c sweep); and the
shipped ``jobs/configs/gt_paper.yaml`` that produces them."""
from __future__ import annotations

import pandas as pd
import pytest

from jobs.report.gt_tables import c_of, config_figures, gt_paper_text, table4, table5, table9

E2 = "eagle2:depth=5,topk=10,n=60"
GTD = "gt-dynamic:c={c},eps=0.0,topk=10,n_max=60,max_depth=16"


def rows(size: int, configs, batches: int = 3, gamma: int = 7) -> list[dict]:
    """``batches`` batches of ``size`` rows per config (policy, spec, seconds per batch, accept lengths); 4 tokens a
    row; ``ar`` timed first at 2 s a batch (accept lengths all 1)."""
    out = []
    for policy, spec, secs, al in [("ar", "ar", 2.0, [1, 1, 1, 1])] + list(configs):
        for k in range(batches):
            for r in range(size):
                out.append({"status": "ok", "ar_timing": "first" if policy == "ar" else "",
                            "pair": "p" if size == 1 else f"p@B{size}", "batch_size": size, "policy": policy,
                            "policy_spec": spec, "gamma": 0 if policy == "ar" else gamma, "task_key": f"k{k}",
                            "turn": 0, "repeat": 0, "new_tokens": 4, "wall_time": secs * (0.9 if r else 1.0),
                            "accept_lengths": al})
    return out


def test_table5_puts_eagle2_and_gt_d_side_by_side_per_batch_size():
    df = pd.DataFrame(rows(1, [("eagle2", E2, 1.0, [2, 2]), ("gt-dynamic", GTD.format(c="auto"), 0.8, [2, 2])])
                      + rows(2, [("eagle2", E2, 1.6, [2, 2]), ("gt-dynamic", GTD.format(c="auto"), 1.0, [4])]))
    t = table5(config_figures(df, resamples=200))
    assert list(t["B"]) == [1, 2]
    one, two = t.iloc[0], t.iloc[1]
    assert one["EAGLE-2 tok/s"] == pytest.approx(4 / 1.0) and one["GT(d) tok/s"] == pytest.approx(4 / 0.8)
    assert one["EAGLE-2 speed"].startswith("2.00×") and one["GT(d) speed"].startswith("2.50×")
    assert one["Δ speed"].startswith("+0.50×")
    assert two["EAGLE-2 speed"].startswith("1.25×") and two["GT(d) speed"].startswith("2.00×")   # 8 tok / 1.6 s vs 8 / 1 s
    assert two["EAGLE-2 MAL"] == pytest.approx(2.0) and two["GT(d) MAL"] == pytest.approx(4.0) and two["Δ MAL"] == 2.0


def test_table9_gives_time_and_delta_against_fixed_at_b2_gamma7():
    """A.6's layout: Baseline / Tetris / GT with Time (s) and Δ = baseline time / method time (1.0631 in the
    paper for Tetris). Here fixed takes 1.0 s a batch, tetris 0.9 s, gt-batch 0.8 s, over 3 batches."""
    df = pd.DataFrame(rows(2, [("fixed", "fixed", 1.0, [2]), ("tetris", "tetris:base=0,extra=2", 0.9, [2]),
                               ("gt-batch", "gt-batch:c=auto,cap=16,rule=mean", 0.8, [3]),
                               ("fixed", "fixed", 0.5, [2])][:3])
                      + rows(2, [("fixed", "fixed", 0.5, [2])], gamma=3)[6:])   # another γ: not Table 9's
    t = table9(config_figures(df, resamples=200))
    assert list(t["method"]) == ["baseline (fixed)", "gt-batch:c=auto,cap=16,rule=mean", "tetris:base=0,extra=2"]
    assert list(t["Time (s)"]) == pytest.approx([3.0, 2.4, 2.7])
    assert t.iloc[2]["Δ (baseline time / time)"].startswith("1.1111") and t.iloc[1]["Δ (baseline time / time)"].startswith("1.2500")
    assert t.iloc[0]["Δ (baseline time / time)"] == ""
    assert set(t["padding"]) == {"–"}                  # rows written without pad_slots: unknown, not 0


def test_table9_shows_the_padding_a_padded_runner_adds():
    """Each tetris row verified 3 drafts + 1 target slot in one step and carried 1 padding slot (the other row of
    its batch verified 4): padding = 1 / (4 + 1) = 20 %; fixed rows verify equal widths: 0 %."""
    df = pd.DataFrame(rows(2, [("fixed", "fixed", 1.0, [2]), ("tetris", "tetris:base=0,extra=2", 0.9, [2])]))
    df["drafted"] = [[0]] * 6 + [[4]] * 6 + [[3]] * 6
    df["pad_slots"] = [0] * 12 + [1] * 6
    t = table9(config_figures(df, resamples=200))
    assert list(t["padding"]) == ["0.0%", "20.0%"]


def test_table4_is_a_c_sweep_with_auto_and_params_last():
    assert c_of(GTD.format(c="0.05")) == "0.05" and c_of(E2) is None and c_of("gt:c=params,eps=0.0") == "params"
    configs = [("gt-dynamic", GTD.format(c=c), s, al) for c, s, al in
               (("0.1", 0.9, [3]), ("0.05", 1.0, [4]), ("auto", 0.8, [3]), ("params", 0.85, [3]))]
    t4 = table4(config_figures(pd.DataFrame(rows(1, configs)), resamples=200))
    t = t4[("p", 1, "gt-dynamic")]
    assert list(t.columns) == ["0.05", "0.1", "auto", "params"]
    assert list(t.index) == ["Speed tok/s", "speedup vs ar", "L (MAL)"]
    assert t.loc["Speed tok/s", "auto"] == "5.00" and t.loc["L (MAL)", "0.05"] == "4.00"


def test_gt_paper_text_has_every_layout_and_nothing_without_its_configs():
    df = pd.DataFrame(rows(2, [("eagle2", E2, 1.6, [2]), ("gt-dynamic", GTD.format(c="auto"), 1.0, [4]),
                               ("gt-dynamic", GTD.format(c="0.1"), 1.2, [3]), ("fixed", "fixed", 1.0, [2]),
                               ("tetris", "tetris:base=0,extra=2", 0.9, [2])]))
    text = gt_paper_text(df, resamples=100)
    assert "Table 5 layout" in text and "Table 9 layout" in text and "Table 4 layout" in text
    assert gt_paper_text(pd.DataFrame(rows(2, [("fixed", "fixed", 1.0, [2])], gamma=3)), resamples=100) == ""


def test_gt_paper_config_runs_the_three_layouts_on_the_embedded_pair():
    from jobs.config import load_config

    cfg = load_config("jobs/configs/gt_paper.yaml")
    assert {p.target for p in cfg.pairs} == {"smollm2-135m"}
    assert {p.draft for p in cfg.pairs} == {"smollm2-135m-draft", "smollm2-135m-eagle"}
    names = [n for n, _ in cfg.policies]
    assert {"eagle2", "gt-dynamic", "fixed", "tetris", "gt-batch"} <= set(names) and 2 in cfg.batch_sizes
    assert 7 in cfg.gammas and cfg.dataset.source == "sample"
    cs = {p["c"] for n, p in cfg.policies if n == "gt-dynamic"}
    assert {"auto", "params"} <= cs and len(cs) >= 4
