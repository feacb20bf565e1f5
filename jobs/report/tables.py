"""The report's tables: the GammaTune Table-2 layout and a Spec-Bench-style table, from a sweep's Parquet log or
from summaries read back from its MLflow experiment (the command itself: ``jobs/report_cli.py``).

Every ratio carries its 95 % paired-bootstrap interval (``jobs/report/metrics.py``), and the
report opens with the noise floor: per pair, ``ar`` timed last ÷ ``ar`` timed first in the
same tasks, with a loud warning when it exceeds 5 %.

Table 2: rows = policies, columns = pairs + average, cells "mean ± std× [lo, hi]" of the
Table-2 speedup, [lo, hi] the interval of the mean; the average column is the mean of
the means ± the pooled std √(mean σ²). Spec-Bench table: speedup vs ar by category group
with the overall interval and verdict, mean accepted length with its interval; fraction
of oracle where an oracle ran. A mark † flags "no difference resolved": the interval
includes 1.0 or the difference lies inside the noise floor. ``--compare DIR`` prints the
Table-2 means of two sweeps side by side with their ratio. ``--specbench`` prints instead
Spec-Bench evaluation/speed.py's speedup and mean accepted tokens beside ours
(``jobs/report/specbench.py``), from the folder's ``answers/`` and the target tokenizer.
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from jobs.dataset import GROUP_ORDER
from jobs.report import metrics
from jobs.report.batches import batch_table_md, by_batch_size
from jobs.report.bound_scope import bound_text, scope_notes
from jobs.report.gamma_table import gamma_section
from jobs.report.gt_tables import gt_paper_text
from jobs.report.regret import regret_md, regret_table
from jobs.report.agreement import (agreement_table, agreement_text, bias_corrected, bias_text, corrected_text,
                                   mark_untrusted, pair_bias, preferred_mode, primary_rows, replay_bias,
                                   stored_config)
from jobs.report.costs import costs_text, read_actor_infos, untrusted_reasons, untrusted_text
from jobs.report.positions import positions_section
from jobs.report.derived import trusted_times
from jobs.report.text import interval, render, short
from jobs.store.parquet_log import ParquetLog, existing_log
from policies.errors import SpecsweepError


def summary_from_parquet(folder: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    df = shown_rows(folder, existing_log(folder).read())
    if df.empty:
        raise SpecsweepError(f"{folder}: the log has no successful rows yet")
    return metrics.config_summary(df), metrics.speedup_vs_ar(df), metrics.fraction_of_oracle(df)


def shown_rows(folder: str, df: pd.DataFrame) -> pd.DataFrame:
    """The successful rows the figures use: one mode per config (``jobs/report/agreement.py``), with no times
    where they are not trusted (``jobs/report/costs.py``)."""
    ok = metrics.ok_rows(df)
    return trusted_times(mark_untrusted(primary_rows(ok, preferred_mode(folder)), untrusted_reasons(folder, ok)))


def costs_from_parquet(folder: str) -> str:
    """The cost-model section, one line per pair whose replayed times are left out, and whether the oracle bound
    held ("" when none applies)."""
    df = ParquetLog(folder).read()
    ok = metrics.ok_rows(df)
    every_mode = trusted_times(mark_untrusted(ok, untrusted_reasons(folder, ok)))    # the bound's scope picks the mode
    notes = scope_notes(ok, stored_config(folder).get("rollout_length"))
    parts = [costs_text(read_actor_infos(folder)), untrusted_text(untrusted_reasons(folder, ok)),
             bound_text(metrics.bound_check(df), metrics.fraction_of_oracle(every_mode), notes)]
    return "".join(f"\n## {p}\n" for p in parts if p)


def uncertainty_from_parquet(folder: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(Table 2 with intervals, noise floor per pair) from a sweep's Parquet log."""

    df = shown_rows(folder, ParquetLog(folder).read())
    return metrics.table2(df), metrics.noise_floor(df)


