"""The GT paper's Figure 3 from a temperature sweep: per sampling temperature and speculative config, the speedup
vs ``ar`` with its 95 % interval and the mean accepted length, read from each temperature's output folder."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from jobs.report.text import short, value_with_interval

KEYS = ["pair", "policy_spec", "gamma"]
COLUMNS = ["temperature", "pair", "policy_spec", "policy", "gamma", "speedup", "speedup_lo", "speedup_hi",
           "mean_accepted_length"]


def figure3_table(outputs: list[tuple[float, Path]]) -> pd.DataFrame:
    """One row per temperature and non-``ar`` config of each folder's ``speedup_vs_ar.csv``, temperatures in the
    given order and configs in the file's: ``speedup`` is its ``overall`` column, ``speedup_lo``/``speedup_hi`` its
    95 % interval; ``mean_accepted_length`` comes from the folder's ``summary.csv`` (NaN where it has none).
    A folder without ``speedup_vs_ar.csv`` adds no row."""
    frames = [f for f in (_one_temperature(float(t), Path(folder)) for t, folder in outputs) if len(f)]
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def _one_temperature(t: float, folder: Path) -> pd.DataFrame:
    """The rows of one temperature's folder (empty without a ``speedup_vs_ar.csv``)."""
    path = folder / "speedup_vs_ar.csv"
    if not path.is_file():
        return pd.DataFrame(columns=COLUMNS)
    sp = pd.read_csv(path)
    sp = sp[sp["policy"] != "ar"]
    out = pd.DataFrame({"temperature": t, "pair": sp["pair"], "policy_spec": sp["policy_spec"],
                        "policy": sp["policy"], "gamma": sp["gamma"], "speedup": sp["overall"],
                        "speedup_lo": sp.get("overall_lo", math.nan), "speedup_hi": sp.get("overall_hi", math.nan)})
    lengths = _accepted_lengths(folder)
    if lengths is None:
        return out.assign(mean_accepted_length=math.nan)
    return out.merge(lengths, on=KEYS, how="left")


def _accepted_lengths(folder: Path) -> pd.DataFrame | None:
    """``summary.csv``'s mean accepted length per config; None when the file or its column is missing."""
    path = folder / "summary.csv"
    summary = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    if "mean_accepted_length" not in summary:
        return None
    return summary[KEYS + ["mean_accepted_length"]].drop_duplicates(KEYS)


def figure3_text(df: pd.DataFrame) -> str:
    """``df`` (:func:`figure3_table`) as a titled Markdown table: one row per temperature and config, the speedup
    as ``1.23 [1.10, 1.35]`` and the mean accepted length to two decimals (``–`` where missing)."""
    title = "Figure 3: speedup vs ar by sampling temperature (95 % interval), mean accepted length"
    if df.empty:
        return f"{title}\n(no speedup vs ar in any temperature's output folder: see each folder's report.md)\n"
    shown = pd.DataFrame({
        "T": [f"{t:g}" for t in df["temperature"]],
        "pair": df["pair"].astype(str),
        "config": [short(str(s)) for s in df["policy_spec"]],
        "γ": df["gamma"].astype(str),
        "speedup vs ar": [value_with_interval(v, lo, hi)
                          for v, lo, hi in zip(df["speedup"], df["speedup_lo"], df["speedup_hi"])],
        "accepted length": ["–" if v != v else f"{v:.2f}" for v in df["mean_accepted_length"]],
    })
    try:
        table = shown.to_markdown(index=False, disable_numparse=True)     # the cells as formatted here
    except ImportError:  # tabulate missing
        table = shown.to_string(index=False)
    return f"{title}\n{table}\n"
