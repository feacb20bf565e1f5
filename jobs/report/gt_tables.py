"""The GT paper's table layouts ("Max-Speedup Speculative Sampling: A Generic Tree Construction Principle"), from the
rows the report's other figures use (``jobs/report/batches.py`` defines batches, throughput and the intervals).

- **Table 5** (§4.5.2, per batch size): EAGLE-2 (``eagle2``) and GT(d) (``gt-dynamic``) side by side at each B —
  total tok/s of a batch, speedup vs ``ar`` at that B, mean accepted length (MAL) — and Δ = GT(d) − EAGLE-2 in
  speedup (95 % paired-bootstrap interval over batches) and in MAL. One row per pair × B × (EAGLE-2 config,
  GT(d) config) pairing.
- **Table 9** (A.6, B = 2, 7 speculative tokens): fixed γ = 7 (the baseline), ``tetris`` and the GT rules
  (``gt`` per row, ``gt-batch``) at B = 2 with initial γ 7: Time = Σ batch times in seconds, throughput, and
  Δ = baseline time / method time (the paper's "Δ" rows; > 1 is faster) with its interval, and beside it the
  padding share of the verified slots (``jobs/report/batches.py::pad_share``): our batch forward pads every row to
  the longest, so Tetris's ragged selection is priced at the padded width; the column shows what that costs.
- **Table 4** (§4.5.1, a c sweep): per pair, B and GT policy, one column per ``c`` (fixed numbers ascending, then
  ``auto`` — the measured M_D / M_T — and ``params`` — the parameter ratio of A.8 / Table 10), rows Speed
  (tok/s), speedup vs ``ar`` and L (MAL).

A layout whose configs did not run is left out; ``gt_paper_text`` is "" when none applies.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from jobs.report.batches import ar_totals, batches, interval, pad_share, speedup_samples, unit_totals, weights
from jobs.report.intervals import RESAMPLES, SEED
from jobs.report.text import interval as interval_text, render, short

GT_CHAIN = ("gt", "gt-batch")
GT_POLICIES = ("gt", "gt-batch", "gt-static", "gt-dynamic")


def config_figures(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per pair × B × config: tokens, time, throughput, speedup vs ``ar`` with its interval, MAL, and the bootstrap
    samples of speedup and time (``sp_samples``, ``t_samples``: row 0 the point; for paired differences); no ``ar``."""
    b = batches(df)
    out = []
    for (pair, size), part in b.groupby(["base_pair", "batch_size"]):
        n, totals = unit_totals(part)
        if not any(k[0] == "ar" for k in totals):
            continue
        w = weights(n, resamples, seed)
        ar_tok, ar_t = ar_totals(totals)
        for (policy, spec, gamma), (tok, t) in totals.items():
            if policy == "ar":
                continue
            thr, sp = speedup_samples(tok, t, ar_tok, ar_t, w)
            cp = part[(part["policy_spec"] == spec) & (part["gamma"] == gamma)]
            lo, hi = interval(sp[1:], n)
            out.append({"pair": pair, "batch_size": int(size), "policy": policy, "policy_spec": spec,
                        "gamma": int(gamma), "batches": n, "tokens": float(tok.sum()), "time": float(t.sum()),
                        "throughput": float(thr[0]), "speedup": float(sp[0]), "speedup_lo": lo, "speedup_hi": hi,
                        "mal": cp["al_sum"].sum() / max(cp["steps"].sum(), 1), "pad": pad_share(cp),
                        "sp_samples": sp, "t_samples": w @ t})
    return pd.DataFrame(out)


def _diff_ci(a: np.ndarray, b: np.ndarray, n: int) -> tuple[float, float]:
    """The interval of the paired difference b − a over the shared resamples (row 0 is the point)."""
    return interval((b - a)[1:], n)


def table5(fig: pd.DataFrame) -> pd.DataFrame:
    """EAGLE-2 and GT(d) side by side per pair × B with Δ (module docstring)."""
    rows = []
    if not len(fig):
        return pd.DataFrame()
    for (pair, size), part in fig.groupby(["pair", "batch_size"]):
        for e in part[part["policy"] == "eagle2"].itertuples():
            for g in part[part["policy"] == "gt-dynamic"].itertuples():
                lo, hi = _diff_ci(e.sp_samples, g.sp_samples, e.batches)
                rows.append({"pair": pair, "B": size, "EAGLE-2": short(e.policy_spec),
                             "EAGLE-2 tok/s": e.throughput, "EAGLE-2 speed": f"{e.speedup:.2f}×"
                             + interval_text(e.speedup_lo, e.speedup_hi), "EAGLE-2 MAL": e.mal,
                             "GT(d)": short(g.policy_spec), "GT(d) tok/s": g.throughput,
                             "GT(d) speed": f"{g.speedup:.2f}×" + interval_text(g.speedup_lo, g.speedup_hi), "GT(d) MAL": g.mal,
                             "Δ speed": f"{g.speedup - e.speedup:+.2f}×" + interval_text(lo, hi), "Δ MAL": g.mal - e.mal})
    return pd.DataFrame(rows)


