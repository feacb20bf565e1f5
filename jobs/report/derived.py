"""Every derived figure, each defined once (Spec-Bench, Xia et al. 2024; GammaTune, Gautam et al. 2025, Table 2).

One record, one formula. The engine and replay fill the same per-step record
(:class:`policies.base.Step`: drafted, accepted, emitted, cap, measured or predicted time);
rows sum it into :class:`Counters` (vLLM's spec-decode counters in spirit) and
:func:`figures` is the one function that turns counters into throughput, mean accepted
length and acceptance rate — ``summarize`` (benchmarks, ``specsweep generate``), the MLflow
stream (``jobs/mlflow/stream.py``) and the report's point estimates all go through it.
:func:`time_error` is the one replay time-error formula (report agreement table, benches).

Scalar rules (unit-tested against hand-worked values): throughput of a generation =
new_tokens / wall_time (prefill included); per-question tok/s = Σ_turns new_tokens /
Σ_turns wall_time (Spec-Bench speed.py); throughput of a config = mean over questions
(× repeats) of per-question tok/s; mean accepted length = mean of accept_lengths over all
target forwards (bonus token included; Spec-Bench's #MAT); acceptance rate α = Σ accepted /
Σ drafted; acceptance rate at draft position i = steps whose first i drafts were accepted / steps that drafted
at least i (vLLM's ``num_accepted_tokens_per_pos`` over the steps reaching position i; a tree counts its depth,
``k_max``), with the histogram of accepted length by drafted length beside it (:func:`position_tables`).
Intervals and table-level figures: ``jobs/report/metrics.py``.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd


# ---------------------------------------------------------------- times that cannot be trusted
TIME_COLUMNS = ("wall_time", "prefill_time", "draft_time", "verify_time")


def time_untrusted(value) -> bool:
    """A row's ``time_reliable`` says its time was predicted by an untrusted cost model (False; null: trusted)."""
    return value is False or value is np.False_


