"""The sweep's closing answer: one row per policy, a few lines, the rest in ``report.md``.

Per pair and policy the row shows the policy at its best initial γ (highest throughput over the
γ grid): speedup vs ``ar`` with its 95 % paired-bootstrap interval, the Table-2 speedup over fixed γ
(mean over the γ grid of throughput(policy, γ) / mean over γ' of throughput(fixed, γ'), GammaTune Table 2, with its
interval: column "vs fixed, γ mean"),
the mean accepted length, and ``~`` after either speedup when it is inside the noise (interval includes 1.00 or
the difference is below the pair's floor).
"""
from __future__ import annotations

import pandas as pd

from jobs.report.intervals import NOT_RESOLVED, verdict
from jobs.report.metrics import ORACLES
from jobs.report.text import short, value_with_interval

WITHIN_NOISE = "~"


def policy_rows(summary: pd.DataFrame, t2: pd.DataFrame | None) -> pd.DataFrame:
    """One row per (pair, policy spec) at its best initial γ, ``ar`` and the bound left out."""
    s = summary[~summary["policy"].isin(("ar",) + ORACLES[:1])].reset_index(drop=True)
    if s.empty:
        return pd.DataFrame()
    ranked = s.assign(_rank=s["throughput"].fillna(float("-inf")))      # untrusted times are NaN: rank them last
    best = ranked.loc[ranked.groupby(["pair", "policy_spec"])["_rank"].idxmax()]
    fixed = {}
    if t2 is not None and len(t2):
        for r in t2.itertuples():
            fixed[(r.pair, r.policy_spec)] = (r.mean, getattr(r, "mean_lo", float("nan")), getattr(r, "mean_hi", float("nan")))
    floors = summary.groupby("pair")["noise_floor"].first() if "noise_floor" in summary else pd.Series(dtype=float)
    rows = []
    for r in best.itertuples():
        lo, hi = getattr(r, "speedup_lo", float("nan")), getattr(r, "speedup_hi", float("nan"))
        value = getattr(r, "speedup", float("nan"))
        noise = getattr(r, "vs_ar", "") == NOT_RESOLVED         # metrics.config_summary's verdict
        vs_fixed = fixed.get((r.pair, r.policy_spec), (float("nan"),) * 3)
        fixed_noise = verdict(*vs_fixed, floors.get(r.pair, float("nan"))) == NOT_RESOLVED
        if r.throughput != r.throughput:                      # no time at any γ (the best is NaN): nothing to rank
            rows.append({"pair": r.pair, "policy": short(r.policy_spec)[:28], "best γ0": "–", "vs ar": "–",
                         "vs fixed, γ mean": "–", "MAL": "–", "_speed": float("nan")})
            continue
        rows.append({"pair": r.pair, "policy": short(r.policy_spec)[:28], "best γ0": int(r.gamma),
                     "vs ar": value_with_interval(value, lo, hi) + (f" {WITHIN_NOISE}" if noise else ""),
                     "vs fixed, γ mean": "1.00" if r.policy == "fixed" else
                     value_with_interval(*vs_fixed) + (f" {WITHIN_NOISE}" if fixed_noise else ""),
                     "MAL": f"{r.mean_accepted_length:.2f}" if r.mean_accepted_length == r.mean_accepted_length else "–",
                     "_speed": value})
    return pd.DataFrame(rows)


def headline(summary: pd.DataFrame, t2: pd.DataFrame | None, bound_line: str, where: list[str]) -> str:
    """The sweep's last lines: per pair a table of policies (best first), the floor, the bound, where the rest is."""
    rows = policy_rows(summary, t2)
    lines = []
    for pair, part in (rows.groupby("pair", sort=False) if len(rows) else []):
        part = part.sort_values("_speed", ascending=False).drop(columns=["pair", "_speed"])
        floor = summary.loc[summary["pair"] == pair, "noise_floor"].dropna() if "noise_floor" in summary else []
        floor_text = f"noise floor {floor.iloc[0]:.1%}" if len(floor) else "no noise floor"
        asked = summary.loc[summary["pair"] == pair, "questions"].max() if "questions" in summary else 2
        if asked == asked and asked < 2:
            floor_text += "; one question: no intervals, so no difference is claimed"
        if part["vs ar"].eq("–").all() and part["best γ0"].eq("–").all():
            lines.append(f"pair {pair} — no speedup to rank: none of its configs has a trusted time (report.md's cost "
                         "section says why)")
            continue
        lines.append(f"pair {pair} — speedup vs ar at each policy's best initial γ ({floor_text}; "
                     f"{WITHIN_NOISE} = within noise):")
        lines.append(part.to_string(index=False))
    if bound_line:
        lines.append(bound_line)
    lines.extend(where)
    return "\n".join(lines)


def per_gamma_text(summary, speed, failed_rows) -> str:
    """Every config's throughput, MAL, acceptance and speedup vs ``ar`` (``--verbose``; the report has it too)."""
    cols = ["pair", "policy_spec", "gamma", "throughput", "mean_accepted_length", "acceptance_rate"]
    s = summary[cols].copy()
    if speed is not None and len(speed):
        s = s.merge(speed[["pair", "policy_spec", "gamma", "overall"]], on=["pair", "policy_spec", "gamma"], how="left")
        s = s.rename(columns={"overall": "speedup_vs_ar"})
    s["policy_spec"] = s["policy_spec"].str.slice(0, 40)
    return s.to_string(index=False, float_format=lambda x: f"{x:.3f}") + f"\nfailed rows: {failed_rows}"
