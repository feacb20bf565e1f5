"""Every metric specsweep reports, each defined once (Spec-Bench, Xia et al. 2024; GammaTune, Gautam et al. 2025, Table 2).

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
- Table-2 "average" over pairs: mean of the per-pair means ± pooled std √(mean σ²)
  (the form that reproduces every row of GammaTune Table 2 from its per-pair cells).

Uncertainty (every ratio above gets a 95 % interval; the bootstrap itself, its percentile
interval and the verdict rule live in ``jobs/report/intervals.py``):
- paired bootstrap over questions: one draw (seed 0) of a pair's question ids serves every config and ``ar``;
  a category group draws (seed 0) over its own questions, so the overall speedup carries the same interval in
  the summary and in the Spec-Bench table; in each resample every ratio is recomputed from per-question sums
  weighted by how often its question was drawn. A ratio against a reference (``ar``, Table 2's fixed γ, the
  oracle) takes both sides over the questions the config and every reference config ran (a failed task or an
  untimed turn leaves a question out of either side, and so out of both).
- noise floor: every task times ``ar`` first and last (``ar_timing`` = first / last).
  The ratio throughput(ar last) / throughput(ar first) over the same questions is a
  comparison of a config with itself; the floor is the largest of: the distance from 1.0 of
  its bootstrap interval's ends, the median per-question spread of the two ``ar`` timings and the median
  spread of repeated live policy runs (:func:`noise_floor`). Metrics other than the floor use the first
  ``ar`` only.
- a comparison is "no difference resolved" when its interval includes 1.0 or its
  distance from 1.0 is within the floor.

Scalar rules, counters and the time-error formula live in ``jobs/report/derived.py``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from jobs.dataset import GROUP_ORDER, group_of
from jobs.report.agreement import modes
from jobs.report.derived import acceptance_rate, pooled_average, table2_speedups
from jobs.report.intervals import (  # noqa: F401 (re-exported)
    NOT_RESOLVED,
    RESAMPLES,
    SEED,
    bootstrap_weights,
    paired_ratio,
    percentile_interval,
    verdict,
)
from jobs.report.intervals import ratio as _ratio
from jobs.report.intervals import with_interval as _with_interval
from jobs.report.bound_scope import bound_check, bound_text, oracle_scope  # noqa: F401 (bound_*: re-exported)
from policies.oracle import BOUND_NAME

CONFIG = ["pair", "policy_spec", "gamma"]
FLOOR_WARNING = 0.05    # warn loudly when the ar/ar noise floor exceeds 5 %


def speedup(config: dict, base: dict, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float, float]:
    """(point, lo, hi): throughput(config) / throughput(base) for two ``summarize`` results over the
    same questions in the same order, with its paired-bootstrap interval over questions."""
    if len(config["tok_s"]) != len(base["tok_s"]):
        raise ValueError(f"speedup needs the same questions: {len(config['tok_s'])} vs {len(base['tok_s'])}")
    return paired_ratio(config["tok_s"], base["tok_s"], resamples, seed)


# ---------------------------------------------------------------- on result tables
def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df else df


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """Successful rows minus the closing ``ar`` control run of each task (kept for the noise floor)."""
    ok = ok_rows(df)
    return ok[ok["ar_timing"].fillna("") != "last"] if "ar_timing" in ok else ok


def per_question(df: pd.DataFrame) -> pd.DataFrame:
    """One row per config × question × repeat with its tok/s and accept-length sums."""
    d = measured(df).copy()
    d["al_sum"] = d["accept_lengths"].map(lambda a: int(sum(a)) if a is not None else 0)
    d["steps"] = d["accept_lengths"].map(lambda a: len(a) if a is not None else 0)
    d["untimed"] = d["wall_time"].isna()                  # an untrusted predicted time (derived.trusted_times)
    g = d.groupby(CONFIG + ["policy", "repeat", "question_id", "category"], as_index=False, dropna=False)
    q = g.agg(new_tokens=("new_tokens", "sum"), wall_time=("wall_time", "sum"), al_sum=("al_sum", "sum"),
              steps=("steps", "sum"), untimed=("untimed", "any"))
    q.loc[q["untimed"], "wall_time"] = np.nan             # a turn without a time leaves its question without one
    q["tok_s"] = q["new_tokens"] / q["wall_time"].where(q["wall_time"] > 0)
    q = q.drop(columns="untimed")
    q["group"] = q["category"].map(group_of)
    return q


class QuestionSums:
    """Per-config sums over each question's rows, as matrices [configs, questions]:
    ``tok`` Σ tok/s (repeats), ``n`` rows counted, ``al`` Σ accept lengths, ``steps`` target forwards.
    With bootstrap weights W [B, Q]: throughput = W·tok / W·n, mean accepted length = W·al / W·steps."""

    def __init__(self, q: pd.DataFrame, qids: Sequence[int], keys: list[str]):
        self.qids = list(qids)
        self.keys = keys
        piv = {}
        for col, agg in (("tok_s", "sum"), ("question_id", "count"), ("al_sum", "sum"), ("steps", "sum")):
            if q.empty:
                piv[col] = pd.DataFrame(columns=self.qids)
                continue
            piv[col] = q.pivot_table(index=keys, columns="question_id", values=col if col != "question_id" else "tok_s",
                                     aggfunc=agg, fill_value=0).reindex(columns=self.qids, fill_value=0)
        self.index = piv["tok_s"].index
        self.tok = piv["tok_s"].to_numpy(float, copy=True)
        self.n = piv["question_id"].reindex(self.index).to_numpy(float, copy=True)
        self.al = piv["al_sum"].reindex(self.index).to_numpy(float, copy=True)
        self.steps = piv["steps"].reindex(self.index).to_numpy(float, copy=True)

    def row(self, key) -> int:
        return self.index.get_loc(key)

    def paired(self, w: np.ndarray, i: int, refs: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """([draws] throughput of config ``i``, [draws] mean throughput of configs ``refs``), both over only the
        questions ``i`` and every ref ran (n > 0 on both sides: a question one side missed leaves both)."""
        both = (self.n[i] > 0) & (self.n[refs] > 0).all(axis=0)
        side = lambda r: _ratio(w @ (self.tok[r] * both), w @ (self.n[r] * both))   # noqa: E731
        return side(i), np.column_stack([side(r) for r in refs]).mean(axis=1)

    def throughput(self, w: np.ndarray) -> np.ndarray:
        """[len(w), configs] throughput under each weighting (w = ones → the point estimate)."""
        return _ratio(w @ self.tok.T, w @ self.n.T)

    def mal(self, w: np.ndarray) -> np.ndarray:
        return _ratio(w @ self.al.T, w @ self.steps.T)


def policy_repeat_spread(df: pd.DataFrame) -> np.ndarray:
    """|tok/s(repeat r) / tok/s(repeat 0) − 1| for every live policy config (not ``ar``), question and repeat
    r ≥ 1: how far repeated live runs of one policy config land apart (empty without repeats)."""
    live = df[(df["policy"] != "ar") & (modes(df) == "live")]
    if live.empty or live["repeat"].nunique() < 2:
        return np.array([])
    q = live.groupby(CONFIG + ["question_id", "repeat"])[["new_tokens", "wall_time"]].sum()
    tok_s = (q["new_tokens"] / q["wall_time"].where(q["wall_time"] > 0)).unstack("repeat")
    if 0 not in tok_s:
        return np.array([])
    ratios = tok_s.drop(columns=0).div(tok_s[0], axis=0) - 1
    vals = np.abs(ratios.to_numpy().ravel())
    return vals[np.isfinite(vals)]


def noise_floor(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per pair: the ar/ar control (``ar`` timed last ÷ ``ar`` timed first in the same tasks).

    Columns: tasks, ar_ratio (throughput(last) / throughput(first), questions paired) with its
    bootstrap interval; the spread of repeats: per question, |tok/s(last) / tok/s(first) − 1| of the
    two timings of the same ar config, as spread_median and spread_p90 — how far two runs of one config
    land apart, which does not shrink with more questions; the same for repeated live runs of policy
    configs (:func:`policy_repeat_spread`: policy_spread_median, policy_spread_p90; NaN without
    repeats); floor = max(|lo − 1|, |hi − 1|, spread_median, policy_spread_median): a difference smaller than it is "within noise" (docs/uncertainty.md); and the
    per-task spread of the ratio (task_p05, task_p95: 5th and 95th percentiles of each task's
    Σtokens/Σtime ratio). Empty when the log holds no closing ``ar`` runs (logs written before it existed).
    """
    ok = ok_rows(df)
    if "ar_timing" not in ok or not (ok["ar_timing"] == "last").any():
        return pd.DataFrame(columns=["pair", "tasks", "ar_ratio", "ar_ratio_lo", "ar_ratio_hi", "spread_median",
                                     "spread_p90", "floor"])
    ar = ok[ok["policy"] == "ar"].copy()
    ar["ar_timing"] = ar["ar_timing"].fillna("first").replace("", "first")
    out = []
    for pair, part in ar.groupby("pair"):
        q = per_question(part.assign(ar_timing="").assign(policy_spec=part["ar_timing"]))
        qids = sorted(q["question_id"].unique())
        sums = QuestionSums(q, qids, ["policy_spec"])
        if "first" not in sums.index or "last" not in sums.index:
            continue
        first, last = sums.row("first"), sums.row("last")
        both = (sums.n[first] > 0) & (sums.n[last] > 0)      # paired: questions timed both ways
        for m in (sums.tok, sums.n):
            m[:, ~both] = 0
        w = bootstrap_weights(len(qids), resamples, seed)
        thr, thr0 = sums.throughput(w), sums.throughput(np.ones((1, len(qids))))[0]
        row = {"pair": pair}
        _with_interval(row, "ar_ratio", thr0[last] / thr0[first], thr[:, last] / thr[:, first])
        per_q = sums.tok / np.where(sums.n > 0, sums.n, np.nan)    # [2, questions] mean tok/s
        spread = np.abs(per_q[last] / per_q[first] - 1)[both]
        spread = spread[np.isfinite(spread)]
        row["spread_median"] = float(np.median(spread)) if len(spread) else np.nan
        row["spread_p90"] = float(np.percentile(spread, 90)) if len(spread) else np.nan
        pol = policy_repeat_spread(ok[ok["pair"] == pair])
        row["policy_spread_median"] = float(np.median(pol)) if len(pol) else np.nan
        row["policy_spread_p90"] = float(np.percentile(pol, 90)) if len(pol) else np.nan
        row["floor"] = float(np.nanmax([abs(row["ar_ratio_lo"] - 1), abs(row["ar_ratio_hi"] - 1), row["spread_median"],
                                        row["policy_spread_median"]]))
        tasks = part.groupby(["task_key", "ar_timing"])[["new_tokens", "wall_time"]].sum()
        rate = (tasks["new_tokens"] / tasks["wall_time"]).unstack("ar_timing")
        per_task = (rate["last"] / rate["first"]).dropna() if {"first", "last"} <= set(rate.columns) else pd.Series(dtype=float)
        row["tasks"] = len(per_task)
        row["task_p05"], row["task_p95"] = (np.percentile(per_task, [5, 95]) if len(per_task) else (np.nan, np.nan))
        out.append(row)
    return pd.DataFrame(out)


