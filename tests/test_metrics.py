"""Metric definitions against values worked out by hand."""
import math

import numpy as np
import pandas as pd
import pytest

from jobs.report import derived, metrics
from tests.helpers import q_rows, row


def test_scalar_metrics():
    assert derived.throughput(50, 2.0) == 25.0
    assert derived.question_tok_s([30, 10], [1.0, 1.0]) == 20.0           # (30 + 10) / 2
    assert derived.mean_accepted_length([1, 3, 5, 3]) == 3.0
    assert derived.acceptance_rate([2, 0, 4], [4, 4, 4]) == 0.5           # 6 / 12
    assert math.isnan(derived.acceptance_rate([], []))


def test_table2_speedup():
    # fixed: 10, 20, 30 tok/s at γ 1, 2, 3 → mean 20; method 24, 22, 26 → s = 1.2, 1.1, 1.3
    mean, std = derived.table2_speedups({1: 24, 2: 22, 3: 26}, {1: 10, 2: 20, 3: 30})
    assert mean == pytest.approx(1.2) and std == pytest.approx(0.1)
    fmean, fstd = derived.table2_speedups({1: 10, 2: 20, 3: 30}, {1: 10, 2: 20, 3: 30})
    assert fmean == pytest.approx(1.0) and fstd == pytest.approx(0.5)   # fixed reads 1.00 ± its spread


@pytest.fixture
def table():
    return pd.DataFrame([
        row("ar", "ar", 0, 1, "writing", 0, 10, 1.0, [1] * 10), row("ar", "ar", 0, 1, "writing", 1, 10, 1.0, [1] * 10),
        row("ar", "ar", 0, 2, "qa", 0, 10, 0.5, [1] * 10),
        row("fixed", "fixed", 2, 1, "writing", 0, 10, 0.5, [2, 3, 3, 2]), row("fixed", "fixed", 2, 1, "writing", 1, 10, 0.5, [3, 3, 4]),
        row("fixed", "fixed", 2, 2, "qa", 0, 10, 0.25, [1, 3, 3, 3]),
        row("fixed", "fixed", 4, 1, "writing", 0, 10, 1.0, [5, 5]), row("fixed", "fixed", 4, 1, "writing", 1, 10, 1.0, [5, 5]),
        row("fixed", "fixed", 4, 2, "qa", 0, 10, 0.5, [5, 5]),
        row("gammatune", "gammatune", 2, 1, "writing", 0, 20, 1.0, [4] * 5), row("gammatune", "gammatune", 2, 1, "writing", 1, 0, 1.0, []),
        row("gammatune", "gammatune", 2, 2, "qa", 0, 10, 0.5, [5, 5]),
        row("gammatune", "gammatune", 4, 1, "writing", 0, 10, 0.5, [5, 5]), row("gammatune", "gammatune", 4, 1, "writing", 1, 10, 0.5, [5, 5]),
        row("gammatune", "gammatune", 4, 2, "qa", 0, 10, 0.5, [5, 5]),
    ])


def test_per_question_and_config_throughput(table):
    s = metrics.config_summary(table).set_index(["policy_spec", "gamma"])
    # ar: q1 20 tok / 2 s = 10; q2 10 / .5 = 20 → 15
    assert s.loc[("ar", 0), "throughput"] == pytest.approx(15.0)
    # fixed γ2: q1 20 / 1 = 20; q2 10 / .25 = 40 → 30; MAL over all 11 forwards = 30 / 11
    assert s.loc[("fixed", 2), "throughput"] == pytest.approx(30.0)
    assert s.loc[("fixed", 2), "mean_accepted_length"] == pytest.approx(30 / 11)
    assert s.loc[("fixed", 2), "acceptance_rate"] == pytest.approx((30 - 11) / 33)
    assert s.loc[("fixed", 4), "throughput"] == pytest.approx(15.0)       # 10 and 20