def agreement_from_parquet(folder: str, speed: pd.DataFrame | None = None) -> str:
    """The replay-vs-live agreement section, the replay bias and (given the speedups) the bias-corrected replayed
    speedups ("" for a sweep without replayed rows)."""

    df = ParquetLog(folder).read()
    table = agreement_table(df)
    if not len(table):
        return ""
    parts = [agreement_text(table), bias_text(replay_bias(df)),
             corrected_text(bias_corrected(speed, shown_rows(folder, df), pair_bias(df)))]
    return "".join(f"\n## {p}\n" for p in parts if p)


def _mark(value, lo, hi, floor=float("nan")) -> str:
    return " †" if metrics.verdict(value, lo, hi, floor) == metrics.NOT_RESOLVED else ""


def table2_layout(summary: pd.DataFrame, t2: pd.DataFrame | None = None, floor: pd.DataFrame | None = None,
                  baseline: str = "fixed") -> pd.DataFrame:
    """Cells "mean ± std×" (+ " [lo, hi]" and † when ``t2`` from ``metrics.table2`` carries intervals;
    † uses the pair's noise floor, the widest one for the average); the average column is the pooled
    form (mean of means ± √(mean σ²))."""
    t2 = metrics.table2_from_summary(summary) if t2 is None else t2.copy()
    if t2.empty:
        return t2
    has_ci = "mean_lo" in t2
    floors = dict(zip(floor["pair"], floor["floor"])) if floor is not None and len(floor) else {}
    if floors:
        floors["average"] = max(floors.values())

    def cell(r):
        if r["mean"] != r["mean"]:                                 # no time to compare (untrusted replayed times)
            return "–"
        text = f"{r['mean']:.2f} ± {r['std']:.2f}×"
        if has_ci:
            text += interval(r["mean_lo"], r["mean_hi"])
            if r["policy_spec"] != baseline:                       # the baseline reads 1.00 by construction
                text += _mark(r["mean"], r["mean_lo"], r["mean_hi"], floors.get(r["pair"], float("nan")))
        return text

    t2["cell"] = t2.apply(cell, axis=1)
    wide = t2.pivot(index="policy_spec", columns="pair", values="cell")
    wide = wide[[c for c in wide.columns if c != "average"] + ["average"]].fillna("–")   # a config a pair did not run
    wide.index = [short(i) for i in wide.index]
    return wide


def specbench_layout(summary: pd.DataFrame, speed: pd.DataFrame) -> pd.DataFrame:
    if speed.empty:
        return speed
    cols = [g for g in GROUP_ORDER if g in speed and speed[g].notna().any()]   # groups the sweep covered
    extra = [c for c in ("mean_accepted_length", "mal_lo", "mal_hi", "noise_floor") if c in summary]
    t = speed.merge(summary[["pair", "policy_spec", "gamma", *extra]], on=["pair", "policy_spec", "gamma"])
    out = t[["pair", "policy_spec", "gamma", *cols]].copy()
    if "overall_lo" in t and t["overall"].notna().any():
        floor = t["noise_floor"] if "noise_floor" in t else pd.Series(float("nan"), index=t.index)
        out["overall 95% CI"] = [interval(lo, hi).strip() + _mark(v, lo, hi, f)
                                 for v, lo, hi, f in zip(t["overall"], t["overall_lo"], t["overall_hi"], floor)]
    out["MAL"] = t["mean_accepted_length"]
    if "mal_lo" in t:
        out["MAL 95% CI"] = [interval(lo, hi).strip() for lo, hi in zip(t["mal_lo"], t["mal_hi"])]
    out = out.sort_values(["pair", "policy_spec", "gamma"])
    out = one_row_if_gamma_free(out, [c for c in out.columns if c not in ("pair", "policy_spec", "gamma")])
    out["policy_spec"] = out["policy_spec"].map(short)
    return out.reset_index(drop=True)


