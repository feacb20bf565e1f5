"""Replay against live: which rows a report shows, and how well replay agreed with live runs.

Rows carry ``mode`` = ``live`` or ``replay`` (logs written before replay existed have none:
live). A config may have both: a replayed config chosen for live validation, or every
config in ``mode: both``.

* :func:`primary_rows`: the rows every figure is computed from — per config, its replayed
  rows when it has them (``prefer="replay"``) or its live rows (``prefer="live"``);
  ``ar`` is always live (it is the measured baseline of every ratio).
* :func:`replay_bias`: per (pair, policy spec, γ), the signed time error (replayed − live) / live of
  the validated generations, median and 95 % bootstrap interval (docs/uncertainty.md).
* :func:`agreement_table`: per (pair, policy spec), over the generations that exist in
  both modes (same config, question, turn, repeat): the share with identical token ids,
  the share with identical (k_max, drafted, accepted) step sequences (100 % under greedy
  decoding, by the replay argument in docs/replay.md), and the median and p90 of
  |predicted − measured| / measured wall time; the ``all`` row adds ``live_spread_median``,
  the median |t_last − t_first| / t_first of the two live ``ar`` runs of each task and turn —
  how far two live timings of one config lie apart on this machine, the scale a time error
  is to be read against.

Batch rows (a batch task's, B > 1) are twins like any other: their ``pair`` reads ``label@B{B}`` and their
``config_key`` carries it, so every table here has a row per pair *and* batch size, and the ``all`` row pools them.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from jobs.report.derived import time_error
from jobs.report.intervals import RESAMPLES, SEED, percentile_interval

KEYS = ["config_key", "question_id", "turn", "repeat"]
TIME_WARNING = 0.10      # median |predicted − measured| / measured above which replayed times are flagged


def modes(df: pd.DataFrame) -> pd.Series:
    """Each row's mode, ``live`` where the column is missing or null."""
    if "mode" not in df:
        return pd.Series("live", index=df.index)
    return df["mode"].fillna("live").replace("", "live")


def primary_rows(df: pd.DataFrame, prefer: str = "replay") -> pd.DataFrame:
    """Per config_key the rows of the preferred mode when there are any, else the other mode's."""
    if prefer not in ("live", "replay"):
        raise ValueError(f"prefer must be live or replay, got {prefer!r}")
    m = modes(df)
    has = set(df.loc[m == prefer, "config_key"])
    keep = (m == prefer) | ~df["config_key"].isin(has)
    return df[keep]


def mode_shown(sweep_mode: str) -> str:
    """The mode a sweep's figures are shown in when a config has both: ``live`` for ``mode: both``
    (replay is then the check), ``replay`` otherwise (a live sweep has no replayed rows)."""
    return "live" if sweep_mode == "both" else "replay"


def stored_config(output: str) -> dict:
    """The config of the sweep whose output folder is ``output`` (its ``state.json``); {} when there is none."""
    try:
        return json.loads((Path(output) / "state.json").read_text()).get("config") or {}
    except (OSError, ValueError):
        return {}


def preferred_mode(output: str) -> str:
    """:func:`mode_shown` for the sweep whose log is in ``output``."""
    return mode_shown(stored_config(output).get("mode", "live"))


def twin_generations(df: pd.DataFrame) -> pd.DataFrame:
    """One row per generation that exists both live and replayed (columns suffixed ``_live`` / ``_replay``)."""
    m = modes(df)
    ok = df["status"] == "ok"
    live, rep = df[ok & (m == "live")], df[ok & (m == "replay")]
    if live.empty or rep.empty:
        return pd.DataFrame()
    return live.merge(rep, on=KEYS, suffixes=("_live", "_replay"))


def untrusted_by_validation(df: pd.DataFrame) -> dict[str, list[str]]:
    """{pair: [reason]} for the pairs whose validated replays miss their live twins' wall times (median
    |error|) by more than both ``TIME_WARNING`` and the machine's own live-vs-live spread (:func:`live_spread`):
    an error the machine's noise does not explain."""
    twins = twin_generations(df)
    if twins.empty:
        return {}
    err = time_error(twins["wall_time_replay"].astype(float), twins["wall_time_live"].astype(float))
    spread = live_spread(df)
    limit = max(TIME_WARNING, spread if spread == spread else 0.0)
    out = {}
    for pair, e in err.groupby(twins["pair_live"]):
        med = float(e.median())
        if med > limit:
            out[pair] = [f"validated replays miss the live wall times by {med:.0%} (median; limit {limit:.0%}, "
                         "the larger of 10 % and the live ar/ar spread)"]
    return out


def mark_untrusted(df: pd.DataFrame, pairs) -> pd.DataFrame:
    """``df`` with ``time_reliable`` false on the replayed rows of ``pairs``."""
    if not len(pairs):
        return df
    out = df.copy()
    hit = (modes(out) == "replay") & out["pair"].isin(list(pairs))
    if "time_reliable" not in out:
        out["time_reliable"] = pd.Series(pd.NA, index=out.index, dtype="object")
    out["time_reliable"] = out["time_reliable"].astype("object")
    out.loc[hit, "time_reliable"] = False
    return out


