"""Which configuration to deploy at each batch size, from a sweep's rows, for one engine.

Rules (the figures are the report's: ``jobs/report/batches.py`` for a batch size's total throughput and its speedup
vs ``ar`` with a 95 % paired-bootstrap interval over batches, ``jobs/report/intervals.py`` for intervals and
verdicts, ``jobs/report/metrics.py`` for the noise floor of the pair at that batch size):

- the rows are those the report shows (one mode per config, untrusted predicted times left out), each config over
  the batches ``ar`` ran at that batch size (``jobs/report/batches.py``'s ``on_ar_batches``: one that missed any is
  left out and named, so no ranking sets easy batches against hard ones);
- at each swept batch size B with an ``ar`` run, the options are ``ar`` (speculation off, K = 0) and every config the
  engine can express (``jobs/recommend/engines.py``); the choice is the option with the highest total throughput;
- TensorRT-LLM only: its schedule must hold its longest draft at batch size 1, so past the smallest swept size only
  K ≤ that size's K are options (an excluded faster K is named), and K = 0 there switches speculation off everywhere;
- the runner-up is the next option; best / runner-up gets its paired interval and is "within the noise floor" when
  ``verdict`` resolves no difference (its interval holds 1, or the gap is inside the floor);
- "beyond the engine": the fastest config the engine cannot express (not ``oracle``, not the oracle bound, not the
  static ``batch-schedule``), named when it beats every option the engine can express at B, ``ar`` included;
- SGLang takes one setting for every batch size: the option with the highest geometric-mean speedup over the usable
  batch sizes (``ar`` counts 1), among those measured at all of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from actors.drafter_kinds.kind import Serving
from actors.loading.schema import batch_label
from jobs.recommend import engines
from jobs.report import metrics
from jobs.report.agreement import modes
from jobs.report.batches import (ar_totals, base_pairs, batches, interval, on_ar_batches, speedup_samples, unit_totals,
                                 weights)
from jobs.report.intervals import NOT_RESOLVED, RESAMPLES, SEED, verdict
from policies.errors import SpecsweepError
from policies.oracle import BOUND_NAME

NOT_ADAPTIVE = ("ar", "fixed", "oracle", BOUND_NAME, "batch-schedule")


@dataclass
class Option:
    """One config measured at a batch size: its total throughput under each weighting (row 0 = the point) and its
    speedup vs ``ar`` with the interval; ``setting`` is the engine's (None: the engine cannot express it)."""

    policy: str
    spec: str
    gamma: int
    thr: np.ndarray
    speedup: float
    lo: float
    hi: float
    setting: dict | None

    @property
    def name(self) -> str:
        return "ar (speculation off)" if self.policy == "ar" else f"{self.spec} γ={self.gamma}"


@dataclass
class Choice:
    """The choice at one batch size, with its runner-up and what the engine cannot express."""

    batch_size: int
    batches: int
    floor: float
    chosen: Option
    runner: Option | None = None
    runner_ratio: tuple = (math.nan, math.nan, math.nan)
    within_noise: bool | None = None
    adaptive: Option | None = None
    adaptive_ratio: tuple = (math.nan, math.nan, math.nan)
    notes: list = field(default_factory=list)


@dataclass
class Recommendation:
    engine: str
    pair: str
    target: str
    draft: str
    kind: str
    method: str
    choices: list
    skipped: list                 # batch sizes swept but unusable, with why
    modes: dict                   # rows per mode ("live" / "replay")
    deploy: Option | None = None  # SGLang: the one setting written (its option at the smallest usable batch size)
    deploy_geomean: float = math.nan
    serving: Serving | None = None  # how the engines take the draft (its drafter kind's answer)


def pick_pair(df: pd.DataFrame, pair: str | None) -> str:
    """The one pair to recommend for: ``pair`` if given (and present), the only one otherwise."""
    pairs = sorted(set(base_pairs(df["pair"])))
    if pair is not None:
        if pair not in pairs:
            raise SpecsweepError(f"--pair {pair}: the sweep has no such pair (pairs: {', '.join(pairs)})")
        return pair
    if len(pairs) > 1:
        raise SpecsweepError(f"the sweep holds {len(pairs)} pairs ({', '.join(pairs)}): pass --pair LABEL")
    return pairs[0]