def test_speedup_by_group(table):
    sp = metrics.speedup_vs_ar(table).set_index(["policy_spec", "gamma"])
    assert sp.loc[("fixed", 2), "mt_bench"] == pytest.approx(2.0)          # 20 / 10
    assert sp.loc[("fixed", 2), "qa"] == pytest.approx(2.0)                # 40 / 20
    assert sp.loc[("fixed", 2), "overall"] == pytest.approx(2.0)           # 30 / 15
    assert math.isnan(sp.loc[("fixed", 2), "rag"])


def test_table2_from_rows(table):
    t = metrics.table2(table)
    t = t[t["pair"] == "p"].set_index("policy_spec")
    # fixed throughputs 30, 15 → mean 22.5; gammatune: q1 20/2 = 10, q2 20 → 15; γ4: 20, 20 → 20
    assert t.loc["fixed", "mean"] == pytest.approx(1.0)
    assert t.loc["fixed", "std"] == pytest.approx(math.sqrt(((30 / 22.5 - 1) ** 2 + (15 / 22.5 - 1) ** 2) / 1))
    assert t.loc["gammatune", "mean"] == pytest.approx((15 / 22.5 + 20 / 22.5) / 2)


def test_fraction_of_oracle(table):
    t = pd.concat([table, pd.DataFrame([row("oracle", "oracle", 2, 1, "writing", 0, 20, 0.5, [4] * 5),
                                        row("oracle", "oracle", 2, 2, "qa", 0, 20, 0.5, [4] * 5)])])
    f = metrics.fraction_of_oracle(t).set_index(["policy_spec", "gamma"])
    assert f.loc[("fixed", 2), "fraction_of_oracle"] == pytest.approx(30 / 40)


# ---------------------------------------------------------------- uncertainty and noise floor
def test_fraction_of_oracle_has_a_paired_interval():
    """Paired over questions: a config at half the oracle on every question has the zero-width interval [0.5, 0.5];
    one that varies against it gets an interval around its point value."""
    rows = (q_rows("oracle", 2, [20, 40, 60]) + q_rows("oracle", 5, [20, 40, 60]) + q_rows("fixed", 2, [10, 20, 30])
            + q_rows("fixed", 5, [20, 20, 60]) + q_rows("ar", 0, [5, 5, 5]))
    f = metrics.fraction_of_oracle(pd.DataFrame(rows)).set_index(["policy_spec", "gamma"])
    assert set(f.index) == {("fixed", 2), ("fixed", 5)}
    half = f.loc[("fixed", 2)]
    assert (half["fraction_of_oracle"], half["fraction_of_oracle_lo"], half["fraction_of_oracle_hi"]) == \
        pytest.approx((0.5, 0.5, 0.5))
    v = f.loc[("fixed", 5)]
    assert v["fraction_of_oracle"] == pytest.approx(100 / 120)
    assert v["fraction_of_oracle_lo"] < v["fraction_of_oracle"] < v["fraction_of_oracle_hi"]


def test_bootstrap_weights_are_seeded_resamples():
    w = metrics.bootstrap_weights(7, resamples=1000, seed=3)
    assert w.shape == (1000, 7) and (w.sum(axis=1) == 7).all()
    assert (w == metrics.bootstrap_weights(7, resamples=1000, seed=3)).all()
    assert not (w == metrics.bootstrap_weights(7, resamples=1000, seed=4)).all()
    assert abs(w.mean() - 1.0) < 0.02                      # each question drawn once per resample on average


def test_paired_bootstrap_by_hand():
    # two questions, so a resample is {1,1}, {1,2} or {2,2} with probability 1/4, 1/2, 1/4 and the
    # 2.5 % / 97.5 % percentiles are the two extreme resamples.
    # ar 10 and 20 tok/s; fixed 20 and 20 (2x on q1, 1x on q2): speedup 20 / 15 = 1.333, resampled 2.0 / 1.333 / 1.0
    df = pd.DataFrame(q_rows("ar", 0, [10, 20]) + q_rows("fixed", 2, [20, 20], al={1: [2, 2], 2: [4]}))
    s = metrics.config_summary(df).set_index("policy_spec")
    assert s.loc["ar", "throughput"] == pytest.approx(15.0)
    assert (s.loc["ar", "throughput_lo"], s.loc["ar", "throughput_hi"]) == pytest.approx((10.0, 20.0))
    assert s.loc["fixed", "speedup"] == pytest.approx(4 / 3)
    assert (s.loc["fixed", "speedup_lo"], s.loc["fixed", "speedup_hi"]) == pytest.approx((1.0, 2.0))
    assert s.loc["fixed", "vs_ar"] == metrics.NOT_RESOLVED              # the interval touches 1.0
    # mean accepted length from per-question sums: q1 4 tokens / 2 forwards, q2 4 / 1 → 8 / 3; resampled 8/4 … 8/2
    assert s.loc["fixed", "mean_accepted_length"] == pytest.approx(8 / 3)
    assert (s.loc["fixed", "mal_lo"], s.loc["fixed", "mal_hi"]) == pytest.approx((2.0, 4.0))


