"""Figures of a sweep (matplotlib, PNG): the GammaTune paper's views and more.

- ``throughput_vs_gamma.png``: throughput against initial γ, one line per policy, one panel per pair,
  error bars = 95 % paired-bootstrap interval;
- ``mal_vs_gamma.png``: the same for mean accepted length (with its interval);
- ``throughput_bars.png``: Figure-1 style, mean throughput per pair and policy, error bars = std across γ;
- ``trace_<qid>.png``: Fig. 2a style, accepted tokens and γ at each step of one generation;
- ``acceptance_by_position.png``: the acceptance rate at each draft position per config, and a histogram of
  accepted length by drafted length (``jobs/report/positions.py``).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from jobs.report.derived import position_tables
from jobs.report.metrics import per_question
from jobs.report.positions import FIGURE, compared
from jobs.store.output import record_written

def _save(fig, path: Path) -> None:
    """Write ``fig`` as a PNG (noted first in a sweep output's manifest)."""
    record_written(path)
    fig.savefig(path, dpi=110)


INTERVAL = {"throughput": ("throughput_lo", "throughput_hi"), "mean_accepted_length": ("mal_lo", "mal_hi")}


def _per_pair(summary: pd.DataFrame, column: str, ylabel: str, path: Path) -> Path | None:
    """``column`` against initial γ, one line per policy (95 % interval bars), one panel per pair; None (no figure)
    when no speculative config is left (every one failed: ``ar`` only)."""
    specs = sorted(summary.loc[summary["policy"] != "ar", "policy_spec"].unique())
    if not specs:
        return None
    pairs = sorted(summary["pair"].unique())
    palette = plt.get_cmap("tab20")               # one colour per config, the same in every panel (20 before reuse)
    style = {spec: {"color": palette(i % 20), "marker": "os^D"[i // 20 % 4]} for i, spec in enumerate(specs)}
    fig, axes = plt.subplots(1, len(pairs), figsize=(5.5 * len(pairs), 4), squeeze=False)
    for ax, pair in zip(axes[0], pairs):
        part = summary[summary["pair"] == pair]
        lo, hi = INTERVAL.get(column, ("", ""))
        for spec, line in part[part["policy"] != "ar"].groupby("policy_spec"):
            line = line.sort_values("gamma")
            if lo in line and hi in line:       # 95 % paired-bootstrap interval (jobs/report/metrics.py)
                err = [(line[column] - line[lo]).clip(lower=0).fillna(0), (line[hi] - line[column]).clip(lower=0).fillna(0)]
                ax.errorbar(line["gamma"], line[column], yerr=err, capsize=3, label=spec[:30], **style[spec])
            else:
                ax.plot(line["gamma"], line[column], label=spec[:30], **style[spec])
        ar = part[part["policy"] == "ar"]
        if column == "throughput" and len(ar):
            ax.axhline(float(ar[column].mean()), color="grey", ls="--", label="ar")
        ax.set_title(pair)
        ax.set_xlabel("initial γ")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def throughput_bars(summary: pd.DataFrame, path: Path) -> Path | None:
    """Figure-1 style bars: mean throughput per pair and policy, error bars = std across γ; None (no figure) when
    no speculative config is left (every one failed: ``ar`` only)."""
    s = summary[summary["policy"] != "ar"]
    agg = s.groupby(["pair", "policy_spec"])["throughput"].agg(["mean", "std"]).reset_index()
    pairs = sorted(agg["pair"].unique())
    specs = sorted(agg["policy_spec"].unique())
    if not specs:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(specs) * len(pairs)), 4))
    width = 0.8 / len(specs)
    for i, spec in enumerate(specs):
        part = agg[agg["policy_spec"] == spec].set_index("pair").reindex(pairs)
        ax.bar([p + i * width for p in range(len(pairs))], part["mean"], width, yerr=part["std"].fillna(0),
               capsize=3, label=spec[:30])
    ax.set_xticks([p + 0.4 - width / 2 for p in range(len(pairs))], pairs)
    ax.set_ylabel("throughput (tok/s), error bar = std across initial γ")
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def category_heatmap(rows: pd.DataFrame, path: Path) -> Path | None:
    """Speedup vs ar per (pair · policy, initial γ averaged) × category."""

    q = per_question(rows)
    ar = q[q["policy"] == "ar"].groupby(["pair", "category"])["tok_s"].mean()
    spec = q[q["policy"] != "ar"].groupby(["pair", "policy_spec", "category"])["tok_s"].mean()
    if ar.empty or spec.empty:
        return None
    ratio = (spec / ar.reindex(spec.index.droplevel("policy_spec")).values).unstack("category")
    ratio.index = [f"{p} · {s[:24]}" for p, s in ratio.index]
    fig, ax = plt.subplots(figsize=(1.0 * ratio.shape[1] + 4, 0.45 * ratio.shape[0] + 1.5))
    im = ax.imshow(ratio.values, cmap="RdYlGn", vmin=0.5, vmax=1.5, aspect="auto")
    ax.set_xticks(range(ratio.shape[1]), ratio.columns, rotation=45, ha="right")
    ax.set_yticks(range(ratio.shape[0]), ratio.index)
    for i in range(ratio.shape[0]):
        for j in range(ratio.shape[1]):
            v = ratio.values[i, j]
            if v == v:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="speedup vs ar")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def trace(row: pd.Series, path: Path) -> Path:
    """Accepted tokens and γ per step of one generation (a result row)."""
    fig, ax = plt.subplots(figsize=(8, 3))
    steps = range(len(row["accepted"]))
    ax.bar(steps, row["accepted"], color="tab:green", alpha=0.7, label="accepted")
    ax.step(steps, row["k_max"], where="mid", color="tab:blue", label="γ (k_max)")
    ax.set_xlabel("step")
    ax.set_title(f"{row['pair']} · {row['policy_spec'][:40]} · γ0={row['gamma']} · q{row['question_id']} turn {row['turn']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def acceptance_by_position(pos: pd.DataFrame, hist: pd.DataFrame, path: Path, lines: int = 10) -> Path | None:
    """Top row: the acceptance rate at each draft position, one panel per pair (and batch size), one line per config
    (the ``lines`` configs with the most drafts); bottom row: the histogram of accepted length by drafted length of
    the config with the most drafts in that panel (share of the steps drafting that length). None when nothing
    drafted."""
    if pos is None or not len(pos):
        return None
    pos = compared(pos)
    if not len(pos):
        return None
    pairs = sorted(pos[pos["num_drafts"] > 0]["pair"].unique())
    fig, axes = plt.subplots(2, len(pairs), figsize=(5.5 * len(pairs), 7.5), squeeze=False)
    for j, pair in enumerate(pairs):
        part = pos[(pos["pair"] == pair) & (pos["num_drafts"] > 0)].sort_values("num_drafts", ascending=False)
        ax = axes[0][j]
        for r in part.head(lines).itertuples(index=False):
            rates = list(r.accept_rate_pos)
            ax.plot(range(1, len(rates) + 1), rates, marker="o", label=f"{r.policy_spec[:24]} γ={r.gamma}")
        ax.set_title(pair)
        ax.set_xlabel("draft position i")
        ax.set_ylabel("acceptance rate at i (of the steps drafting ≥ i)")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
        top = part.iloc[0]
        h = hist[(hist["pair"] == pair) & (hist["policy_spec"] == top["policy_spec"]) & (hist["gamma"] == top["gamma"])]
        grid = h.pivot_table(index="drafted", columns="accepted", values="share", fill_value=0.0)
        ax = axes[1][j]
        if len(grid):
            im = ax.imshow(grid.values, cmap="Greens", vmin=0, vmax=1, aspect="auto", origin="lower")
            ax.set_xticks(range(grid.shape[1]), grid.columns)
            ax.set_yticks(range(grid.shape[0]), grid.index)
            fig.colorbar(im, ax=ax, label="share of the steps drafting that length")
        ax.set_xlabel("accepted length")
        ax.set_ylabel("drafted length")
        ax.set_title(f"{top['policy_spec'][:30]} γ={top['gamma']}", fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def all_figures(summary: pd.DataFrame, rows: pd.DataFrame, folder: Path, traces: int = 2,
                positions: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> list[Path]:
    """Every figure of a sweep into ``folder``; returns the files written (a figure with nothing to show, as the
    γ figures of an ``ar``-only summary, is left out). ``positions``: the (by position, histogram) tables of
    ``jobs/report/derived.py::position_tables`` (derived from ``rows`` when not given)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [p for p in (_per_pair(summary, "throughput", "throughput (tok/s)", folder / "throughput_vs_gamma.png"),
                       _per_pair(summary, "mean_accepted_length", "mean accepted length", folder / "mal_vs_gamma.png"),
                       throughput_bars(summary, folder / "throughput_bars.png")) if p]
    pos = acceptance_by_position(*(positions or position_tables(rows)), folder / FIGURE)
    out += [pos] if pos else []
    heat = category_heatmap(rows, folder / "speedup_by_category.png")
    out += [heat] if heat else []
    adaptive = rows[rows["policy"].isin(["gammatune", "gammatune+", "hf-heuristic", "goodput"])]
    for qid in list(dict.fromkeys(adaptive["question_id"]))[:traces]:
        row = adaptive[adaptive["question_id"] == qid].iloc[0]
        out.append(trace(row, folder / f"trace_q{qid}.png"))
    return out