def table9(fig: pd.DataFrame, batch_size: int = 2, gamma: int = 7) -> pd.DataFrame:
    """Fixed γ / Tetris / GT at B = ``batch_size``, initial γ ``gamma``: Time, throughput and Δ vs fixed (module
    docstring)."""
    if not len(fig):
        return pd.DataFrame()
    part = fig[(fig["batch_size"] == batch_size) & (fig["gamma"] == gamma)]
    rows = []
    for pair, p in part.groupby("pair"):
        base = p[p["policy"] == "fixed"]
        if base.empty:
            continue
        b = base.iloc[0]
        for r in p[p["policy"].isin(("fixed", "tetris") + GT_CHAIN)].sort_values(["policy", "policy_spec"]).itertuples():
            ratio = b.t_samples / np.maximum(r.t_samples, 1e-12)            # baseline time / method time, per resample
            lo, hi = interval(ratio[1:], r.batches)
            rows.append({"pair": pair, "method": "baseline (fixed)" if r.policy == "fixed" else short(r.policy_spec),
                         "Time (s)": r.time, "throughput tok/s": r.throughput,
                         "Δ (baseline time / time)": "" if r.policy == "fixed" else f"{ratio[0]:.4f}" + interval_text(lo, hi),
                         "padding": f"{r.pad:.1%}" if np.isfinite(r.pad) else "–"})
    return pd.DataFrame(rows)


def c_of(spec: str) -> str | None:
    """The ``c`` of a policy spec ("gt-dynamic:c=0.1,…" → "0.1"), None without one."""
    m = re.search(r"(?:^|[:,])c=([^,]+)", str(spec))
    return m.group(1) if m else None


def table4(fig: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    """{(pair, B, policy): the c sweep} — columns c ascending then auto, params; rows Speed, speedup, L."""
    out = {}
    if not len(fig):
        return out
    gt = fig[fig["policy"].isin(GT_POLICIES)].assign(c=lambda f: f["policy_spec"].map(c_of)).dropna(subset=["c"])
    for (pair, size, policy), part in gt.groupby(["pair", "batch_size", "policy"]):
        if part["c"].nunique() < 2:
            continue
        order = sorted(part["c"].unique(), key=lambda c: (c in ("auto", "params"), float(c) if c[0].isdigit() else 0, c))
        cols = {}
        for c in order:
            r = part[part["c"] == c].iloc[0]
            cols[c] = [f"{r.throughput:.2f}", f"{r.speedup:.2f}×" + interval_text(r.speedup_lo, r.speedup_hi), f"{r.mal:.2f}"]
        out[(pair, size, policy)] = pd.DataFrame(cols, index=["Speed tok/s", "speedup vs ar", "L (MAL)"])
    return out


def gt_paper_text(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> str:
    """The three layouts as markdown sections ("" when none of their configs ran)."""
    fig = config_figures(df, resamples, seed)
    parts = []
    t5 = table5(fig)
    if len(t5):
        parts.append("## GT paper Table 5 layout: EAGLE-2 and GT(d) per batch size (tok/s of a batch; speedup vs ar "
                     "at the same B; Δ = GT(d) − EAGLE-2 with its 95 % paired interval over batches)\n\n"
                     + render(t5, "md"))
    t9 = table9(fig)
    if len(t9):
        parts.append("## GT paper Table 9 layout: B = 2, 7 speculative tokens (Time = Σ batch seconds; Δ = "
                     "baseline time / method time, > 1 faster, 95 % interval; padding = share of the verified slots that "
                     "were padding, a cost a ragged runner would not pay)\n\n" + render(t9, "md"))
    for (pair, size, policy), t in table4(fig).items():
        parts.append(f"## GT paper Table 4 layout: {policy} at different c, {pair} B = {size} (auto = measured "
                     f"M_D/M_T with Φ priced; params = draft/target parameters)\n\n" + render(t, "md"))
    return "".join(f"\n{p}\n" for p in parts)
