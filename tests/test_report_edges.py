"""Report edges: ratios paired on the questions both sides ran, an ``ar``-only summary's figures, logs without
``ar_timing`` (written before ``ar`` was timed twice)."""
import numpy as np
import pandas as pd
import pytest

from actors.loading.schema import config_key
from jobs.report import metrics


def mk(policy, spec, gamma, qid, wall, pair="p", timing="", status="ok", mode=None, new=10):
    """One scripted result row (``ar`` accepts 1 token a step, every other policy 2)."""
    al = [1] * new if policy == "ar" else [2] * (new // 2)
    return {"task_key": f"{pair}|q{qid}", "config_key": config_key(pair, spec, gamma), "pair": pair,
            "policy": policy, "policy_spec": spec, "gamma": gamma, "repeat": 0, "question_id": qid, "category": "qa",
            "turn": 0, "new_tokens": sum(al), "wall_time": wall, "accept_lengths": al, "accepted": [a - 1 for a in al],
            "drafted": [0 if policy == "ar" else 1] * len(al),
            "k_max": [0 if policy == "ar" else max(gamma, 1)] * len(al),
            "status": status, "error": "" if status == "ok" else "boom", "ar_timing": timing, "mode": mode,
            "batch_size": 1, "text": "x", "token_ids": [1] * sum(al), "prompt_ids": [1], "decoding_steps": len(al)}


def test_speedup_vs_ar_leaves_out_a_question_ar_has_no_time_for():
    # ar untimed on q2 (a slow question for fixed): paired on q1, q3 fixed is 2x ar; unpaired it was 1.40
    rows = []
    for q, ar_t, fx_t in ((1, 1.0, 0.5), (2, float("nan"), 5.0), (3, 1.0, 0.5)):
        rows += [mk("ar", "ar", 0, q, ar_t, timing="first"), mk("ar", "ar", 0, q, 1.0, timing="last"),
                 mk("fixed", "fixed", 2, q, fx_t)]
    sp = metrics.speedup_vs_ar(pd.DataFrame(rows), resamples=200).iloc[0]
    assert sp["overall"] == pytest.approx(2.0)
    assert sp["overall_lo"] == pytest.approx(2.0) and sp["overall_hi"] == pytest.approx(2.0)
    summary = metrics.config_summary(pd.DataFrame(rows), resamples=200)
    assert summary.loc[summary["policy"] == "fixed", "speedup"].iloc[0] == pytest.approx(2.0)


def test_fraction_of_oracle_leaves_out_a_question_the_bound_failed():
    rows = []
    for q, b_t, fx_t in ((1, 0.25, 0.5), (2, None, 5.0), (3, 0.25, 0.5)):
        rows += [mk("ar", "ar", 0, q, 1.0, timing="first"), mk("fixed", "fixed", 2, q, fx_t, mode="replay"),
                 mk("oracle-bound", "oracle (bound)", 0, q, b_t or 0.2, mode="replay",
                    status="ok" if b_t else "failed")]
    fr = metrics.fraction_of_oracle(metrics.ok_rows(pd.DataFrame(rows)), resamples=200).iloc[0]
    assert fr["fraction_of_oracle"] == pytest.approx(0.5)                  # unpaired: 0.35
    assert fr["fraction_of_oracle_lo"] == pytest.approx(0.5) and fr["fraction_of_oracle_hi"] == pytest.approx(0.5)


def test_table2_leaves_out_a_question_a_fixed_gamma_failed():
    # gammatune: 20 tok/s on q1, q3, 2 tok/s on q2; fixed γ=2 failed q2, both fixed γs run 10 tok/s elsewhere
    rows = []
    for q, gt_t in ((1, 0.5), (2, 5.0), (3, 0.5)):
        rows += [mk("ar", "ar", 0, q, 1.0, timing="first"), mk("gammatune", "gammatune", 2, q, gt_t),
                 mk("fixed", "fixed", 2, q, 1.0, status="failed" if q == 2 else "ok"), mk("fixed", "fixed", 4, q, 1.0)]
    t2 = metrics.table2(metrics.ok_rows(pd.DataFrame(rows)), resamples=200)
    row = t2[(t2["pair"] == "p") & (t2["policy_spec"] == "gammatune")].iloc[0]
    assert row["mean"] == pytest.approx(2.0)                               # unpaired: 1.40
    fixed = t2[(t2["pair"] == "p") & (t2["policy_spec"] == "fixed")].iloc[0]
    assert fixed["mean"] == pytest.approx(1.0) and fixed["std"] == pytest.approx(0.0)


def test_figures_of_an_ar_only_summary_skip_the_gamma_figures(tmp_path):
    from jobs.report.figures import _per_pair, all_figures, throughput_bars
    rows = []
    for q, t in ((1, 1.0), (2, 2.0)):
        rows += [mk("ar", "ar", 0, q, t, timing="first"), mk("ar", "ar", 0, q, t * 1.01, timing="last")]
    ok = pd.DataFrame(rows)
    summary = metrics.config_summary(ok, resamples=50)
    assert set(summary["policy"]) == {"ar"}
    assert throughput_bars(summary, tmp_path / "bars.png") is None
    assert _per_pair(summary, "throughput", "tok/s", tmp_path / "t.png") is None
    written = all_figures(summary, ok, tmp_path / "figures")
    assert all(p.exists() for p in written)
    assert not {"throughput_bars.png", "throughput_vs_gamma.png", "mal_vs_gamma.png"} & {p.name for p in written}


def old_log():
    """Rows of a log from before ``ar`` was timed twice: no ``ar_timing`` column."""
    rows = []
    for q, t in ((1, 1.0), (2, 2.0)):
        rows += [mk("ar", "ar", 0, q, t, timing="first", mode="live"), mk("fixed", "fixed", 2, q, t / 2, mode="live")]
    return pd.DataFrame(rows).drop(columns=["ar_timing"])


def test_batches_read_a_log_without_ar_timing():
    from jobs.report.batches import batches, by_batch_size
    assert len(batches(old_log())) == 4
    t = by_batch_size(old_log(), resamples=50).iloc[0]
    assert t["best_spec"] == "fixed" and t["best_speedup"] == pytest.approx(2.0)


def test_gamma_validation_reads_a_log_without_ar_timing(monkeypatch):
    from jobs.report import gamma_table
    seen = []

    def stop(*args, **kwargs):       # past the ar_timing filter: record the rows it kept and stop there
        seen.append(args[0])
        raise StopIteration
    monkeypatch.setattr(gamma_table, "full_phase_totals", stop)
    monkeypatch.setattr(gamma_table, "live_segments", lambda live: pd.DataFrame())    # scripted rows time no steps
    with pytest.raises(StopIteration):
        gamma_table.validation(old_log(), {"p": object()}, {"p": np.ones((1, 4))})
    assert len(seen[0]) == 2 and set(seen[0]["policy"]) == {"ar"}
