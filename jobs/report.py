"""``specsweep report``: the GammaTune Table-2 layout and a Spec-Bench-style table, from a
sweep's Parquet log (``--parquet DIR``) or its MLflow experiment (``--experiment NAME``).

Table 2: rows = policies, columns = pairs + average, cells "mean ± std ×" of the Table-2
speedup (``jobs/metrics.py``). Spec-Bench table: speedup vs ar and mean accepted length by
category group, per config; fraction of oracle where an oracle ran. ``--compare DIR``
prints the Table-2 means of two sweeps side by side with their ratio.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from jobs import metrics
from jobs.dataset import GROUP_ORDER
from policies.errors import SpecsweepError


def summary_from_parquet(folder: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    from jobs.parquet_log import ParquetLog

    log = ParquetLog(folder)
    if not log.dir.exists():
        raise SpecsweepError(f"{folder} holds no sweep log (expected {log.dir})")
    df = metrics.ok_rows(log.read())
    if df.empty:
        raise SpecsweepError(f"{folder}: the log has no successful rows yet")
    return metrics.config_summary(df), metrics.speedup_vs_ar(df), metrics.fraction_of_oracle(df)


def summary_from_mlflow(experiment: str, uri: str, output: str | None = None
                        ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One sweep of the experiment (the one into ``output``, else the latest): ``jobs.tracking.read_experiment``."""
    from jobs.tracking import read_experiment

    return read_experiment(experiment, uri, output)


def short(spec: str) -> str:
    return spec if len(spec) <= 48 else spec[:45] + "..."


def table2_layout(summary: pd.DataFrame) -> pd.DataFrame:
    t2 = metrics.table2_from_summary(summary)
    if t2.empty:
        return t2
    t2["cell"] = t2.apply(lambda r: f"{r['mean']:.2f} ± {r['std']:.2f}×", axis=1)
    wide = t2.pivot(index="policy_spec", columns="pair", values="cell")
    avg = t2.groupby("policy_spec").agg(mean=("mean", "mean"), std=("std", "mean"))
    wide["average"] = [f"{avg.loc[i, 'mean']:.2f} ± {avg.loc[i, 'std']:.2f}×" for i in wide.index]
    wide.index = [short(i) for i in wide.index]
    return wide


def specbench_layout(summary: pd.DataFrame, speed: pd.DataFrame) -> pd.DataFrame:
    if speed.empty:
        return speed
    cols = [g for g in GROUP_ORDER if g in speed]
    t = speed.merge(summary[["pair", "policy_spec", "gamma", "mean_accepted_length"]], on=["pair", "policy_spec", "gamma"])
    t = t[["pair", "policy_spec", "gamma", *cols, "mean_accepted_length"]].sort_values(["pair", "policy_spec", "gamma"])
    t["policy_spec"] = t["policy_spec"].map(short)
    return t.rename(columns={"mean_accepted_length": "MAL"})


def render(df: pd.DataFrame, fmt: str) -> str:
    if df.empty:
        return "(nothing to show)\n"
    if fmt == "csv":
        return df.to_csv()
    try:
        return df.to_markdown(floatfmt=".3f") + "\n"
    except ImportError:  # tabulate missing
        return df.to_string(float_format=lambda x: f"{x:.3f}") + "\n"


def build_report(summary, speed, frac, fmt: str = "md") -> str:
    parts = ["## Table 2: speedup over fixed γ (mean ± std across initial γ)\n", render(table2_layout(summary), fmt),
             "\n## Spec-Bench: speedup vs ar by category group, mean accepted length\n",
             render(specbench_layout(summary, speed), fmt)]
    if frac is not None and len(frac):
        f = frac.copy()
        f["policy_spec"] = f["policy_spec"].map(short)
        parts += ["\n## Fraction of oracle throughput\n", render(f.set_index(["pair", "policy_spec", "gamma"]), fmt)]
    return "".join(parts)


def compare(a_dir: str, b_dir: str, fmt: str) -> str:
    ta = metrics.table2_from_summary(summary_from_parquet(a_dir)[0])
    tb = metrics.table2_from_summary(summary_from_parquet(b_dir)[0])
    m = ta.merge(tb, on=["pair", "policy_spec"], suffixes=("_a", "_b"))
    m["ratio_b_over_a"] = m["mean_b"] / m["mean_a"]
    m["policy_spec"] = m["policy_spec"].map(short)
    return f"## Compare {a_dir} (a) vs {b_dir} (b)\n" + render(
        m[["pair", "policy_spec", "mean_a", "std_a", "mean_b", "std_b", "ratio_b_over_a"]].set_index(["pair", "policy_spec"]), fmt)


def main(a) -> int:
    if not a.parquet and not a.experiment:
        raise SpecsweepError("report needs --parquet OUTPUT_FOLDER or --experiment NAME")
    if a.parquet:
        summary, speed, frac = summary_from_parquet(a.parquet)
    else:
        summary, speed, frac = summary_from_mlflow(a.experiment, a.tracking_uri, getattr(a, "output", None))
    text = build_report(summary, speed, frac, a.format)
    if a.compare:
        if not a.parquet:
            raise SpecsweepError("--compare works on Parquet folders: pass --parquet A --compare B")
        text += "\n" + compare(a.parquet, a.compare, a.format)
    sys.stdout.write(text)
    if a.parquet:
        (Path(a.parquet) / f"report.{a.format}").write_text(text)
    return 0