def one_row_if_gamma_free(t: pd.DataFrame, values: list[str]) -> pd.DataFrame:
    """Rows of a (pair, policy) whose ``values`` are identical at every initial γ become one row with γ "all":
    the policy does not read its initial γ (replayed traces make such rows exactly equal)."""
    keep = []
    for _, part in t.groupby(["pair", "policy_spec"], sort=False):
        same = len(part) > 1 and all(part[c].astype(str).nunique() == 1 for c in values)
        keep.append(part.iloc[:1].assign(gamma="all") if same else part)
    return pd.concat(keep) if keep else t


def floor_layout(floor: pd.DataFrame) -> pd.DataFrame:
    """The noise floor table; a column the floor lacks (an MLflow-only report keeps the floor alone) shows "–"."""
    if floor is None or floor.empty:
        return pd.DataFrame()
    f = floor.set_index("pair")

    def col(name: str) -> pd.Series:
        return f[name] if name in f else pd.Series(np.nan, index=f.index)

    def spread(a, b, none: str = "–") -> str:
        return f"{a:.1%} / {b:.1%}" if a == a else none

    return pd.DataFrame({"tasks": [int(t) if t == t else "–" for t in col("tasks")],
                         "ar last / ar first": [f"{r:.3f}{interval(lo, hi)}" if r == r else "–" for r, lo, hi in
                                                zip(col("ar_ratio"), col("ar_ratio_lo"), col("ar_ratio_hi"))],
                         "ar/ar spread median / p90": [spread(a, b) for a, b in
                                                       zip(col("spread_median"), col("spread_p90"))],
                         "policy repeats spread median / p90": [
                             spread(a, b, "– (no repeats)") for a, b in
                             zip(col("policy_spread_median"), col("policy_spread_p90"))],
                         "floor": [f"{x:.1%}" for x in f["floor"]],
                         "per-task 5–95 %": [f"{a:.2f} – {b:.2f}" if a == a else "–" for a, b in
                                             zip(col("task_p05"), col("task_p95"))]}, index=f.index)


def floor_warnings(floor: pd.DataFrame) -> str:
    if floor is None or floor.empty:
        return ("\nNo noise floor: these rows have no closing ar run per task (a replay times ar once per trace; a "
                "sweep log written before ar was timed twice has none); differences are judged by their intervals "
                "alone.\n")
    out = ""
    for r in floor.itertuples():
        if r.floor > metrics.FLOOR_WARNING:
            out += (f"\n**WARNING: the noise floor of pair {r.pair} is {r.floor:.1%} (> {metrics.FLOOR_WARNING:.0%}): "
                    f"ar timed against itself moves this much, so no difference smaller than that is claimed.**\n")
    return out


def build_report(summary, speed, frac, fmt: str = "md", t2: pd.DataFrame | None = None,
                 floor: pd.DataFrame | None = None) -> str:
    ci = "mean ± std across initial γ, [95 % interval of the mean]" if t2 is not None else "mean ± std across initial γ"
    parts = ["## Noise floor: ar timed first and last in every task (95 % paired-bootstrap interval)\n",
             render(floor_layout(floor), fmt), floor_warnings(floor),
             f"\n## Table 2: speedup over fixed γ ({ci}); average = mean ± pooled std\n",
             render(table2_layout(summary, t2, floor), fmt),
             "\n## Spec-Bench: speedup vs ar by category group, mean accepted length (MAL)\n",
             render(specbench_layout(summary, speed), fmt),
             "\n† no difference resolved: the 95 % interval includes 1.00 or the difference is inside the noise floor. "
             "Intervals: paired bootstrap over questions, "
             f"{metrics.RESAMPLES} resamples, seed {metrics.SEED}.\n"]
    frac = frac[frac["fraction_of_oracle"].notna()] if frac is not None and len(frac) else frac   # no time: no row
    if frac is not None and len(frac):
        f = frac.copy()
        f["policy_spec"] = f["policy_spec"].map(short)
        bound = summary is not None and "policy" in summary and (summary["policy"] == metrics.ORACLES[0]).any()
        what = ("Efficiency against the oracle (bound): bound time / policy time, the bound being the least "
                "predicted time over every γ schedule of each trace" if bound else "Fraction of oracle throughput")
        head = f"\n## {what}\n"
        if "fraction_of_oracle_lo" in f:        # from the log: "0.72 [0.68, 0.75]"; from MLflow: the point value
            head = f"\n## {what} (95 % paired-bootstrap interval over questions)\n"
            f["fraction_of_oracle"] = [f"{v:.2f}{interval(lo, hi)}" for v, lo, hi in
                                       zip(f["fraction_of_oracle"], f["fraction_of_oracle_lo"], f["fraction_of_oracle_hi"])]
            f = f.drop(columns=["fraction_of_oracle_lo", "fraction_of_oracle_hi"])
        parts += [head, render(f.reset_index(drop=True), fmt)]
    return "".join(parts)


