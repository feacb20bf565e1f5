"""Regret against the oracle bound, and the gap to the best fixed K in hindsight, per replayed config.

Rules (one unit = one recorded turn: pair, question, turn, repeat; times are replay's predictions):

- the turn's **regret** of a config = its predicted time on the turn − the oracle bound's least time on the same
  trace (``actors/tracing/oracle_bound.py``): the cumulative time regret over the turn's steps as BanditSpec ("BanditSpec:
  Adaptive Speculative Decoding via Bandit Algorithms", Hou et al. 2025) reports it — Σ over the turn's steps of
  (the policy's step time − the best schedule's), summed over the whole turn so the two may take different steps.
  Prefill is the trace's one measured (or predicted) value on both sides and cancels. It is ≥ 0 by construction.
- the turn's **gap to the best fixed K in hindsight** = the config's time − min over the replayed ``fixed`` γ
  of that turn's time (the best single fixed γ chosen knowing the turn); negative when the config beat every fixed γ.
- per config: the mean over questions of each question's summed regret (and gap: over the questions every turn of
  which has a replayed ``fixed`` row), in milliseconds, and the
  regret as a share of the bound's time (Σ regret / Σ bound time); 95 % paired-bootstrap intervals over questions
  (``jobs/report/intervals.py``: one draw of question ids serves every config).

Only replayed rows on turns that carry an ``oracle-bound`` row count (the bound exists only under the cost model
that priced those rows); batch policies are left out (replay times them on the batch cost surface, not the
bound's model), as are rows without a trusted time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from jobs.report.intervals import RESAMPLES, SEED, bootstrap_weights, percentile_interval
from jobs.report.text import interval, short
from policies.base import BatchPolicy
from policies.oracle import BOUND_NAME
from policies.registry import REGISTRY

TURN = ["pair", "question_id", "turn", "repeat"]
CONFIG = ["pair", "policy_spec", "gamma"]
COLUMNS = CONFIG + ["questions", "regret_ms", "regret_ms_lo", "regret_ms_hi", "regret_share", "regret_share_lo",
                    "regret_share_hi", "gap_questions", "gap_fixed_ms", "gap_fixed_ms_lo", "gap_fixed_ms_hi"]


def turn_regrets(df: pd.DataFrame) -> pd.DataFrame:
    """One row per replayed config × turn with a bound: its time, the bound's, the best fixed γ's, regret and gap."""
    need = {"mode", "policy", "wall_time"}
    if not need <= set(df.columns) or not (df["policy"] == BOUND_NAME).any():
        return pd.DataFrame(columns=CONFIG + ["question_id", "turn", "repeat", "time", "bound", "best_fixed"])
    batch = [n for n, (cls, *_) in REGISTRY.items() if issubclass(cls, BatchPolicy)]
    ok = df[(df["status"] == "ok") if "status" in df else slice(None)]
    rep = ok[(ok["mode"] == "replay") & ~ok["policy"].isin(batch) & ok["wall_time"].notna()]
    if "batch_size" in rep:
        rep = rep[rep["batch_size"].fillna(1).astype(int) == 1]
    rep = rep.reset_index(drop=True)
    bound = rep[rep["policy"] == BOUND_NAME].groupby(TURN, as_index=False)["wall_time"].min()
    fixed = rep[rep["policy"] == "fixed"].groupby(TURN, as_index=False)["wall_time"].min()
    cfg = rep[rep["policy"] != BOUND_NAME].groupby(CONFIG + TURN[1:], as_index=False)["wall_time"].sum()
    cfg = (cfg.rename(columns={"wall_time": "time"}).merge(bound.rename(columns={"wall_time": "bound"}), on=TURN)
           .merge(fixed.rename(columns={"wall_time": "best_fixed"}), on=TURN, how="left"))
    cfg["regret"] = cfg["time"] - cfg["bound"]
    cfg["gap_fixed"] = cfg["time"] - cfg["best_fixed"]
    return cfg


def regret_table(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per config (pair, spec, γ): mean regret per question (ms), regret share of the bound's time and mean gap to
    the best fixed γ in hindsight (ms), each with its 95 % paired-bootstrap interval (module docstring)."""
    t = turn_regrets(df)
    out = []
    for pair, part in t.groupby("pair"):
        qids = sorted(part["question_id"].unique())
        index = {q: i for i, q in enumerate(qids)}
        w = np.vstack([np.ones((1, len(qids))), bootstrap_weights(len(qids), resamples, seed)])
        for (spec, gamma), c in part.groupby(["policy_spec", "gamma"]):
            vec = {k: np.zeros(len(qids)) for k in ("regret", "bound", "gap_fixed", "ran")}
            for r in c.itertuples(index=False):
                i = index[r.question_id]
                vec["regret"][i] += r.regret
                vec["bound"][i] += r.bound
                vec["gap_fixed"][i] += r.gap_fixed if r.gap_fixed == r.gap_fixed else np.nan
                vec["ran"][i] = 1
            ran = vec["ran"] > 0
            has_fixed = ran & ~np.isnan(vec["gap_fixed"])      # the gap: questions every turn of which has a fixed row
            row = {"pair": pair, "policy_spec": spec, "gamma": int(gamma), "questions": int(ran.sum()),
                   "gap_questions": int(has_fixed.sum())}
            with np.errstate(all="ignore"):
                regret = 1e3 * (w[:, ran] @ vec["regret"][ran]) / w[:, ran].sum(axis=1)
                share = (w[:, ran] @ vec["regret"][ran]) / (w[:, ran] @ vec["bound"][ran])
                gap = 1e3 * (w[:, has_fixed] @ vec["gap_fixed"][has_fixed]) / w[:, has_fixed].sum(axis=1)
            for name, s, n in (("regret_ms", regret, ran.sum()), ("regret_share", share, ran.sum()),
                               ("gap_fixed_ms", gap, has_fixed.sum())):
                lo, hi = percentile_interval(s[1:]) if n > 1 else (np.nan, np.nan)
                row[name], row[f"{name}_lo"], row[f"{name}_hi"] = float(s[0]), float(lo), float(hi)
            out.append(row)
    return pd.DataFrame(out, columns=COLUMNS)