def test_pairing_removes_question_difficulty():
    # the config is exactly 2x ar on every question: paired resamples all give 2.0, however different
    # the questions are (an unpaired bootstrap would give roughly [1.1, 3.6] here)
    df = pd.DataFrame(q_rows("ar", 0, [5, 10, 40, 80]) + q_rows("fixed", 2, [10, 20, 80, 160]))
    sp = metrics.speedup_vs_ar(df).set_index("policy_spec")
    assert (sp.loc["fixed", "overall"], sp.loc["fixed", "overall_lo"], sp.loc["fixed", "overall_hi"]) == pytest.approx((2, 2, 2))
    assert (sp.loc["fixed", "qa"], sp.loc["fixed", "qa_lo"]) == pytest.approx((2, 2))


def test_noise_floor_by_hand():
    # ar first: 10 and 20 tok/s; ar last: 11 and 18. Ratio of throughputs 14.5 / 15; resamples
    # {1,1} → 1.1, {2,2} → 0.9, so the interval is [0.9, 1.1] and the floor 0.1
    df = pd.DataFrame(q_rows("ar", 0, [10, 20], timing="first") + q_rows("ar", 0, [11, 18], timing="last")
                      + q_rows("fixed", 2, [11.5, 23]))
    f = metrics.noise_floor(df).set_index("pair")
    assert f.loc["p", "ar_ratio"] == pytest.approx(14.5 / 15)
    assert (f.loc["p", "ar_ratio_lo"], f.loc["p", "ar_ratio_hi"]) == pytest.approx((0.9, 1.1))
    assert f.loc["p", "floor"] == pytest.approx(0.1) and f.loc["p", "tasks"] == 2
    # the spread of repeats, per question: |11/10 − 1| = 0.1, |18/20 − 1| = 0.1
    assert (f.loc["p", "spread_median"], f.loc["p", "spread_p90"]) == pytest.approx((0.1, 0.1))
    s = metrics.config_summary(df).set_index("policy_spec")
    assert s.loc["ar", "throughput"] == pytest.approx(15.0)            # the closing ar run is not the baseline
    assert s.loc["fixed", "speedup"] == pytest.approx(1.15)             # 1.15 on both questions: interval [1.15, 1.15]
    assert s.loc["fixed", "noise_floor"] == pytest.approx(0.1)
    assert s.loc["fixed", "vs_ar"] == "faster"                          # 0.15 > floor 0.1
    assert metrics.verdict(1.08, 1.05, 1.10, floor=0.1) == metrics.NOT_RESOLVED
    assert metrics.verdict(0.92, 0.90, 0.95, floor=0.0) == "slower"


def test_noise_floor_is_at_least_the_spread_of_repeats():
    # 40 questions, each timed twice 5 % apart in alternating directions: the ratio of the means is ≈ 1 with a
    # tight interval (it shrinks with questions), but two runs of one config still land 5 % apart
    base = [10.0 + i for i in range(40)]
    last = [b * (1.05 if i % 2 else 1 / 1.05) for i, b in enumerate(base)]
    df = pd.DataFrame(q_rows("ar", 0, base, timing="first") + q_rows("ar", 0, last, timing="last")
                      + q_rows("fixed", 2, [b * 1.03 for b in base]))
    f = metrics.noise_floor(df).set_index("pair").loc["p"]
    assert f["spread_median"] == pytest.approx(0.05, abs=0.003) and f["spread_p90"] == pytest.approx(0.05, abs=0.003)
    assert max(abs(f["ar_ratio_lo"] - 1), abs(f["ar_ratio_hi"] - 1)) < 0.03 < f["floor"]
    s = metrics.config_summary(df).set_index("policy_spec")
    assert s.loc["fixed", "speedup_lo"] > 1.0 and s.loc["fixed", "vs_ar"] == metrics.NOT_RESOLVED   # 3 % < 5 %


