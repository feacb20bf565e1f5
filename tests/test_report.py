"""The report prints intervals, the noise floor, its warning and the pooled Table-2 average."""
import re

import numpy as np
import pandas as pd

from jobs.report import metrics
from jobs.report.tables import build_report, table2_layout
from tests.helpers import q_rows


def report_of(df):
    return build_report(metrics.config_summary(df), metrics.speedup_vs_ar(df), None, "md",
                        metrics.table2(df), metrics.noise_floor(df))


def test_report_intervals_floor_and_marks():
    rng = np.random.default_rng(1)
    base = rng.uniform(8, 40, size=20)
    j = lambda s: rng.normal(1.0, s, size=20)                            # noqa: E731
    rows = (q_rows("ar", 0, base * j(0.01), timing="first") + q_rows("ar", 0, base * j(0.01), timing="last")
            + q_rows("fixed", 1, base * j(0.01)) + q_rows("fixed", 2, base * j(0.01))
            + q_rows("gammatune", 1, 0.8 * base * j(0.01)) + q_rows("gammatune", 2, 0.8 * base * j(0.01)))
    text = report_of(pd.DataFrame(rows))
    assert "## Noise floor" in text and "WARNING" not in text
    gt_row = next(line for line in text.splitlines() if line.startswith("| gammatune") and "×" in line)
    assert "0.80 ± 0.00× [0.80, 0.80]" in gt_row and "†" not in gt_row      # 20 % slower, resolved
    sb = [line for line in text.splitlines() if "| fixed" in line and "×" not in line]
    assert sb and all("†" in line for line in sb)                              # fixed ≈ ar: no difference resolved


def test_report_warns_when_the_floor_is_wide():
    rows = (q_rows("ar", 0, [10, 20, 30], timing="first") + q_rows("ar", 0, [13, 20, 30], timing="last")
            + q_rows("fixed", 1, [10, 20, 30]))
    text = report_of(pd.DataFrame(rows))
    assert "WARNING: the noise floor of pair p is 30.0%" in text                # resample {1,1,1}: 13/10


def test_average_column_is_pooled():
    summary = pd.DataFrame([{"pair": pair, "policy": pol, "policy_spec": pol, "gamma": g, "throughput": t}
                            for pair, rows in {"a": [("fixed", 1, 10), ("fixed", 2, 10), ("gt", 1, 10), ("gt", 2, 12)],
                                               "b": [("fixed", 1, 10), ("fixed", 2, 10), ("gt", 1, 10), ("gt", 2, 16)]}.items()
                            for pol, g, t in rows])
    wide = table2_layout(summary)
    # stds √0.02 = 0.141 and √0.18 = 0.424: pooled √0.10 = 0.316 (their mean would print 0.28)
    assert wide.loc["gt", "average"] == "1.20 ± 0.32×"
    assert list(wide.columns) == ["a", "b", "average"]


def test_a_floor_read_back_from_mlflow_alone_prints_dashes_for_what_it_lacks():
    """``report --experiment`` has only each pair's floor (MLflow keeps no ar/ar ratio or spreads)."""
    rows = (q_rows("ar", 0, [10, 20, 30], timing="first") + q_rows("ar", 0, [10, 20, 30], timing="last")
            + q_rows("fixed", 1, [12, 24, 36]))
    df = pd.DataFrame(rows)
    floor = pd.DataFrame({"pair": ["p"], "floor": [0.012]})
    text = build_report(metrics.config_summary(df), metrics.speedup_vs_ar(df), None, "md", metrics.table2(df), floor)
    line = next(x for x in text.splitlines() if x.startswith("| p "))
    assert "1.2%" in line and "– (no repeats)" in line and "nan" not in line


def test_untrusted_times_show_as_dashes_and_no_efficiency_rows():
    """Replayed times marked untrusted are NaN in the rows: no cell, interval or efficiency row may print "nan"."""
    rows = (q_rows("ar", 0, [10, 12, 14], timing="first") + q_rows("ar", 0, [10, 12, 14], timing="last")
            + q_rows("fixed", 1, [12, 13, 15]) + q_rows("gammatune", 1, [13, 14, 16]))
    df = pd.DataFrame(rows)
    df.loc[df["policy"] != "ar", "wall_time"] = float("nan")
    frac = pd.DataFrame({"pair": ["p", "p"], "policy_spec": ["fixed", "gammatune"], "gamma": [1, 1],
                         "fraction_of_oracle": [float("nan"), 0.8], "fraction_of_oracle_lo": [float("nan"), 0.7],
                         "fraction_of_oracle_hi": [float("nan"), 0.9]})
    text = build_report(metrics.config_summary(df), metrics.speedup_vs_ar(df), frac, "md", metrics.table2(df),
                        metrics.noise_floor(df))
    assert "nan" not in text.lower()
    assert re.search(r"\| p +\| gammatune +\| +1 \| 0\.80 \[0\.70, 0\.90\]", text)
    assert "('p'" not in text
