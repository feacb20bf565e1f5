"""Every metric specsweep reports, each defined once (GUIDE §3.2).

Scalar rules (unit-tested against hand-worked values):
- throughput of a generation = new_tokens / wall_time (prefill included).
- per-question tok/s = Σ_turns new_tokens / Σ_turns wall_time (Spec-Bench speed.py).
- throughput of a config = mean over questions (× repeats) of per-question tok/s.
- mean accepted length = mean of accept_lengths over all target forwards (bonus token
  included; Spec-Bench's #MAT).
- acceptance rate α = Σ accepted / Σ drafted.
- Spec-Bench speedup = throughput(config) / throughput(ar) on the same questions and
  device, per category group (mt_bench, translation, summarization, qa,
  math_reasoning, rag, overall).
- Table-2 speedup (GammaTune Table 2): s(m, g) = throughput(m, g) / mean_{g'}
  throughput(fixed, g'); reported as mean_g s ± sample std_g s (ddof = 1).
- fraction of oracle = throughput(policy, g) / throughput(oracle).
"""
from __future__ import annotations

import statistics
from typing import Sequence

import pandas as pd

from jobs.dataset import GROUP_ORDER, group_of

CONFIG = ["pair", "policy_spec", "gamma"]


# ---------------------------------------------------------------- scalar definitions
def throughput(new_tokens: float, wall_time: float) -> float:
    return new_tokens / wall_time if wall_time > 0 else float("nan")


def question_tok_s(new_tokens: Sequence[int], wall_times: Sequence[float]) -> float:
    return throughput(sum(new_tokens), sum(wall_times))


def mean_accepted_length(accept_lengths: Sequence[int]) -> float:
    return sum(accept_lengths) / len(accept_lengths) if len(accept_lengths) else float("nan")


def acceptance_rate(accepted: Sequence[int], drafted: Sequence[int]) -> float:
    d = sum(drafted)
    return sum(accepted) / d if d else float("nan")


def table2_speedups(throughput_by_gamma: dict[int, float], fixed_by_gamma: dict[int, float]) -> tuple[float, float]:
    """(mean, sample std) over initial γ of throughput(m, γ) / mean_γ' throughput(fixed, γ')."""
    base = statistics.fmean(fixed_by_gamma.values())
    s = [t / base for t in throughput_by_gamma.values()]
    return statistics.fmean(s), (statistics.stdev(s) if len(s) > 1 else 0.0)


# ---------------------------------------------------------------- on result tables
def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df else df


def per_question(df: pd.DataFrame) -> pd.DataFrame:
    """One row per config × question × repeat with its tok/s."""
    g = ok_rows(df).groupby(CONFIG + ["policy", "repeat", "question_id", "category"], as_index=False)
    q = g.agg(new_tokens=("new_tokens", "sum"), wall_time=("wall_time", "sum"))
    q["tok_s"] = q["new_tokens"] / q["wall_time"]
    q["group"] = q["category"].map(group_of)
    return q


def config_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per config: throughput, mean accepted length, acceptance rate, questions, generations."""
    ok = ok_rows(df)
    q = per_question(ok)
    thr = q.groupby(CONFIG + ["policy"], as_index=False).agg(throughput=("tok_s", "mean"), questions=("question_id", "nunique"))
    rows = []
    for key, part in ok.groupby(CONFIG):
        al = [x for xs in part["accept_lengths"] for x in xs]
        acc = [x for xs in part["accepted"] for x in xs]
        dr = [x for xs in part["drafted"] for x in xs]
        rows.append(dict(zip(CONFIG, key), mean_accepted_length=mean_accepted_length(al),
                         acceptance_rate=acceptance_rate(acc, dr), generations=len(part),
                         new_tokens=int(part["new_tokens"].sum())))
    return thr.merge(pd.DataFrame(rows), on=CONFIG, how="left")


def speedup_vs_ar(df: pd.DataFrame) -> pd.DataFrame:
    """Spec-Bench speedup per config and category group (ar measured on the same pair and questions)."""
    q = per_question(df)
    out = []
    for pair, qp in q.groupby("pair"):
        ar = qp[qp["policy"] == "ar"]
        if ar.empty:
            continue
        for key, part in qp[qp["policy"] != "ar"].groupby(["policy_spec", "gamma", "policy"]):
            row = {"pair": pair, "policy_spec": key[0], "gamma": key[1], "policy": key[2]}
            for grp in GROUP_ORDER:
                sel = part if grp == "overall" else part[part["group"] == grp]
                base = ar[ar["question_id"].isin(sel["question_id"])]
                row[grp] = sel["tok_s"].mean() / base["tok_s"].mean() if len(sel) and len(base) else float("nan")
            out.append(row)
    return pd.DataFrame(out)


def table2(df: pd.DataFrame, baseline: str = "fixed") -> pd.DataFrame:
    """GammaTune Table 2: per pair and policy, mean ± std over γ of throughput / mean_γ throughput(fixed)."""
    return table2_from_summary(config_summary(df), baseline)


def table2_from_summary(s: pd.DataFrame, baseline: str = "fixed") -> pd.DataFrame:
    """``table2`` on per-config throughputs (columns pair, policy, policy_spec, gamma, throughput)."""
    out = []
    for pair, sp in s.groupby("pair"):
        fixed = sp[sp["policy"] == baseline]
        if fixed.empty:
            continue
        fixed_by_g = dict(zip(fixed["gamma"], fixed["throughput"]))
        for spec, part in sp[sp["policy"] != "ar"].groupby("policy_spec"):
            mean, std = table2_speedups(dict(zip(part["gamma"], part["throughput"])), fixed_by_g)
            out.append({"pair": pair, "policy_spec": spec, "mean": mean, "std": std, "gammas": len(part)})
    return pd.DataFrame(out)


def fraction_of_oracle(df: pd.DataFrame) -> pd.DataFrame:
    s = config_summary(df)
    out = []
    for pair, sp in s.groupby("pair"):
        orc = sp[sp["policy"] == "oracle"]
        if orc.empty:
            continue
        best = orc["throughput"].mean()
        for _, r in sp[~sp["policy"].isin(["oracle", "ar"])].iterrows():
            out.append({"pair": pair, "policy_spec": r["policy_spec"], "gamma": r["gamma"],
                        "fraction_of_oracle": r["throughput"] / best})
    return pd.DataFrame(out)