def test_noise_floor_includes_the_spread_of_repeated_policy_runs():
    # ar first/last agree exactly; fixed γ=2 ran twice per question, 8 % apart: the floor is 8 %, not 0
    base = [10.0 + i for i in range(20)]
    df = pd.DataFrame(q_rows("ar", 0, base, timing="first") + q_rows("ar", 0, base, timing="last")
                      + q_rows("fixed", 2, [b * 1.2 for b in base])
                      + [{**r, "repeat": 1} for r in q_rows("fixed", 2, [b * 1.2 * 1.08 for b in base])])
    f = metrics.noise_floor(df).set_index("pair").loc["p"]
    assert f["spread_median"] == pytest.approx(0.0)
    assert (f["policy_spread_median"], f["policy_spread_p90"]) == pytest.approx((0.08, 0.08))
    assert f["floor"] == pytest.approx(0.08)
    single = pd.DataFrame(q_rows("ar", 0, base, timing="first") + q_rows("ar", 0, base, timing="last")
                          + q_rows("fixed", 2, base))
    assert np.isnan(metrics.noise_floor(single).set_index("pair").loc["p", "policy_spread_median"])   # no repeats


def test_injected_slowdown_is_flagged():
    rng = __import__("numpy").random.default_rng(0)
    base = rng.uniform(8, 40, size=30)                                  # 30 questions of very different speed
    jitter = lambda: rng.normal(1.0, 0.01, size=30)                    # noqa: E731  1 % timing noise
    df = pd.DataFrame(q_rows("ar", 0, base * jitter(), timing="first") + q_rows("ar", 0, base * jitter(), timing="last")
                      + q_rows("fixed", 2, base * jitter()) + q_rows("gammatune", 2, 0.9 * base * jitter()))
    s = metrics.config_summary(df).set_index("policy_spec")
    assert s.loc["fixed", "vs_ar"] == metrics.NOT_RESOLVED
    assert s.loc["gammatune", "vs_ar"] == "slower"
    assert s.loc["gammatune", "speedup_hi"] < 0.93 and s.loc["gammatune", "noise_floor"] < 0.02


def test_table2_average_is_pooled():
    # per-pair stds 0.1 and 0.3: pooled √((0.01 + 0.09) / 2) = 0.2236, not their mean 0.2
    assert derived.pooled_average([1.1, 1.3], [0.1, 0.3]) == pytest.approx((1.2, 0.05 ** 0.5))
    summary = pd.DataFrame([{"pair": pair, "policy": pol, "policy_spec": pol, "gamma": g, "throughput": t}
                            for pair, rows in {"a": [("fixed", 1, 10), ("fixed", 2, 10), ("gt", 1, 10), ("gt", 2, 12)],
                                               "b": [("fixed", 1, 10), ("fixed", 2, 10), ("gt", 1, 10), ("gt", 2, 16)]}.items()
                            for pol, g, t in rows])
    t = metrics.table2_from_summary(summary).set_index(["pair", "policy_spec"])
    # a: s = 1.0, 1.2 → std √0.02; b: s = 1.0, 1.6 → std √0.18; pooled √0.10
    assert t.loc[("average", "gt"), "mean"] == pytest.approx((1.1 + 1.3) / 2)
    assert t.loc[("average", "gt"), "std"] == pytest.approx(0.10 ** 0.5)