def replay_bias(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per (pair, policy spec, γ): the signed time error (replayed − live) / live of its twin generations — its
    median and a 95 % percentile-bootstrap interval of that median over the generations (docs/uncertainty.md,
    "Replay bias"); a positive bias means replay predicts slower than the machine ran."""
    twins = twin_generations(df)
    cols = ["pair", "policy_spec", "gamma", "generations", "bias_median", "bias_lo", "bias_hi"]
    if twins.empty:
        return pd.DataFrame(columns=cols)
    twins["bias"] = time_error(twins["wall_time_replay"].astype(float), twins["wall_time_live"].astype(float),
                               signed=True)
    rows = []
    rng = np.random.default_rng(seed)
    for (pair, spec, gamma), part in twins.groupby(["pair_live", "policy_spec_live", "gamma_live"]):
        err = part["bias"].dropna().to_numpy()
        row = {"pair": pair, "policy_spec": spec, "gamma": int(gamma), "generations": len(err)}
        if len(err):
            medians = np.median(err[rng.integers(0, len(err), size=(resamples, len(err)))], axis=1)
            lo, hi = percentile_interval(medians)
            row.update(bias_median=float(np.median(err)), bias_lo=float(lo), bias_hi=float(hi))
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def bias_text(bias: pd.DataFrame) -> str:
    """The replay-bias table as report text ("" when no config was validated live)."""
    if bias.empty:
        return ""
    t = bias.copy()
    t["bias (replayed − live) / live"] = [f"{m:+.1%} [{lo:+.1%}, {hi:+.1%}]" for m, lo, hi in
                                          zip(t["bias_median"], t["bias_lo"], t["bias_hi"])]
    t = t.drop(columns=["bias_median", "bias_lo", "bias_hi"])
    return ("replay bias per validated config: median signed time error [95 % bootstrap interval over its "
            "generations]; read each replayed speedup of that policy and γ as shifted by about this much\n"
            + t.to_string(index=False))


def agreement_table(df: pd.DataFrame) -> pd.DataFrame:
    """Replay-vs-live agreement per (pair, policy spec) on the twin generations; empty when there are none."""
    twins = twin_generations(df)
    if twins.empty:
        return pd.DataFrame()

    def same(a, b) -> bool:
        return a is not None and b is not None and list(a) == list(b)

    twins["same_tokens"] = [same(a, b) for a, b in zip(twins["token_ids_live"], twins["token_ids_replay"])]
    step_cols = ["k_max", "drafted", "accepted"]
    twins["same_steps"] = [all(same(r[f"{c}_live"], r[f"{c}_replay"]) for c in step_cols)
                           for _, r in twins.iterrows()]
    meas, pred = twins["wall_time_live"].astype(float), twins["wall_time_replay"].astype(float)
    twins["time_error"] = time_error(pred, meas)
    rows = []
    for (pair, spec), part in twins.groupby(["pair_live", "policy_spec_live"]):
        err = part["time_error"].dropna()
        rows.append({"pair": pair, "policy_spec": spec, "generations": len(part),
                     "gammas": ",".join(str(g) for g in sorted(part["gamma_live"].unique())),
                     "tokens_identical": part["same_tokens"].mean(), "steps_identical": part["same_steps"].mean(),
                     "time_error_median": float(err.median()) if len(err) else np.nan,
                     "time_error_p90": float(np.percentile(err, 90)) if len(err) else np.nan})
    out = pd.DataFrame(rows)
    total = {"pair": "all", "policy_spec": "all", "generations": len(twins), "gammas": "",
             "tokens_identical": twins["same_tokens"].mean(), "steps_identical": twins["same_steps"].mean(),
             "time_error_median": float(twins["time_error"].median()),
             "time_error_p90": float(np.nanpercentile(twins["time_error"], 90))}
    total["live_spread_median"] = live_spread(df)
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


def live_spread(df: pd.DataFrame) -> float:
    """Median |t_last − t_first| / t_first over the (pair, question, turn, repeat) whose ``ar`` ran first and last."""
    if "ar_timing" not in df:
        return np.nan
    ar = df[(df["status"] == "ok") & (df["policy"] == "ar") & (modes(df) == "live")]
    keys = ["pair", "question_id", "turn", "repeat"]
    first = ar[ar["ar_timing"] == "first"].drop_duplicates(keys).set_index(keys)["wall_time"].astype(float)
    last = ar[ar["ar_timing"] == "last"].drop_duplicates(keys).set_index(keys)["wall_time"].astype(float)
    both = pd.concat([first.rename("first"), last.rename("last")], axis=1, join="inner")
    both = both[both["first"] > 0]
    return float(((both["last"] - both["first"]).abs() / both["first"]).median()) if len(both) else np.nan


def agreement_text(table: pd.DataFrame) -> str:
    """The agreement table as report text, with one line saying whether replay was exact."""
    if table.empty:
        return "replay vs live: no generation was both replayed and run live"
    t = table.drop(columns=["live_spread_median"], errors="ignore")
    for c in ("tokens_identical", "steps_identical", "time_error_median", "time_error_p90"):
        t[c] = (t[c] * 100).map(lambda v: f"{v:.1f} %")
    allrow = table.iloc[-1]
    verdict = ("exact: every validated generation replayed step for step" if allrow["steps_identical"] == 1.0 else
               f"NOT exact: {(1 - allrow['steps_identical']) * 100:.1f} % of validated generations differ "
               "(see docs/replay.md, floating point)")
    spread = allrow.get("live_spread_median", np.nan)
    if not pd.isna(spread):
        verdict += (f"\nlive timing spread: two live ar runs of the same turn differ by {spread:.1%} (median); "
                    "a time error of that size is the machine's noise, not the cost model's")
    if allrow["time_error_median"] > TIME_WARNING:
        verdict += (f"\nWARNING: replayed wall times are off by {allrow['time_error_median']:.1%} (median) against the "
                    f"live runs (> {TIME_WARNING:.0%}): token and step figures stand, time figures of replayed configs "
                    "do not; see the cost model's residuals in actors.json (a loaded machine while the actor fitted it?)")
    return "replay vs live (validated configs)\n" + t.to_string(index=False) + f"\n{verdict}"


def pair_bias(df: pd.DataFrame, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per pair: the signed time error (replayed − live) / live pooled over all its twin generations — median and
    95 % percentile-bootstrap interval (the bias a replayed config of that pair carries when it was not itself
    validated)."""
    twins = twin_generations(df)
    cols = ["pair", "generations", "bias_median", "bias_lo", "bias_hi"]
    if twins.empty:
        return pd.DataFrame(columns=cols)
    err = time_error(twins["wall_time_replay"].astype(float), twins["wall_time_live"].astype(float), signed=True)
    rng = np.random.default_rng(seed)
    rows = []
    for pair, e in err.groupby(twins["pair_live"]):
        e = e.dropna().to_numpy()
        if not len(e):
            continue
        lo, hi = percentile_interval(np.median(e[rng.integers(0, len(e), size=(resamples, len(e)))], axis=1))
        rows.append({"pair": pair, "generations": len(e), "bias_median": float(np.median(e)),
                     "bias_lo": float(lo), "bias_hi": float(hi)})
    return pd.DataFrame(rows, columns=cols)


def bias_corrected(speed: pd.DataFrame, shown: pd.DataFrame, bias: pd.DataFrame) -> pd.DataFrame:
    """Each replayed config's overall speedup beside its pair's replay bias b and the bias-corrected speedup
    s·(1 + b): a replay predicting times b too slow understates throughput by 1 + b, and ``ar`` is measured. The
    corrected interval carries the bias's: [s_lo·(1 + b_lo), s_hi·(1 + b_hi)] (docs/uncertainty.md)."""
    cols = ["pair", "policy_spec", "gamma", "speedup", "speedup_lo", "speedup_hi", "bias_median", "bias_lo", "bias_hi",
            "corrected", "corrected_lo", "corrected_hi"]
    if speed is None or not len(speed) or bias.empty or "overall" not in speed:
        return pd.DataFrame(columns=cols)
    replayed = shown[modes(shown) == "replay"][["pair", "policy_spec", "gamma"]].drop_duplicates()
    t = speed.merge(replayed, on=["pair", "policy_spec", "gamma"]).merge(bias.drop(columns="generations"), on="pair")
    t = t.rename(columns={"overall": "speedup", "overall_lo": "speedup_lo", "overall_hi": "speedup_hi"})
    t["corrected"] = t["speedup"] * (1 + t["bias_median"])
    t["corrected_lo"] = t["speedup_lo"] * (1 + t["bias_lo"])
    t["corrected_hi"] = t["speedup_hi"] * (1 + t["bias_hi"])
    return t[cols].dropna(subset=["speedup"]).reset_index(drop=True)


def corrected_text(t: pd.DataFrame) -> str:
    """The bias-corrected speedups as report text ("" when there are none)."""
    if t.empty:
        return ""
    out = pd.DataFrame({"pair": t["pair"], "policy_spec": t["policy_spec"], "gamma": t["gamma"],
                        "speedup (replayed)": [f"{v:.2f} [{lo:.2f}, {hi:.2f}]" for v, lo, hi in
                                               zip(t["speedup"], t["speedup_lo"], t["speedup_hi"])],
                        "replay bias": [f"{v:+.1%} [{lo:+.1%}, {hi:+.1%}]" for v, lo, hi in
                                        zip(t["bias_median"], t["bias_lo"], t["bias_hi"])],
                        "bias-corrected": [f"{v:.2f} [{lo:.2f}, {hi:.2f}]" for v, lo, hi in
                                           zip(t["corrected"], t["corrected_lo"], t["corrected_hi"])]})
    return ("replayed speedups beside their pair's replay bias (pooled over its validated generations) and "
            "corrected for it: s·(1 + b), interval [s_lo·(1 + b_lo), s_hi·(1 + b_hi)]\n" + out.to_string(index=False))
