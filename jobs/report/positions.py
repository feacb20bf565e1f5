"""Acceptance by draft position and the accepted-length histogram: stored, merged into the summary, shown in report.md.

The counts and rates are derived once, in ``jobs/report/derived.py`` (:func:`~jobs.report.derived.position_tables`);
this module writes them beside a sweep's other tables — ``acceptance_by_position.parquet`` (one row per pair, batch
size, policy and γ: the counters as lists and one ``accept_rate_pos_{i}`` column per position) and
``accepted_length_histogram.parquet`` (one row per config, drafted length and accepted length) — adds the
``accept_rate_pos_{i}`` columns to the per-config summary (so ``summary.csv`` and the MLflow policy runs carry them)
and renders the report's small table.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from jobs.report.derived import RATE_PREFIX, position_tables
from jobs.report.text import short
from jobs.store.output import record_written
from policies.oracle import BOUND_LABEL

BY_POSITION = "acceptance_by_position.parquet"
HISTOGRAM = "accepted_length_histogram.parquet"
FIGURE = "acceptance_by_position.png"
SHOWN = 6                     # positions shown in report.md's table (every one is in the Parquet file)


def rate_columns(df: pd.DataFrame) -> list[str]:
    """The ``accept_rate_pos_{i}`` columns of ``df``, in position order."""
    cols = [c for c in df.columns if c.startswith(RATE_PREFIX) and c[len(RATE_PREFIX):].isdigit()]
    return sorted(cols, key=lambda c: int(c[len(RATE_PREFIX):]))


def with_positions(summary: pd.DataFrame, pos: pd.DataFrame) -> pd.DataFrame:
    """``summary`` (one row per pair, spec, γ) with the ``accept_rate_pos_{i}`` columns of its config (NaN for
    ``ar``)."""
    cols = rate_columns(pos)
    if summary is None or not len(summary) or not cols:
        return summary
    merged = summary.drop(columns=[c for c in cols if c in summary]).merge(
        pos[["pair", "policy_spec", "gamma", *cols]], on=["pair", "policy_spec", "gamma"], how="left")
    merged.index = summary.index
    return merged


def write_positions(pos: pd.DataFrame, hist: pd.DataFrame, folder: Path) -> list[Path]:
    """Write both tables as Parquet into ``folder`` (noted first in its manifest); returns the files."""
    out = []
    for table, name in ((pos, BY_POSITION), (hist, HISTOGRAM)):
        path = Path(folder) / name
        record_written(path)
        table.to_parquet(path, index=False)
        out.append(path)
    return out


def read_positions(folder: str | Path, rows: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables a sweep wrote into ``folder``; derived from ``rows`` when the folder has none (older sweeps)."""
    folder = Path(folder)
    if (folder / BY_POSITION).is_file() and (folder / HISTOGRAM).is_file():
        return pd.read_parquet(folder / BY_POSITION), pd.read_parquet(folder / HISTOGRAM)
    if rows is None:
        return pd.DataFrame(), pd.DataFrame()
    return position_tables(rows)


def compared(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a position table (or histogram) whose acceptance is compared: configs that drafted, not the oracle
    bound (its hindsight schedule drafts only tokens that are accepted: α = 1 at every position)."""
    keep = table["policy_spec"] != BOUND_LABEL
    return table[keep & (table["num_drafts"] > 0)] if "num_drafts" in table else table[keep]


def positions_md(pos: pd.DataFrame, hist: pd.DataFrame, figure: str | None = None) -> str:
    """The report's section: per config, drafts and the acceptance rate at positions 1…6, and per config the accepted
    length most often seen at each drafted length ("" when no config drafted)."""
    if pos is None or not len(pos) or not rate_columns(pos):
        return ""
    pos = compared(pos)
    if not len(pos):
        return ""
    cols = rate_columns(pos)[:SHOWN]
    head = "| pair | B | policy | γ | drafts | " + " | ".join(f"α pos {c[len(RATE_PREFIX):]}" for c in cols) + " |"
    lines = [head, "|" + "---|" * (5 + len(cols))]
    for r in pos.sort_values(["pair", "batch_size", "policy_spec", "gamma"]).itertuples(index=False):
        d = r._asdict()
        cells = [("–" if not np.isfinite(d[c]) else f"{d[c]:.2f}") for c in cols]
        lines.append(f"| {d['pair']} | {d['batch_size']} | {short(d['policy_spec'])} | {d['gamma']} | "
                     f"{d['num_drafts']} | " + " | ".join(cells) + " |")
    text = ("\n## Acceptance by draft position (α at position i = steps whose first i drafts were accepted / steps "
            f"that drafted at least i; every position and the histogram of accepted length by drafted length: "
            f"{BY_POSITION}, {HISTOGRAM})\n\n" + "\n".join(lines) + "\n")
    hist = compared(hist) if hist is not None and len(hist) else hist
    if hist is not None and len(hist):
        mode = hist.sort_values("steps", ascending=False, kind="stable")
        mode = mode.drop_duplicates(["pair", "policy_spec", "gamma", "drafted"])
        mode = mode.sort_values(["pair", "batch_size", "policy_spec", "gamma", "drafted"])
        cells = {}
        for r in mode.itertuples(index=False):
            cells.setdefault((r.pair, r.policy_spec, r.gamma), []).append(f"{r.drafted}→{r.accepted} ({r.share:.0%})")
        items = [f"- {p} · {short(s)} γ={g}: " + ", ".join(v[:8]) for (p, s, g), v in cells.items()]
        text += ("\nMost frequent accepted length per drafted length, d→a (share of the steps drafting d):\n\n"
                 + "\n".join(items) + "\n")
    if figure:
        text += f"\n![acceptance by draft position]({figure})\n"
    return text


def positions_section(folder: str | Path, rows: pd.DataFrame) -> str:
    """The report.md section of a sweep's output folder (its stored tables, else derived from ``rows``); the figure is
    linked when the sweep drew it."""
    pos, hist = read_positions(folder, rows)
    fig = Path(folder) / "figures" / FIGURE
    return positions_md(pos, hist, f"figures/{FIGURE}" if fig.is_file() else None)