def test_table2_intervals_from_rows():
    rows = []
    for pair, scale in (("a", 1.0), ("b", 2.0)):
        rows += q_rows("fixed", 1, [10 * scale, 20 * scale], pair=pair) + q_rows("fixed", 2, [10 * scale, 20 * scale], pair=pair)
        rows += q_rows("gt", 1, [11 * scale, 22 * scale], pair=pair) + q_rows("gt", 2, [12 * scale, 24 * scale], pair=pair)
    t = metrics.table2(pd.DataFrame(rows)).set_index(["pair", "policy_spec"])
    # every question gets 1.1x at γ1 and 1.2x at γ2 on both pairs: mean 1.15, std √0.005, in every resample
    for pair in ("a", "b", "average"):
        assert t.loc[(pair, "gt"), ["mean", "mean_lo", "mean_hi"]].tolist() == pytest.approx([1.15] * 3)
        assert t.loc[(pair, "gt"), "std"] == pytest.approx(0.005 ** 0.5)
    assert t.loc[("a", "fixed"), "mean"] == pytest.approx(1.0)


class Gen:
    """The fields of an engine Generation that ``metrics.summarize`` reads."""

    def __init__(self, new_tokens, wall_time, accept_lengths, drafted, k_max=None):
        self.new_tokens, self.wall_time, self.accept_lengths, self.drafted = new_tokens, wall_time, accept_lengths, drafted
        self.accepted = [a - 1 for a in accept_lengths]
        self.k_max = k_max if k_max is not None else drafted


def test_summarize_generations_by_hand():
    # q1: two turns, 20 + 10 tokens in 1 + 2 s → 10 tok/s; q2: one turn, 12 tokens in 0.5 s → 24 tok/s
    q1 = [Gen(20, 1.0, [3, 1, 2], [3, 3, 3], [3, 3, 4]), Gen(10, 2.0, [4], [4])]
    q2 = Gen(12, 0.5, [2, 2], [2, 2])
    s = derived.summarize([q1, q2])
    assert (s["questions"], s["generations"], s["new_tokens"], s["forwards"]) == (2, 3, 42, 6)
    assert s["tok_s"] == pytest.approx([10.0, 24.0]) and s["throughput"] == pytest.approx(17.0)
    assert s["mean_accepted_length"] == pytest.approx(14 / 6)             # (3+1+2+4+2+2) / 6 forwards
    assert s["acceptance_rate"] == pytest.approx(8 / 17)                  # Σ(a − 1) = 8 over Σ drafted = 17
    assert s["drafted_per_forward"] == pytest.approx(17 / 6)
    assert s["max_draft_per_forward"] == pytest.approx(18 / 6)
    ar = derived.summarize([Gen(5, 1.0, [1] * 5, [0] * 5)])
    assert ar["mean_accepted_length"] == 1.0 and math.isnan(ar["acceptance_rate"])


def test_summarize_matches_the_table_rules(table):
    # the same rows through the table path and the generations path give the same numbers
    part = table[(table["policy"] == "fixed") & (table["gamma"] == 2)]
    qs = [[Gen(r.new_tokens, r.wall_time, r.accept_lengths, r.drafted) for r in g.itertuples()]
          for _, g in part.groupby("question_id")]
    s, t = derived.summarize(qs), metrics.config_summary(table).set_index(["policy_spec", "gamma"]).loc[("fixed", 2)]
    assert s["throughput"] == pytest.approx(t["throughput"])
    assert s["mean_accepted_length"] == pytest.approx(t["mean_accepted_length"])
    assert s["acceptance_rate"] == pytest.approx(t["acceptance_rate"])


def test_mlflow_stream_measures_with_the_same_figures(table):
    """The MLflow stream's running sums and the generations path give the report's point estimates."""
    from jobs.mlflow.stream import contribution, measure

    part = table[(table["policy"] == "fixed") & (table["gamma"] == 2)]
    m = measure({"task": [contribution(r) for r in part.to_dict("records")]})
    t = metrics.config_summary(table).set_index(["policy_spec", "gamma"]).loc[("fixed", 2)]
    assert m["throughput"] == pytest.approx(t["throughput"])
    assert m["mean_accepted_length"] == pytest.approx(t["mean_accepted_length"])
    assert m["acceptance_rate"] == pytest.approx(t["acceptance_rate"])


