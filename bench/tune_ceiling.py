"""How far a causal policy that forecasts acceptance from the draft's per-token probabilities can get toward the
oracle bound, on a sweep's stored traces (no model loaded).

Why: ``specsweep tune``'s goal is a tuned policy at ≥ 90 % of the oracle bound on held-out questions. The ``gt``
rule forecasts a prefix's acceptance as α̂_i = Π_{j ≤ i} q(x_j) ("Max-Speedup Speculative Sampling: A Generic
Tree Construction Principle", Eq. 5). This script replaces q by a *calibrated* forecast, a binned map from q to
the acceptance rate, and asks how much that adds, also with the map fitted on data a real policy could not have:

- **calibrated on training questions**: a real, causal option — P(accept | q) fitted on the tune split's training
  questions (``jobs/tune/cli.py::split_questions``), then used on the held-out ones;
- **calibrated on the held-out questions** and **calibrated on each turn itself**: fitted with foresight (of the
  questions' or the turn's own acceptance), not causal — the best such a binned map of q can do.

Calibration rule: proposals at position i of the rollout at reference position j whose earlier proposals all equal
the reference (the events greedy verification would have judged), binned by q at the quantiles of q; each bin's
rate (accepted + 1) / (n + 2) (Laplace's rule of succession), made non-decreasing in q. The calibrated rule drafts
while Π_{j ≤ i} P̂(q(x_j)) > price_i − ε, price_i the ``gt`` policy's (``policies/gt.py``), and does not verify the
first token failing it, as ``gt`` does.

Figures: each config's fraction of the oracle bound on the held-out questions — mean per-question tok/s over the
bound's, with a 95 % paired-bootstrap interval over those questions (``jobs/report/intervals.py``), as ``tune``
reports it — beside ``gt`` at its defaults and at ε 0.05, and the ``oracle`` policy (knows every acceptance).

    python -m bench.tune_ceiling runs/default            # a sweep output with mode: replay (or both)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from actors.tracing.oracle_bound import oracle_bound
from actors.tracing.replay import replay
from actors.tracing.traces import Trace, read_traces
from jobs.replay_cli import actor_costs
from jobs.report.intervals import paired_ratio
from jobs.tune.cli import split_questions
from policies.base import DISCARD, MORE
from policies.errors import SpecsweepError
from policies.gt import GT
from policies.registry import build

BINS = 5


def acceptance_events(traces) -> tuple[np.ndarray, np.ndarray]:
    """(q(x_i), accepted) of every proposal whose earlier proposals in its rollout all equal the reference."""
    q, ok = [], []
    for t in traces:
        ref = t.reference
        for j, r in enumerate(t.rollouts):
            for i, x in enumerate(r.tokens):
                if j + i >= len(ref):
                    break
                q.append(r.q_tokens[i])
                ok.append(x == ref[j + i])
                if not ok[-1]:
                    break
    return np.asarray(q, float), np.asarray(ok, bool)


def fit_calibration(q: np.ndarray, accepted: np.ndarray, bins: int = BINS):
    """P̂(accept | q): the module's binned rule; a function of one q. No events: P̂ = ½ everywhere."""
    if not len(q):
        return lambda x: 0.5
    inner = np.unique(np.quantile(q, np.linspace(0, 1, bins + 1))[1:-1])     # bin edges between the quantiles
    idx = np.searchsorted(inner, q, side="right")
    n = np.bincount(idx, minlength=len(inner) + 1)
    k = np.bincount(idx, weights=accepted.astype(float), minlength=len(inner) + 1)
    rate = np.maximum.accumulate((k + 1.0) / (n + 2.0))

    def p(x: float) -> float:
        return float(rate[np.searchsorted(inner, x, side="right")])

    p.edges, p.rates = inner, rate
    return p