def config_summary(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per config: throughput and mean accepted length with 95 % bootstrap intervals, acceptance
    rate, questions, generations, new tokens; plus speedup vs ``ar`` (overall) with its interval,
    the pair's noise floor and the verdict (faster / slower / no difference resolved)."""
    ok = measured(df)
    q = per_question(ok)
    keys = CONFIG + ["policy"]
    qids = sorted(q["question_id"].unique())
    sums = QuestionSums(q, qids, keys)
    w = bootstrap_weights(len(qids), resamples, seed)
    thr, mal = sums.throughput(w), sums.mal(w)
    one = np.ones((1, len(qids)))
    thr0, mal0 = sums.throughput(one)[0], sums.mal(one)[0]
    lo_t, hi_t = percentile_interval(thr)
    lo_m, hi_m = percentile_interval(mal)
    nq = (sums.n > 0).sum(axis=1)
    base = pd.DataFrame(list(sums.index), columns=keys)
    base = base.assign(throughput=thr0, throughput_lo=lo_t, throughput_hi=hi_t, questions=nq,
                       mal_lo=lo_m, mal_hi=hi_m, _mal=mal0)
    rows = []
    for key, part in ok.groupby(CONFIG):
        acc = [x for xs in part["accepted"] for x in xs]
        dr = [x for xs in part["drafted"] for x in xs]
        rows.append(dict(zip(CONFIG, key), acceptance_rate=acceptance_rate(acc, dr), generations=len(part),
                         new_tokens=int(part["new_tokens"].sum())))
    out = base.merge(pd.DataFrame(rows), on=CONFIG, how="left").rename(columns={"_mal": "mean_accepted_length"})
    cols = ["pair", "policy_spec", "gamma", "policy", "throughput", "throughput_lo", "throughput_hi", "questions",
            "mean_accepted_length", "mal_lo", "mal_hi", "acceptance_rate", "generations", "new_tokens"]
    out = out[cols]
    sp = speedup_vs_ar(df, resamples, seed, groups=("overall",))
    if len(sp):
        sp = sp.rename(columns={"overall": "speedup", "overall_lo": "speedup_lo", "overall_hi": "speedup_hi"})
        out = out.merge(sp[CONFIG + ["speedup", "speedup_lo", "speedup_hi"]], on=CONFIG, how="left")
    floor = noise_floor(df, resamples, seed)
    out["noise_floor"] = out["pair"].map(dict(zip(floor["pair"], floor["floor"]))) if len(floor) else np.nan
    if "speedup" in out:
        out["vs_ar"] = [verdict(r.speedup, r.speedup_lo, r.speedup_hi, r.noise_floor) if r.policy != "ar" else ""
                        for r in out.itertuples()]
    return out


def speedup_vs_ar(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED,
                  groups: Sequence[str] = GROUP_ORDER) -> pd.DataFrame:
    """Spec-Bench speedup per config and category group (ar measured on the same pair and
    questions), each with a paired-bootstrap interval ``<group>_lo``/``<group>_hi`` drawn over that
    group's questions (both sides of a config's ratio on only the questions the config and ``ar`` both ran)."""
    q = per_question(df)
    out = []
    for pair, qp in q.groupby("pair"):
        if not (qp["policy"] == "ar").any():
            continue
        keys = ["policy_spec", "gamma", "policy"]
        configs = qp[qp["policy"] != "ar"][keys].drop_duplicates().itertuples(index=False)
        rows = {tuple(k): {"pair": pair, "policy_spec": k[0], "gamma": k[1], "policy": k[2]} for k in configs}
        for grp in groups:
            sel = qp if grp == "overall" else qp[qp["group"] == grp]
            qids = sorted(sel["question_id"].unique())
            if not qids:
                for r in rows.values():
                    r[grp], r[f"{grp}_lo"], r[f"{grp}_hi"] = (np.nan,) * 3
                continue
            sums = QuestionSums(sel, qids, keys)
            w = bootstrap_weights(len(qids), resamples, seed)     # overall: config_summary's draw, its interval
            one = np.ones((1, len(qids)))
            ar = [k for k in sums.index if k[2] == "ar"][0] if any(k[2] == "ar" for k in sums.index) else None
            for key, r in rows.items():
                if ar is None or key not in sums.index:
                    r[grp], r[f"{grp}_lo"], r[f"{grp}_hi"] = (np.nan,) * 3
                    continue
                i, a = sums.row(key), sums.row(ar)
                ratio = lambda ww: np.divide(*sums.paired(ww, i, [a]))   # on the questions both ran  # noqa: E731
                _with_interval(r, grp, float(ratio(one)[0]), ratio(w))
        out.extend(rows.values())
    return pd.DataFrame(out)


def table2(df: pd.DataFrame, baseline: str = "fixed", resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """GammaTune Table 2 per pair and policy: mean ± std over γ of throughput(m, γ) / mean_γ'
    throughput(fixed, γ'), with paired-bootstrap intervals on the mean (mean_lo, mean_hi) and on
    the std (std_lo, std_hi); the rows with pair = "average" hold the pooled average over pairs
    (mean of means, √(mean σ²)) and its interval, from the same resamples."""
    q = per_question(df)
    keys = CONFIG + ["policy"]
    qids = sorted(q["question_id"].unique())
    if not qids:
        return pd.DataFrame()
    sums = QuestionSums(q, qids, keys)
    w = np.vstack([np.ones((1, len(qids))), bootstrap_weights(len(qids), resamples, seed)])
    index = pd.DataFrame(list(sums.index), columns=keys)
    out, per_spec = [], {}
    for pair, sp in index.groupby("pair"):
        fixed = sp[sp["policy"] == baseline]
        if fixed.empty:
            continue
        for spec, part in sp[sp["policy"] != "ar"].groupby("policy_spec"):
            # each γ against fixed on the questions that γ and every fixed γ ran (all of them unless some failed)
            s = np.column_stack([np.divide(*sums.paired(w, i, list(fixed.index))) for i in part.index])  # [1 + B, γs]
            mean = s.mean(axis=1)
            std = s.std(axis=1, ddof=1) if s.shape[1] > 1 else np.zeros(len(s))
            per_spec.setdefault(spec, []).append((mean, std))
            row = {"pair": pair, "policy_spec": spec, "gammas": s.shape[1]}
            _with_interval(row, "mean", float(mean[0]), mean[1:])
            _with_interval(row, "std", float(std[0]), std[1:])
            out.append(row)
    for spec, cells in per_spec.items():
        means = np.mean([m for m, _ in cells], axis=0)
        stds = np.sqrt(np.mean([sd ** 2 for _, sd in cells], axis=0))     # pooled: √(mean σ²)
        row = {"pair": "average", "policy_spec": spec, "pairs": len(cells)}
        _with_interval(row, "mean", float(means[0]), means[1:])
        _with_interval(row, "std", float(stds[0]), stds[1:])
        out.append(row)
    return pd.DataFrame(out)


def table2_from_summary(s: pd.DataFrame, baseline: str = "fixed") -> pd.DataFrame:
    """``table2`` on per-config throughputs only (columns pair, policy, policy_spec, gamma,
    throughput) — no intervals: used where only summaries exist (MLflow runs)."""
    out = []
    for pair, sp in s.groupby("pair"):        # an untrusted time (NaN throughput) makes its cells NaN, as table2's
        fixed = sp[sp["policy"] == baseline]
        if fixed["throughput"].isna().all():              # no baseline time at all: no row
            continue
        fixed_by_g = dict(zip(fixed["gamma"], fixed["throughput"]))
        for spec, part in sp[sp["policy"] != "ar"].groupby("policy_spec"):
            mean, std = table2_speedups(dict(zip(part["gamma"], part["throughput"])), fixed_by_g)
            out.append({"pair": pair, "policy_spec": spec, "mean": mean, "std": std, "gammas": len(part)})
    t = pd.DataFrame(out)
    if len(t):
        avg = [{"pair": "average", "policy_spec": spec, "pairs": len(part),
                **dict(zip(("mean", "std"), pooled_average(part["mean"].tolist(), part["std"].tolist())))}
               for spec, part in t.groupby("policy_spec")]
        t = pd.concat([t, pd.DataFrame(avg)], ignore_index=True)
    return t


ORACLES = (BOUND_NAME, "oracle")       # the bound where replay computed it, else the live oracle policy


def fraction_of_oracle(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per config: throughput / the pair's reference throughput, with the 95 % paired-bootstrap interval over
    questions (one draw of questions serves both sides). The reference is the oracle bound (``oracle-bound``
    rows, ``actors/tracing/oracle_bound.py``) where replay computed it — the fraction is then the policy's efficiency,
    bound time / policy time on the same tokens — else the ``oracle`` policy (mean over its configs). Only rows
    priced on the reference's cost surface and in its mode take part (``jobs/report/bound_scope.py``: the bound
    against replayed chain configs at B = 1, as ``bound_check``)."""
    q = per_question(measured(oracle_scope(df)))
    out = []
    for pair, qp in q.groupby("pair"):
        qids = sorted(qp["question_id"].unique())
        sums = QuestionSums(qp, qids, CONFIG + ["policy"])
        policies = [k[-1] for k in sums.index]
        ref = next((o for o in ORACLES if o in policies), None)
        orc = [i for i, p in enumerate(policies) if p == ref]
        if not orc:
            continue
        w = np.vstack([np.ones((1, len(qids))), bootstrap_weights(len(qids), resamples, seed)])
        for i, key in enumerate(sums.index):
            if policies[i] in (ref, "ar"):
                continue
            frac = np.divide(*sums.paired(w, i, orc))          # both sides on the questions i and the reference ran
            row = dict(zip(CONFIG, key[:len(CONFIG)]))
            _with_interval(row, "fraction_of_oracle", float(frac[0]), frac[1:])
            out.append(row)
    return pd.DataFrame(out, columns=["pair", "policy_spec", "gamma", "fraction_of_oracle", "fraction_of_oracle_lo",
                                      "fraction_of_oracle_hi"])
