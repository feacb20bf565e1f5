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


def summary_from_mlflow(experiment: str, uri: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    from jobs.tracking import client_for

    client = client_for(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = [e.name for e in client.search_experiments()]
        raise SpecsweepError(f"no MLflow experiment {experiment!r} at {uri}; experiments: {', '.join(names) or 'none'}")
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`specsweep.role` = 'child'", max_results=10000)
    if not runs:
        raise SpecsweepError(f"experiment {experiment!r} has no specsweep child runs")
    rows, speed = [], []
    for r in runs:
        p, m = r.data.params, r.data.metrics
        base = {"pair": p["pair"], "policy": p["policy"], "policy_spec": p["policy_spec"], "gamma": int(p["initial_gamma"])}
        rows.append({**base, "throughput": m.get("throughput"), "mean_accepted_length": m.get("mean_accepted_length"),
                     "acceptance_rate": m.get("acceptance_rate")})
        if any(k.startswith("speedup_") for k in m):
            speed.append({**base, **{g: m.get(f"speedup_{g}") for g in GROUP_ORDER}})
    summary = pd.DataFrame(rows).drop_duplicates(["pair", "policy_spec", "gamma"])
    orc = summary[summary["policy"] == "oracle"]
    frac = pd.DataFrame()
    if len(orc):
        best = orc.groupby("pair")["throughput"].mean()
        f = summary[~summary["policy"].isin(["oracle", "ar"])].copy()
        f["fraction_of_oracle"] = f["throughput"] / f["pair"].map(best)
        frac = f[["pair", "policy_spec", "gamma", "fraction_of_oracle"]]
    return summary, pd.DataFrame(speed), frac


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
        summary, speed, frac = summary_from_mlflow(a.experiment, a.tracking_uri)
    text = build_report(summary, speed, frac, a.format)
    if a.compare:
        if not a.parquet:
            raise SpecsweepError("--compare works on Parquet folders: pass --parquet A --compare B")
        text += "\n" + compare(a.parquet, a.compare, a.format)
    sys.stdout.write(text)
    if a.parquet:
        (Path(a.parquet) / f"report.{a.format}").write_text(text)
    return 0