def measure(df: pd.DataFrame, pair: str, engine: str, trees: bool, resamples: int = RESAMPLES,
            seed: int = SEED) -> dict:
    """Per batch size of ``pair``: (batches, ar Option, [Options], [notes]) — every config measured there over the
    batches ``ar`` ran (one that missed any is left out, named in the notes); ``trees``: the draft takes SGLang's
    tree flags (``engines.setting``)."""
    b = batches(df)
    b = b[b["base_pair"] == pair]
    out = {}
    for size, part in b.groupby("batch_size"):
        if not (part["policy"] == "ar").any():
            continue
        n, totals = unit_totals(part)
        totals, partial = on_ar_batches(totals)       # every option over the same batches: those ar ran
        w = weights(n, resamples, seed)
        ar_tok, ar_t = ar_totals(totals)
        ar_thr = (w @ ar_tok) / np.maximum(w @ ar_t, 1e-12)
        compared = int((ar_t > 0).sum())              # the batches every option is measured over
        ar = Option("ar", "ar", 0, ar_thr, 1.0, 1.0, 1.0, engines.setting(engine, trees, "ar", "ar", 0))
        opts = []
        for (policy, spec, gamma), (tok, t) in sorted(totals.items(), key=lambda kv: (kv[0][1], kv[0][2])):
            if policy in ("ar", BOUND_NAME):
                continue
            thr, sp = speedup_samples(tok, t, ar_tok, ar_t, w)
            if not np.isfinite(thr[0]):                     # untrusted predicted times: nothing to rank
                continue
            lo, hi = interval(sp[1:], compared)
            opts.append(Option(policy, spec, int(gamma), thr, float(sp[0]), lo, hi,
                               engines.setting(engine, trees, policy, spec, int(gamma))))
        left_out = [f"{spec} γ={int(g)} left out: it ran {k} of the {m} batches ar ran"
                    for (_, spec, g), k, m in partial]
        if np.isfinite(ar_thr[0]):
            out[int(size)] = (compared, ar, opts, left_out)
    return out


def ratio(a: Option, b: Option, n: int) -> tuple[float, float, float]:
    """(point, lo, hi) of throughput(a) / throughput(b) over the same batches (NaN interval from one batch)."""
    r = a.thr / b.thr
    lo, hi = interval(r[1:], n)
    return float(r[0]), lo, hi


def choose_at(size: int, n: int, ar: Option, opts: list, floor: float, cap: int | None = None) -> Choice:
    """The choice at one batch size among ``ar`` and the expressible options (K ≤ ``cap`` when given)."""
    expressible = [o for o in opts if o.setting is not None]
    allowed = [o for o in expressible if cap is None or o.setting.get("K", 0) <= cap]
    ranked = sorted([ar] + allowed, key=lambda o: -o.thr[0])
    c = Choice(size, n, floor, ranked[0])
    if cap is not None:
        faster = [o for o in expressible if o not in allowed and o.thr[0] > ranked[0].thr[0]]
        if faster:
            best = max(faster, key=lambda o: o.thr[0])
            c.notes.append(f"{best.name} ({best.speedup:.2f}×) left out: TensorRT-LLM needs the longest draft at batch "
                           f"size 1 (K ≤ {cap})")
    if len(ranked) > 1:
        c.runner = ranked[1]
        c.runner_ratio = ratio(c.chosen, c.runner, n)
        v = verdict(*c.runner_ratio, floor)
        c.within_noise = None if not v else v == NOT_RESOLVED
    bar = max([ar.thr[0]] + [o.thr[0] for o in expressible])       # every option the engine has, ar included
    beyond = [o for o in opts if o.setting is None and o.policy not in NOT_ADAPTIVE and o.thr[0] > bar]
    if beyond:
        c.adaptive = max(beyond, key=lambda o: o.thr[0])
        c.adaptive_ratio = ratio(c.adaptive, c.chosen, n)
    return c


def untimed_expressible(rows: pd.DataFrame, engine: str, trees: bool) -> str:
    """The configs the engine could express whose every time is missing (replayed times marked unreliable), named."""
    if "wall_time" not in rows:
        return ""
    timed = rows.groupby(["policy", "policy_spec", "gamma"])["wall_time"].apply(lambda t: t.notna().any())
    untimed = {(spec, int(g)) for (policy, spec, g), ok in timed.items()
               if not ok and policy != "ar" and engines.setting(engine, trees, policy, spec, int(g)) is not None}
    names = [f"{spec} γ={g}" for spec, g in sorted(untimed)]
    return f"{len(names)} such configs ({', '.join(names[:4])}{', …' if len(names) > 4 else ''})" if names else ""


