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

With ``--signals``, two forecasts of accepted *runs* (evidence beyond the step's own q), each layered on ``gt``'s
rule (its ε and look-ahead q̂ in the grid too) and tuned on the training questions over a small grid:

- **run memory from the discarded proposal**: after a step that verified every drafted token and discarded the next
  proposal, the target's bonus token lands where that proposal stood — equal ("hit") or not ("miss"), the one
  outcome of an unverified proposal a chain engine learns for free. The next step's forecast starts at
  α̂_1 = β_event·q(x_1), β_hit, β_miss and β_rejected (a step whose verified drafts were not all accepted) tuned;
  other steps β = 1;
- **copying the context**: a proposal that completes an m-gram already in the prompt or the output (drafts of this
  step included) counts q(x_i) as max(q(x_i), κ); m and κ tuned.

Both read the target's tokens only where they were emitted before the decision (``ctx.reference`` up to
``ctx.generated``: what an engine holds as its own output). Beside each: the grid point chosen *on the held-out
questions* (foresight: the best any point of that grid reaches), and per pair how often the evidence occurs and what
follows it (the next step's first draft accepted after a hit / miss / rejection; proposals completing a 3-gram
accepted against the rest).

Figures: each config's fraction of the oracle bound on the held-out questions — mean per-question tok/s over the
bound's, with a 95 % paired-bootstrap interval over those questions (``jobs/report/intervals.py``), as ``tune``
reports it — beside ``gt`` at its defaults and at ε 0.05, and the ``oracle`` policy (knows every acceptance).

    python -m bench.tune_ceiling runs/default            # a sweep output with mode: replay (or both)
    python -m bench.tune_ceiling runs/default --signals  # also the two run forecasts (~20 s on 42 turns)