def trusted_times(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the time columns of untrusted rows (``time_reliable`` false) set to NaN, so no throughput or
    speedup is derived from them; token and step columns, which are exact, stay."""
    if "time_reliable" not in df or not df["time_reliable"].map(time_untrusted).any():
        return df
    out = df.copy()
    bad = out["time_reliable"].map(time_untrusted)
    out.loc[bad, [c for c in TIME_COLUMNS if c in out]] = np.nan
    return out


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


def time_error(predicted, measured, signed: bool = False):
    """Replay's time error (predicted − measured) / measured wall time, absolute unless ``signed``; NaN where the
    measured time is not positive. Floats, numpy arrays and pandas Series alike."""
    if isinstance(measured, pd.Series):
        meas = measured.astype(float).where(measured > 0)
    elif np.ndim(measured):
        meas = np.where(np.asarray(measured, dtype=float) > 0, np.asarray(measured, dtype=float), np.nan)
    else:
        meas = float(measured) if measured > 0 else float("nan")
    err = (predicted - meas) / meas
    return err if signed else abs(err)


@dataclass
class Counters:
    """Sums over one config's steps: ``per_question`` maps a question (× repeat) to [Σ new tokens, Σ wall time];
    ``emitted`` = Σ accept lengths over ``forwards`` target forwards; Σ ``accepted`` of Σ ``drafted``."""

    per_question: dict = field(default_factory=dict)
    emitted: int = 0
    forwards: int = 0
    accepted: int = 0
    drafted: int = 0

    def add(self, question, new_tokens: int, wall_time: float, emitted: int, forwards: int, accepted: int,
            drafted: int) -> None:
        q = self.per_question.setdefault(question, [0, 0.0])
        q[0] += new_tokens
        q[1] += wall_time
        self.emitted += emitted
        self.forwards += forwards
        self.accepted += accepted
        self.drafted += drafted


def figures(c: Counters) -> dict:
    """Derived figures of one config (module docstring): per-question tok/s (``tok_s``, in insertion order), their
    mean ``throughput``, ``mean_accepted_length`` = Σ emitted / forwards, ``acceptance_rate`` = Σ accepted / Σ drafted;
    NaN where undefined."""
    tok_s = [throughput(n, w) for n, w in c.per_question.values()]
    return {"questions": len(tok_s), "tok_s": tok_s,
            "throughput": statistics.fmean(tok_s) if tok_s else float("nan"),
            "mean_accepted_length": c.emitted / c.forwards if c.forwards else float("nan"),
            "acceptance_rate": c.accepted / c.drafted if c.drafted else float("nan")}


def table2_speedups(throughput_by_gamma: dict[int, float], fixed_by_gamma: dict[int, float]) -> tuple[float, float]:
    """(mean, sample std) over initial γ of throughput(m, γ) / mean_γ' throughput(fixed, γ')."""
    values = [*throughput_by_gamma.values(), *fixed_by_gamma.values()]
    if not all(math.isfinite(v) for v in values):   # NaN: a time that was not to be trusted
        return float("nan"), float("nan")
    base = statistics.fmean(fixed_by_gamma.values())
    s = [t / base for t in throughput_by_gamma.values()]
    return statistics.fmean(s), (statistics.stdev(s) if len(s) > 1 else 0.0)


def pooled_average(means: Sequence[float], stds: Sequence[float]) -> tuple[float, float]:
    """Table-2 "average" column: (mean of the means, √(mean of σ²)) — the pooled standard
    deviation of equally sized groups (GammaTune Table 2's average column is this form)."""
    return statistics.fmean(means), math.sqrt(statistics.fmean([s * s for s in stds]))


# ---------------------------------------------------------------- generations in hand
def summarize(questions: Sequence) -> dict:
    """One config's metrics from engine generations, by the scalar rules above.

    ``questions``: per question, the list of its turns' ``Generation`` objects (a bare
    generation is a one-turn question). Returns questions, generations, new_tokens, forwards
    (target forwards after prefill), ``tok_s`` (per-question tok/s, in the given order),
    throughput (their mean), mean_accepted_length (over all forwards), acceptance_rate
    (Σ accepted / Σ drafted), drafted_per_forward (mean tokens or tree nodes verified per
    forward) and max_draft_per_forward (mean k_max, or tree depth, per forward); NaN where
    undefined (no forwards, nothing drafted)."""
    qs = [list(q) if isinstance(q, (list, tuple)) else [q] for q in questions]
    gens = [g for q in qs for g in q]
    c = Counters()
    for i, q in enumerate(qs):
        for g in q:
            c.add(i, g.new_tokens, g.wall_time, sum(g.accept_lengths), len(g.accept_lengths), sum(g.accepted),
                  sum(g.drafted))
    per_forward = lambda xs: sum(xs) / len(xs) if xs else float("nan")          # noqa: E731
    return {**figures(c), "generations": len(gens), "new_tokens": sum(g.new_tokens for g in gens),
            "forwards": c.forwards, "drafted_per_forward": per_forward([d for g in gens for d in g.drafted]),
            "max_draft_per_forward": per_forward([k for g in gens for k in g.k_max])}


# ---------------------------------------------------------------- acceptance by draft position
POSITION_KEYS = ["pair", "batch_size", "policy", "policy_spec", "gamma"]
HISTOGRAM_COLUMNS = ["drafted", "accepted", "steps", "share"]
RATE_PREFIX = "accept_rate_pos_"     # accept_rate_pos_{i}: the acceptance rate at draft position i (1-based)


def step_depth(drafted: int, k_max: int | None = None) -> int:
    """The draft positions one step verified: its drafted tokens (a chain), or its depth ``k_max`` when a tree's
    nodes outnumber it; 0 when nothing was drafted."""
    d = int(drafted)
    return d if k_max is None else min(d, int(k_max))


@dataclass
class PositionCounts:
    """Per-position counters of one config (vLLM's ``num_drafts`` and ``num_accepted_tokens_per_pos`` in spirit):
    ``drafts_per_pos[i - 1]`` = steps that drafted at least i tokens, ``accepted_per_pos[i - 1]`` = steps whose first
    i drafts were accepted; ``histogram[(d, a)]`` = steps that drafted d ≥ 1 positions and accepted a of them."""

    forwards: int = 0
    drafts: int = 0
    accepted_tokens: int = 0
    drafts_per_pos: list = field(default_factory=list)
    accepted_per_pos: list = field(default_factory=list)
    histogram: dict = field(default_factory=dict)

    def add(self, drafted: Sequence[int], accepted: Sequence[int], k_max: Sequence[int] | None = None) -> None:
        """Count one generation's steps (its per-step ``drafted``, ``accepted`` and optional ``k_max`` lists)."""
        for s, (d, a) in enumerate(zip(drafted, accepted)):
            depth = step_depth(d, k_max[s] if k_max is not None and s < len(k_max) else None)
            self.forwards += 1
            if depth <= 0:
                continue
            a = max(0, min(int(a), depth))
            self.drafts += 1
            self.accepted_tokens += a
            if depth > len(self.drafts_per_pos):
                grow = depth - len(self.drafts_per_pos)
                self.drafts_per_pos += [0] * grow
                self.accepted_per_pos += [0] * grow
            for i in range(depth):
                self.drafts_per_pos[i] += 1
            for i in range(a):
                self.accepted_per_pos[i] += 1
            self.histogram[(depth, a)] = self.histogram.get((depth, a), 0) + 1

    def rates(self) -> list[float]:
        """The acceptance rate at positions 1, 2, …: accepted_per_pos[i] / drafts_per_pos[i]."""
        return [a / d if d else float("nan") for a, d in zip(self.accepted_per_pos, self.drafts_per_pos)]


def position_tables(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(by position, histogram) per (pair, batch size, policy, spec, γ) over the successful rows (``ar`` left out, as
    is the closing ``ar`` control). By position: forwards, num_drafts, num_accepted_tokens, the lists
    num_drafts_per_pos, num_accepted_tokens_per_pos and accept_rate_pos, and one column ``accept_rate_pos_{i}`` per
    position (NaN past a config's deepest draft). Histogram: one row per (config, drafted length, accepted length)
    with its steps and their share of the steps that drafted that length."""
    d = df[(df["status"] == "ok") & (df["policy"] != "ar")] if len(df) else df
    if "ar_timing" in d:
        d = d[d["ar_timing"].fillna("") != "last"]
    if not len(d):
        return pd.DataFrame(columns=POSITION_KEYS), pd.DataFrame(columns=POSITION_KEYS + HISTOGRAM_COLUMNS)
    d = d.assign(batch_size=d["batch_size"].fillna(1).astype(int) if "batch_size" in d else 1)
    rows, hist = [], []
    for key, part in d.groupby(POSITION_KEYS, sort=True):
        c = PositionCounts()
        k_lists = part["k_max"] if "k_max" in part else [None] * len(part)
        for dr, ac, km in zip(part["drafted"], part["accepted"], k_lists):
            if dr is not None and ac is not None:
                c.add(list(dr), list(ac), None if km is None else list(km))
        ident = dict(zip(POSITION_KEYS, key))
        rows.append({**ident, "forwards": c.forwards, "num_drafts": c.drafts, "num_accepted_tokens": c.accepted_tokens,
                     "num_drafts_per_pos": c.drafts_per_pos, "num_accepted_tokens_per_pos": c.accepted_per_pos,
                     "accept_rate_pos": c.rates()})
        per_len = {}
        for (dl, _), n in c.histogram.items():
            per_len[dl] = per_len.get(dl, 0) + n
        hist += [{**ident, "drafted": dl, "accepted": a, "steps": n, "share": n / per_len[dl]}
                 for (dl, a), n in sorted(c.histogram.items())]
    pos = pd.DataFrame(rows)
    deepest = max((len(r) for r in pos["accept_rate_pos"]), default=0)
    for i in range(deepest):
        pos[f"{RATE_PREFIX}{i + 1}"] = [r[i] if i < len(r) else float("nan") for r in pos["accept_rate_pos"]]
    return pos, pd.DataFrame(hist, columns=POSITION_KEYS + HISTOGRAM_COLUMNS)