def recommend(df: pd.DataFrame, engine: str, pair: str | None = None, resamples: int = RESAMPLES,
              seed: int = SEED, untrusted: dict | None = None) -> Recommendation:
    """The recommendation for ``engine`` from a sweep's shown rows ``df`` (module docstring); ``untrusted``: {pair:
    reasons} its replayed times were left out for (``jobs/report/costs.py``), named when that leaves nothing."""
    if df is None or not len(df):
        raise SpecsweepError("the sweep has no successful rows yet: nothing to recommend")
    pair = pick_pair(df, pair)
    rows = df[base_pairs(df["pair"]) == pair]
    drafts = rows.loc[rows["policy"] != "ar", "draft"].dropna() if "draft" in rows else pd.Series(dtype=object)
    draft = str(drafts.iloc[0]) if len(drafts) else None
    serving = engines.serving_of(draft)
    name = engines.method(engine, serving, pair)
    found = measure(rows, pair, engine, serving.trees, resamples, seed)
    floors = metrics.noise_floor(rows, resamples, seed)
    floor_of = dict(zip(floors["pair"], floors["floor"])) if len(floors) else {}
    usable = {s: v for s, v in found.items() if any(o.setting is not None and o.policy != "ar" for o in v[2])}
    swept = sorted(set(rows["batch_size"].fillna(1).astype(int))) if "batch_size" in rows else [1]
    if not usable:
        ran = ", ".join(sorted(set(rows["policy_spec"]) - {"ar"})) or "ar only"
        trees = ", eagle2 trees" if engine == "sglang" else ""
        hidden = untimed_expressible(rows, engine, serving.trees)
        labels = list(untrusted or {})
        reasons = "; ".join(dict.fromkeys(r for p, b in zip(labels, base_pairs(pd.Series(labels, dtype=object)))
                                          if b == pair for r in untrusted[p]))
        why = (f"; its {hidden} were replayed with times marked unreliable ("
               + (reasons or "the report's cost section says why, e.g. a loaded machine")
               + "): rerun the sweep on a quiet machine or with mode: live" if hidden else "")
        left_out = [f"{note} at batch size {size}" for size, v in found.items() for note in v[3]]
        why += f"; {'; '.join(left_out[:3])}" if left_out else ""
        raise SpecsweepError(f"pair {pair}: no batch size ({', '.join(map(str, swept))}) has both ar and a timed "
                             f"configuration {engines.LABELS[engine]} can express (fixed γ{trees}); the sweep ran "
                             f"{ran}{why}")
    skipped = [(s, "no ar run" if s not in found else "no configuration the engine can express") for s in swept
               if s not in usable]
    choices, cap = [], None
    for size in sorted(usable):
        n, ar, opts, left_out = usable[size]
        c = choose_at(size, n, ar, opts, floor_of.get(batch_label(pair, size), math.nan), cap)
        c.notes += left_out
        if engine == "trtllm" and cap is None:
            cap = c.chosen.setting["K"]
        choices.append(c)
    mode = modes(rows)
    target = str(rows["target"].dropna().iloc[0]) if "target" in rows and rows["target"].notna().any() else ""
    rec = Recommendation(engine, pair, target, draft or "", serving.label, name, choices, skipped,
                         mode.value_counts().to_dict(), serving=serving)
    if engine == "sglang":
        rec.deploy, rec.deploy_geomean = one_setting(usable)
    return rec


def one_setting(usable: dict) -> tuple[Option, float]:
    """SGLang: (option, geometric-mean speedup) of the expressible option (or ``ar``) with the highest geometric-mean
    speedup over every usable batch size; only options measured at each of them compete, ``ar`` wins ties."""
    sizes = sorted(usable)
    by_key: dict = {}
    for size in sizes:
        _, ar, opts, _ = usable[size]
        for o in [ar] + [o for o in opts if o.setting is not None]:
            by_key.setdefault((o.spec, o.gamma), {})[size] = o
    scores = []
    for key, per in by_key.items():
        if len(per) == len(sizes) and all(o.speedup > 0 for o in per.values()):
            geo = math.exp(sum(math.log(o.speedup) for o in per.values()) / len(sizes))
            scores.append((geo, key[0] != "ar", per[sizes[0]]))
    geo, _, best = max(scores, key=lambda s: (s[0], -s[1]))
    return best, geo