"""
from __future__ import annotations

import argparse
import itertools
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
from policies.base import DISCARD
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
        return self.judge(i)


class RunMemoryGT(GT):
    """``gt`` whose next step starts at α̂_1 = β_event·q(x_1), the event read off the step just verified: ``hit`` /
    ``miss`` (all drafts accepted, the target's bonus token equal / unequal to the discarded proposal), ``rejected``
    (module docstring)."""

    name = "gt"
    needs_reference = True               # read only where the target already emitted (the bonus just verified)

    def __init__(self, eps: float = 0.0, ahead: float = 0.0, hit: float = 1.0, miss: float = 1.0,
                 rejected: float = 1.0, cap: int = 32, log: list | None = None):
        super().__init__(0, "auto", eps, cap, ahead)
        self.beta = {"hit": hit, "miss": miss, "rejected": rejected}
        self.log = log                   # (event before the step, drafted, accepted) per step, when given

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.boost, self.event, self.discarded = 1.0, None, None

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        if i == 1:
            self.start, self.discarded = self.ctx.generated, None
        self.alpha = (self.boost if i == 1 else self.alpha) * q_token
        verdict = self.judge(i)
        if verdict == DISCARD:
            self.discarded = (i, token)
        return verdict

    def update(self, step) -> None:
        if self.log is not None:
            self.log.append((self.event, step.drafted, step.accepted))
        event = None
        if step.accepted < step.drafted:
            event = "rejected"
        elif self.discarded is not None and self.discarded[0] == step.drafted + 1 and step.emitted == step.drafted + 1:
            bonus = self.ctx.reference[self.start + step.drafted]
            event = "hit" if bonus == self.discarded[1] else "miss"
        self.event, self.discarded = event, None
        self.boost = self.beta.get(event, 1.0)


def completes_context_gram(tokens: list[int], m: int) -> bool:
    """Whether the last m of ``tokens`` occur earlier in ``tokens`` (ending before its last position)."""
    if m < 1 or len(tokens) <= m:
        return False
    tail, n = tokens[-m:], len(tokens)
    return any(tokens[s:s + m] == tail for s in range(n - m))


class CopyGT(GT):
    """``gt`` counting a proposal that completes an m-gram of the prompt + output + this step's drafts as
    max(q, κ) (module docstring)."""

    name = "gt"
    needs_reference = True               # read only where the target already emitted (the output so far)

    def __init__(self, prompt_ids, eps: float = 0.0, ahead: float = 0.0, kappa: float = 0.0, m: int = 3,
                 cap: int = 32, log: list | None = None):
        super().__init__(0, "auto", eps, cap, ahead)
        self.prompt, self.kappa, self.m, self.log = list(prompt_ids), kappa, m, log

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        if i == 1:
            self.context = self.prompt + list(self.ctx.reference[:self.ctx.generated])
        self.context.append(token)
        copying = completes_context_gram(self.context, self.m)
        if self.log is not None:                     # (copying, accepted if judged) — greedy: equal to the reference
            pos = self.ctx.generated + i - 1
            ref = self.ctx.reference
            judged = all(ref[self.ctx.generated + j] == self.context[len(self.context) - i + j] for j in range(i - 1))
            if judged and pos < len(ref):
                self.log.append((copying, ref[pos] == token))
        q = max(q_token, self.kappa) if copying else q_token
        self.alpha = q if i == 1 else self.alpha * q
        return self.judge(i)


def _qid(t: Trace) -> int:
    return int(t.meta.get("question_id", 0))


def fraction_of_bound(traces, make, curve, model, bounds: dict | None = None) -> tuple[float, float, float]:
    """(point, lo, hi): mean per-question tok/s of ``make(trace)``'s policy over that of the oracle bound.
    ``bounds``: {trace key: bound} under ``model``, filled as traces are met (a grid search solves each bound once)."""
    per_q: dict[int, list[float]] = {}
    bounds = {} if bounds is None else bounds
    for t in traces:
        if t.key not in bounds:
            bounds[t.key] = oracle_bound(t, model)
        bound = bounds[t.key]
        g = replay(t, make(t), costs=curve, cost_model=model)
        acc = per_q.setdefault(_qid(t), [0.0, 0.0, 0.0, 0.0])
        acc[0] += g.new_tokens
        acc[1] += g.wall_time
        acc[2] += bound.new_tokens
        acc[3] += bound.wall_time
    ids = sorted(per_q)
    return paired_ratio([per_q[i][0] / per_q[i][1] for i in ids], [per_q[i][2] / per_q[i][3] for i in ids])


EPS, AHEAD = (0.0, 0.05, 0.1), (0.0, 0.6, 1.0)
BASE_GRID = list(itertools.product(EPS, AHEAD))
RUN_GRID = list(itertools.product(EPS, AHEAD, (1.0, 2.5, 4.0), (1.0, 0.7), (1.0, 0.6)))   # ε, q̂, β hit/miss/rejected
COPY_GRID = list(itertools.product(EPS, AHEAD, (0.0, 0.7, 0.85, 0.95), (2, 3, 4)))        # ε, q̂, κ, m


def grid_choice(traces, make, grid, curve, model, bounds: dict) -> tuple[float, tuple]:
    """(fraction of the bound, point) of the grid point with the highest fraction on ``traces``."""
    return max(((fraction_of_bound(traces, lambda t, a=a: make(t, a), curve, model, bounds)[0], a) for a in grid),
               key=lambda x: x[0])


def signal_rates(traces, curve, model) -> dict:
    """How often each run signal occurs and what follows it (module docstring), over ``traces`` at ``gt``'s
    defaults: {event: (steps, share whose first draft was accepted)} and {copying: (proposals, share accepted)}."""
    runs, copies = [], []
    for t in traces:
        replay(t, RunMemoryGT(log=runs), costs=curve, cost_model=model)
        replay(t, CopyGT(t.prompt_ids, log=copies), costs=curve, cost_model=model)
    out = {}
    for event in ("hit", "miss", "rejected"):
        after = [n >= 1 for e, k, n in runs if e == event and k > 0]
        out[event] = (len(after), float(np.mean(after)) if after else float("nan"))
    for flag, name in ((True, "copying"), (False, "other")):
        ok = [a for c, a in copies if c == flag]
        out[name] = (len(ok), float(np.mean(ok)) if ok else float("nan"))
    return out


def signal_rows(tr, he, curve, model, bounds: dict) -> list[tuple[str, str, tuple]]:
    """(label, kind, (point, lo, hi)) of the run-forecast rules (module docstring), each tuned on ``tr``, judged on
    ``he``, and its grid's best point on ``he`` (foresight)."""
    rules = [("gt, ε × look-ahead", BASE_GRID, lambda t, a: build(("gt", {"eps": a[0], "ahead": a[1]}), 1)),
             ("run memory from the discarded proposal", RUN_GRID, lambda t, a: RunMemoryGT(*a)),
             ("copying the context", COPY_GRID, lambda t, a: CopyGT(t.prompt_ids, *a))]
    rows = []
    for label, grid, make in rules:
        _, point = grid_choice(tr, make, grid, curve, model, bounds)
        rows.append((f"{label}, tuned on training {point}", "causal",
                     fraction_of_bound(he, lambda t: make(t, point), curve, model, bounds)))
        best, point = grid_choice(he, make, grid, curve, model, bounds)
        rows.append((f"{label}, grid point chosen on the held-out questions {point}", "foresight",
                     (best, float("nan"), float("nan"))))
    return rows


def ceiling(output: str, seed: int = 0, bins: int = BINS, signals: bool = False) -> list[dict]:
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
        bounds: dict = {}                                                  # this pair's cost model: one bound a trace
        results = [(label, kind, fraction_of_bound(he, make, curve, model, bounds)) for label, kind, make in configs]
        if signals:
            results += signal_rows(tr, he, curve, model, bounds)
        rates = signal_rates(ts, curve, model) if signals else None       # printed once per pair, below its rows
        for i, (label, kind, (p, lo, hi)) in enumerate(results):
            rows.append({"pair": pair, "config": label, "kind": kind, "of_bound": p, "lo": lo, "hi": hi,
                         "held_out": len({_qid(t) for t in he}), "rates": rates if i == 0 else None})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="a sweep output folder with traces (mode: replay or both)")
    ap.add_argument("--seed", type=int, default=0, help="the tune split's seed (default 0)")
    ap.add_argument("--bins", type=int, default=BINS, help=f"calibration bins (default {BINS})")
    ap.add_argument("--signals", action="store_true", help="also the two run forecasts (module docstring)")
    a = ap.parse_args(argv)
    try:
        rows = ceiling(a.output, a.seed, a.bins, a.signals)
    except SpecsweepError as e:
        print(f"bench.tune_ceiling: {e}", file=sys.stderr)
        return 2
    print("| pair | forecast of acceptance | kind | held-out fraction of the oracle bound [95 %] |")
    print("|---|---|---|---|")
    for r in rows:
        ci = f" [{r['lo']:.1%}, {r['hi']:.1%}]" if r["lo"] == r["lo"] else ""
        print(f"| {r['pair']} | {r['config']} | {r['kind']} | {r['of_bound']:.1%}{ci} |")
    for r in rows:
        if r["rates"]:
            x = r["rates"]
            print(f"{r['pair']} (all questions, gt defaults): the next step's first draft accepted after a hit "
                  f"{x['hit'][1]:.0%} ({x['hit'][0]} steps), a miss {x['miss'][1]:.0%} ({x['miss'][0]}), a rejection "
                  f"{x['rejected'][1]:.0%} ({x['rejected'][0]}); proposals completing a 3-gram of the context accepted "
                  f"{x['copying'][1]:.0%} ({x['copying'][0]}), the rest {x['other'][1]:.0%} ({x['other'][0]})")
    print(f"({rows[0]['held_out']} held-out questions; split seed {a.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