def regret_md(table: pd.DataFrame) -> str:
    """The report's section ("" when no replayed row has a bound on its turn)."""
    if table is None or table.empty:
        return ""
    lines = ["\n## Regret against the oracle bound (replayed rows, one cost model; 95 % paired-bootstrap intervals "
             "over questions)\n",
             "Regret = a turn's predicted time − the bound's least time on the same trace, summed over the "
             "question's turns, mean over questions; gap = the same against the best fixed γ of each turn in "
             "hindsight (negative: better than every fixed γ replayed).\n",
             "| pair | policy | γ | questions | regret ms/question | regret / bound time | gap to best fixed K ms |",
             "|---|---|---|---|---|---|---|"]
    for r in table.sort_values(["pair", "regret_share", "policy_spec", "gamma"]).itertuples():
        gap = (f"{r.gap_fixed_ms:.2f}{interval(r.gap_fixed_ms_lo, r.gap_fixed_ms_hi)}" if r.gap_questions
               else "– (no fixed γ replayed)")
        if 0 < r.gap_questions < r.questions:
            gap += f" (the {r.gap_questions} of {r.questions} questions with a fixed γ replayed)"
        lines.append(f"| {r.pair} | {short(r.policy_spec)} | {r.gamma or '–'} | {r.questions} | "
                     f"{r.regret_ms:.2f}{interval(r.regret_ms_lo, r.regret_ms_hi)} | "
                     f"{r.regret_share:.1%}{_pct(r.regret_share_lo, r.regret_share_hi)} | {gap} |")
    return "\n".join(lines) + "\n"


def _pct(lo: float, hi: float) -> str:
    return f" [{lo:.1%}, {hi:.1%}]" if lo == lo and hi == hi else ""