def folder_report(folder: str, fmt: str = "md", costs: str | None = None) -> str:
    """The full report of a sweep's output folder: floor, Table 2, Spec-Bench table, efficiency, batch sizes, the GT
    paper's Table 5 / 9 / 4 layouts where their configs ran (``jobs/report/gt_tables.py``),
    acceptance by draft position, replay agreement and bias, costs and the bound, the regret against the bound and the
    (batch, context) → γ table (``costs``: a roofline what-if of it too) (what ``specsweep report OUTPUT`` prints and
    the sweep writes to report.md)."""
    summary, speed, frac = summary_from_parquet(folder)
    t2, floor = uncertainty_from_parquet(folder)
    return build_report(summary, speed, frac, fmt, t2, floor) + batches_from_parquet(folder) \
        + gt_paper_text(shown_rows(folder, ParquetLog(folder).read())) \
        + positions_section(folder, shown_rows(folder, ParquetLog(folder).read())) \
        + agreement_from_parquet(folder, speed) + costs_from_parquet(folder) + extras_from_parquet(folder, costs)


def extras_from_parquet(folder: str, costs: str | None = None) -> str:
    """Regret against the oracle bound (``jobs/report/regret.py``) and the (batch, context) → γ table
    (``jobs/report/gamma_table.py``, written as ``gamma_table.csv``; with ``costs`` = roofline:GPU[:Q] its what-if too)."""
    rows = ParquetLog(folder).read()
    ok = metrics.ok_rows(rows)
    every_mode = trusted_times(mark_untrusted(ok, untrusted_reasons(folder, ok)))   # regret reads the replayed rows
    text = regret_md(regret_table(every_mode)) + gamma_section(folder, rows)
    return text + (gamma_section(folder, rows, costs) if costs else "")


def batches_from_parquet(folder: str) -> str:
    """The results by batch size (``jobs/report/batches.py``; "" for a sweep run at batch size 1 only), from the rows
    the other figures use: one mode per config."""
    md = batch_table_md(by_batch_size(shown_rows(folder, ParquetLog(folder).read())))
    return (f"\n## By batch size (total tokens/s of a batch; speedup vs ar at the same batch size, 95 % intervals "
            f"over batches)\n\n{md}\n") if md else ""


def compare(a_dir: str, b_dir: str, fmt: str) -> str:
    ta = metrics.table2_from_summary(summary_from_parquet(a_dir)[0])
    tb = metrics.table2_from_summary(summary_from_parquet(b_dir)[0])
    m = ta.merge(tb, on=["pair", "policy_spec"], suffixes=("_a", "_b"))
    m["ratio_b_over_a"] = m["mean_b"] / m["mean_a"]
    m["policy_spec"] = m["policy_spec"].map(short)
    return f"## Compare {a_dir} (a) vs {b_dir} (b)\n" + render(
        m[["pair", "policy_spec", "mean_a", "std_a", "mean_b", "std_b", "ratio_b_over_a"]].set_index(["pair", "policy_spec"]), fmt)