class CalibratedGT(GT):
    """``gt`` with α̂_i = Π_{j ≤ i} P̂(q(x_j)) in place of Π q(x_j) (module docstring); prices and ε as ``gt``."""

    name = "gt"

    def __init__(self, calibration, eps: float = 0.0, cap: int = 32):
        super().__init__(0, "auto", eps, cap)
        self.calibration = calibration

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        p = self.calibration(q_token)
        self.alpha = p if i == 1 else self.alpha * p
        return MORE if self.alpha > self.price(i) - self.eps else DISCARD


def _qid(t: Trace) -> int:
    return int(t.meta.get("question_id", 0))


def fraction_of_bound(traces, make, curve, model) -> tuple[float, float, float]:
    """(point, lo, hi): mean per-question tok/s of ``make(trace)``'s policy over that of the oracle bound."""
    per_q: dict[int, list[float]] = {}
    for t in traces:
        bound = oracle_bound(t, model)
        g = replay(t, make(t), costs=curve, cost_model=model)
        acc = per_q.setdefault(_qid(t), [0.0, 0.0, 0.0, 0.0])
        acc[0] += g.new_tokens
        acc[1] += g.wall_time
        acc[2] += bound.new_tokens
        acc[3] += bound.wall_time
    ids = sorted(per_q)
    return paired_ratio([per_q[i][0] / per_q[i][1] for i in ids], [per_q[i][2] / per_q[i][3] for i in ids])


def ceiling(output: str, seed: int = 0, bins: int = BINS) -> list[dict]:
    """One row per (pair, config): the held-out fraction of the oracle bound (module docstring)."""
    out = Path(output)
    traces = [t for t in read_traces(out / "traces") if int(t.meta.get("batch_size", 1)) == 1] \
        if (out / "traces").is_dir() else []
    if not traces:
        raise SpecsweepError(f"{output} holds no batch-size-1 traces: run a sweep with mode: replay first")
    infos = json.loads((out / "actors.json").read_text())
    train, held = split_questions({_qid(t) for t in traces}, seed)
    rows = []
    for pair in sorted({t.pair for t in traces}):
        curve, model = actor_costs(infos, pair, str(out / "actors.json"))
        ts = [t for t in traces if t.pair == pair]
        tr, he = [t for t in ts if _qid(t) in train], [t for t in ts if _qid(t) in held]
        on_train = fit_calibration(*acceptance_events(tr), bins)
        on_held = fit_calibration(*acceptance_events(he), bins)
        configs = [("gt (defaults)", "causal", lambda t: build(("gt", {}), 1)),
                   ("gt, eps 0.05", "causal", lambda t: build(("gt", {"eps": 0.05}), 1)),
                   ("calibrated on training questions", "causal", lambda t: CalibratedGT(on_train)),
                   ("calibrated on the held-out questions", "foresight", lambda t: CalibratedGT(on_held)),
                   ("calibrated on each turn itself", "foresight",
                    lambda t: CalibratedGT(fit_calibration(*acceptance_events([t]), bins))),
                   ("oracle policy", "foresight", lambda t: build(("oracle", {}), 1))]
        for label, kind, make in configs:
            p, lo, hi = fraction_of_bound(he, make, curve, model)
            rows.append({"pair": pair, "config": label, "kind": kind, "of_bound": p, "lo": lo, "hi": hi,
                         "held_out": len({_qid(t) for t in he})})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="a sweep output folder with traces (mode: replay or both)")
    ap.add_argument("--seed", type=int, default=0, help="the tune split's seed (default 0)")
    ap.add_argument("--bins", type=int, default=BINS, help=f"calibration bins (default {BINS})")
    a = ap.parse_args(argv)
    try:
        rows = ceiling(a.output, a.seed, a.bins)
    except SpecsweepError as e:
        print(f"bench.tune_ceiling: {e}", file=sys.stderr)
        return 2
    print("| pair | forecast of acceptance | kind | held-out fraction of the oracle bound [95 %] |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['pair']} | {r['config']} | {r['kind']} | {r['of_bound']:.1%} [{r['lo']:.1%}, {r['hi']:.1%}] |")
    print(f"({rows[0]['held_out']} held-out questions; split seed {a.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
