"""Paired-bootstrap intervals and verdicts for the ratios of ``jobs/report/metrics.py``.

Rules (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 6 and §13.3):
- a resample draws Q question ids uniformly with replacement; ``bootstrap_weights`` gives, per
  resample, how often each question was drawn (RESAMPLES rows, fixed SEED: the same inputs
  always give the same interval).
- "paired": one draw of question ids serves both sides of a ratio, so a config and its baseline
  are always compared on the same questions.
- the interval is the percentile interval: the 2.5th and 97.5th percentiles of the resampled
  values (LEVEL = 0.95, two-sided), resamples with an undefined ratio (0 / 0) ignored.
- one question (or batch) alone has no interval: redrawing it gives it back every time, which says nothing about
  the questions not asked; its resamples are NaN, so every interval of it is missing and no verdict is drawn.
- ``verdict``: "faster" / "slower" only when the interval excludes 1.0 and the distance of the
  point value from 1.0 exceeds the noise floor (the ar/ar control); else NOT_RESOLVED.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

RESAMPLES = 2000        # bootstrap resamples (>= 1000)
SEED = 0                # bootstrap seed: the same log always gives the same intervals
LEVEL = 0.95            # two-sided percentile interval
NOT_RESOLVED = "no difference resolved"


def bootstrap_weights(n_questions: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """[resamples, n_questions] multiplicities: row b counts how often each question was drawn
    when n_questions ids are drawn uniformly with replacement (one bootstrap resample); all NaN for fewer than two
    (module rules)."""
    if n_questions < 2:
        return np.full((resamples, n_questions), np.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_questions, size=(resamples, n_questions))
    flat = (idx + n_questions * np.arange(resamples)[:, None]).ravel()
    return np.bincount(flat, minlength=resamples * n_questions).reshape(resamples, n_questions).astype(float)


def percentile_interval(samples: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (Efron & Tibshirani 1993, §13.3) along axis 0, NaN resamples ignored."""
    tail = 100 * (1 - level) / 2
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(samples, [tail, 100 - tail], axis=0)
    return lo, hi


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Element-wise num / den, NaN where den <= 0."""
    with np.errstate(all="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def with_interval(out: dict, name: str, point: float, samples: np.ndarray) -> None:
    """Store ``name``, ``name_lo`` and ``name_hi`` (the point value and its percentile interval) in ``out``."""
    lo, hi = percentile_interval(samples)
    out[name], out[f"{name}_lo"], out[f"{name}_hi"] = point, float(lo), float(hi)


def paired_ratio(num: Sequence[float], den: Sequence[float], resamples: int = RESAMPLES,
                 seed: int = SEED) -> tuple[float, float, float]:
    """(point, lo, hi) of mean(num) / mean(den) where num[i] and den[i] belong to question i
    (e.g. per-question tok/s of a config and of ``ar``): both means are taken over the same
    resampled questions. Questions where either side is NaN are dropped first."""
    a, b = np.asarray(num, float), np.asarray(den, float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if not len(a):
        return float("nan"), float("nan"), float("nan")
    w = bootstrap_weights(len(a), resamples, seed)
    point = float(ratio(np.array([a.sum()]), np.array([b.sum()]))[0])
    lo, hi = percentile_interval(ratio(w @ a, w @ b))
    return point, float(lo), float(hi)


def verdict(value: float, lo: float, hi: float, floor: float = 0.0) -> str:
    """``faster``/``slower`` only when the interval excludes 1.0 and |value − 1| exceeds the
    noise floor; otherwise "no difference resolved"."""
    if any(x != x for x in (value, lo, hi)):
        return ""
    if lo <= 1.0 <= hi or abs(value - 1.0) <= (floor if floor == floor else 0.0):
        return NOT_RESOLVED
    return "faster" if value > 1.0 else "slower"
