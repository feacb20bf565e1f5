"""Plain-text helpers every report table uses: a policy spec cut to a column's width, intervals, a frame as Markdown or CSV."""
from __future__ import annotations

import pandas as pd


def short(spec: str) -> str:
    """``spec`` as shown in a table column: at most 48 characters, cut with "..."."""
    return spec if len(spec) <= 48 else spec[:45] + "..."


def interval(lo, hi, fmt: str = ".2f") -> str:
    """`` [lo, hi]``, each end formatted by ``fmt`` (two decimals; ``".1%"`` for shares); empty when either end is
    NaN or infinite (no interval was drawn)."""
    return f" [{lo:{fmt}}, {hi:{fmt}}]" if abs(lo) < float("inf") and abs(hi) < float("inf") else ""


def value_with_interval(value, lo, hi) -> str:
    """``1.23 [1.10, 1.35]``; ``–`` for a missing value."""
    return "–" if value != value else f"{value:.2f}{interval(lo, hi)}"


def render(df: pd.DataFrame, fmt: str) -> str:
    """``df`` as a Markdown table (``fmt="md"``; plain text when tabulate is missing) or CSV (``fmt="csv"``); the
    index is shown only when it names the rows (not a bare row number)."""
    if df.empty:
        return "(nothing to show)\n"
    index = not isinstance(df.index, pd.RangeIndex)        # a row number says nothing: only named indexes show
    if fmt == "csv":
        return df.to_csv(index=index)
    try:
        return df.to_markdown(floatfmt=".3f", index=index) + "\n"
    except ImportError:  # tabulate missing
        return df.to_string(float_format=lambda x: f"{x:.3f}", index=index) + "\n"
