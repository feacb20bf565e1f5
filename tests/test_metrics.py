"""Metric definitions against values worked out by hand."""
import math

import pandas as pd
import pytest

from jobs import metrics


def test_scalar_metrics():
    assert metrics.throughput(50, 2.0) == 25.0
    assert metrics.question_tok_s([30, 10], [1.0, 1.0]) == 20.0           # (30 + 10) / 2
    assert metrics.mean_accepted_length([1, 3, 5, 3]) == 3.0
    assert metrics.acceptance_rate([2, 0, 4], [4, 4, 4]) == 0.5           # 6 / 12
    assert math.isnan(metrics.acceptance_rate([], []))


def test_table2_speedup():
    # fixed: 10, 20, 30 tok/s at γ 1, 2, 3 → mean 20; method 24, 22, 26 → s = 1.2, 1.1, 1.3
    mean, std = metrics.table2_speedups({1: 24, 2: 22, 3: 26}, {1: 10, 2: 20, 3: 30})
    assert mean == pytest.approx(1.2) and std == pytest.approx(0.1)
    fmean, fstd = metrics.table2_speedups({1: 10, 2: 20, 3: 30}, {1: 10, 2: 20, 3: 30})
    assert fmean == pytest.approx(1.0) and fstd == pytest.approx(0.5)   # fixed reads 1.00 ± its spread


def row(policy, spec, gamma, qid, cat, turn, new, wall, al, acc=None, dr=None):
    return {"pair": "p", "policy": policy, "policy_spec": spec, "gamma": gamma, "repeat": 0, "question_id": qid,
            "category": cat, "turn": turn, "new_tokens": new, "wall_time": wall, "accept_lengths": al,
            "accepted": acc or [a - 1 for a in al], "drafted": dr or [0 if policy == "ar" else 3] * len(al), "status": "ok"}


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
    t = metrics.table2(table).set_index("policy_spec")
    # fixed throughputs 30, 15 → mean 22.5; gammatune: q1 20/2 = 10, q2 20 → 15; γ4: 20, 20 → 20
    assert t.loc["fixed", "mean"] == pytest.approx(1.0)
    assert t.loc["fixed", "std"] == pytest.approx(math.sqrt(((30 / 22.5 - 1) ** 2 + (15 / 22.5 - 1) ** 2) / 1))
    assert t.loc["gammatune", "mean"] == pytest.approx((15 / 22.5 + 20 / 22.5) / 2)


def test_fraction_of_oracle(table):
    t = pd.concat([table, pd.DataFrame([row("oracle", "oracle", 2, 1, "writing", 0, 20, 0.5, [4] * 5),
                                        row("oracle", "oracle", 2, 2, "qa", 0, 20, 0.5, [4] * 5)])])
    f = metrics.fraction_of_oracle(t).set_index(["policy_spec", "gamma"])
    assert f.loc[("fixed", 2), "fraction_of_oracle"] == pytest.approx(30 / 40)