def test_time_error_by_hand():
    assert derived.time_error(1.1, 1.0) == pytest.approx(0.1)
    assert derived.time_error(0.8, 1.0) == pytest.approx(0.2)
    assert derived.time_error(0.8, 1.0, signed=True) == pytest.approx(-0.2)
    assert math.isnan(derived.time_error(1.0, 0.0))
    pred, meas = pd.Series([2.0, 1.0, 3.0]), pd.Series([1.0, 0.0, 4.0])
    got = derived.time_error(pred, meas).tolist()
    assert got[0] == pytest.approx(1.0) and math.isnan(got[1]) and got[2] == pytest.approx(0.25)
    assert derived.time_error(pred, meas, signed=True).tolist()[2] == pytest.approx(-0.25)


def test_speedup_of_generations_is_paired():
    # same two questions as test_paired_bootstrap_by_hand: ar 10 and 20 tok/s, config 20 and 20
    ar = derived.summarize([Gen(10, 1.0, [1] * 10, [0] * 10), Gen(20, 1.0, [1] * 20, [0] * 20)])
    cfg = derived.summarize([Gen(20, 1.0, [2] * 10, [1] * 10), Gen(20, 1.0, [2] * 10, [1] * 10)])
    assert metrics.speedup(cfg, ar) == pytest.approx((4 / 3, 1.0, 2.0))
    with pytest.raises(ValueError):
        metrics.speedup(cfg, derived.summarize([Gen(10, 1.0, [1], [0])]))


def test_a_log_written_before_the_k_max_rename_reads_back_beside_a_new_one(tmp_path):
    """Task files from before the per-step column was renamed (gammas → k_max) and before the mode column
    read back with today's names next to new files."""
    from actors.loading.schema import to_table
    from jobs.store.parquet_log import ParquetLog

    log = ParquetLog(tmp_path / "out")
    log.prepare("fp", {"a": 1})
    row = {"task_key": "t1", "config_key": "p|fixed|2", "status": "ok", "k_max": [2, 2], "drafted": [2, 1]}
    log.write(to_table([row]))
    old = to_table([dict(row, task_key="t0")])
    old = old.rename_columns(["gammas" if n == "k_max" else n for n in old.column_names]).drop_columns(["mode"])
    log.write(old)
    df = log.read().sort_values("task_key")
    assert "gammas" not in df and [list(v) for v in df["k_max"]] == [[2, 2], [2, 2]]
    assert set(df["task_key"]) == {"t0", "t1"} and df["mode"].isna().all()


def test_one_question_has_no_interval_and_no_verdict():
    """Redrawing one question gives it back every time: no interval (not a zero-width one) and no verdict."""
    from jobs.report.intervals import bootstrap_weights

    assert np.isnan(bootstrap_weights(1, 10)).all() and bootstrap_weights(1, 10).shape == (10, 1)
    df = pd.DataFrame(q_rows("ar", 0, [10], timing="first") + q_rows("ar", 0, [10.1], timing="last")
                      + q_rows("fixed", 2, [8]))
    s = metrics.config_summary(df)
    fixed = s[s["policy"] == "fixed"].iloc[0]
    assert fixed["speedup"] == pytest.approx(0.8) and np.isnan(fixed["speedup_lo"]) and np.isnan(fixed["speedup_hi"])
    assert fixed["vs_ar"] == ""
    two = pd.DataFrame(q_rows("ar", 0, [10, 12], timing="first") + q_rows("ar", 0, [10, 12], timing="last")
                       + q_rows("fixed", 2, [8, 9]))
    s2 = metrics.config_summary(two)
    assert s2.loc[s2["policy"] == "fixed", "speedup_lo"].notna().all()


def test_table2_and_fraction_of_oracle_compare_on_the_questions_each_config_ran(table):
    """A config that lost a question (a failed task) is compared with fixed γ (Table 2) and with the oracle on the
    questions it ran, as speedup_vs_ar compares it with ar."""
    lost = table[~((table["policy"] == "gammatune") & (table["gamma"] == 4) & (table["question_id"] == 2))]
    t = metrics.table2(lost)
    t = t[t["pair"] == "p"].set_index("policy_spec")
    # gammatune γ4 ran q1 only: 20 tok/s; fixed on q1: γ2 20, γ4 10 → 15 → s = 4/3; γ2 as before: 15 / 22.5
    assert t.loc["gammatune", "mean"] == pytest.approx((15 / 22.5 + 20 / 15) / 2)
    oracle = table[(table["policy"] == "fixed") & (table["gamma"] == 2)].assign(policy="oracle", policy_spec="oracle",
                                                                                 gamma=0)
    f = metrics.fraction_of_oracle(pd.concat([lost, oracle])).set_index(["policy_spec", "gamma"])
    assert f.loc[("gammatune", 4), "fraction_of_oracle"] == pytest.approx(20 / 20)    # the oracle on q1: 20
    assert f.loc[("gammatune", 2), "fraction_of_oracle"] == pytest.approx(15 / 30)


def test_the_overall_speedup_has_one_interval_in_the_summary_and_the_specbench_table():
    rng = np.random.default_rng(3)
    rows = pd.DataFrame(q_rows("ar", 0, list(rng.uniform(10, 20, 9))) + q_rows("fixed", 2, list(rng.uniform(10, 30, 9)))
                        + q_rows("fixed", 4, list(rng.uniform(5, 40, 9))))
    s = metrics.config_summary(rows).set_index(["policy_spec", "gamma"])
    sp = metrics.speedup_vs_ar(rows).set_index(["policy_spec", "gamma"])
    for key in [("fixed", 2), ("fixed", 4)]:
        assert (sp.loc[key, "overall_lo"], sp.loc[key, "overall_hi"]) == pytest.approx(
            (s.loc[key, "speedup_lo"], s.loc[key, "speedup_hi"]))


def test_table2_from_summaries_never_averages_over_fewer_gammas():
    s = pd.DataFrame([{"pair": "p", "policy": p, "policy_spec": p, "gamma": g, "throughput": v}
                      for p, g, v in [("fixed", 2, 10.0), ("fixed", 4, 20.0), ("gt", 2, 15.0),
                                      ("gt", 4, float("nan"))]])
    t = metrics.table2_from_summary(s).set_index(["pair", "policy_spec"])
    assert math.isnan(t.loc[("p", "gt"), "mean"]) and t.loc[("p", "fixed"), "mean"] == pytest.approx(1.0)


def test_a_row_without_a_category_still_counts():
    rows = pd.DataFrame([row("ar", "ar", 0, 1, "writing", 0, 10, 1.0, [1] * 10),
                         row("fixed", "fixed", 2, 1, "writing", 0, 10, 0.5, [2, 3]),
                         row("ar", "ar", 0, 2, None, 0, 10, 1.0, [1] * 10),
                         row("fixed", "fixed", 2, 2, None, 0, 10, 1.0, [2, 3])])
    s = metrics.config_summary(rows).set_index(["policy_spec", "gamma"])
    assert s.loc[("fixed", 2), "throughput"] == pytest.approx(15.0)          # questions 1 and 2: (20 + 10) / 2
    assert s.loc[("fixed", 2), "mean_accepted_length"] == pytest.approx(2.5)


def test_mlflow_stream_pairs_a_config_and_ar_on_the_questions_both_ran(table):
    """ar missing a question the config ran: the stream's speedup is the report's, both on the common questions."""
    from jobs.mlflow.stream import contribution, measure

    q0 = sorted(table["question_id"].unique())[0]
    cut = table[~((table["policy"] == "ar") & (table["question_id"] == q0))]
    part = cut[(cut["policy"] == "fixed") & (cut["gamma"] == 2)]
    ar = cut[cut["policy"] == "ar"]
    m = measure({"t": [contribution(r) for r in part.to_dict("records")]},
                {"t": [contribution(r) for r in ar.to_dict("records")]})
    t = metrics.config_summary(cut).set_index(["policy_spec", "gamma"]).loc[("fixed", 2)]
    assert m["speedup"] == pytest.approx(t["speedup"])
