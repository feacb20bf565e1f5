"""Where a chain policy's time goes beyond the oracle bound's, on the held-out questions of the tune split (no model
loaded).

Why: ``specsweep tune``'s goal is a tuned policy at ≥ 90 % of the oracle bound on held-out questions
(``jobs/tune/cli.py``); this script says which of a policy's steps lose the time, so a better rule knows what to fix.

Rule. The oracle bound's dynamic programme (``actors/tracing/oracle_bound.py``) gives, for every reference position j
and draft-cache lag ℓ of a turn, the least predicted time V(j, ℓ) from there to the end. A replayed policy's step from
(j, ℓ) that costs t and leads to (j + e, ℓ') has the *regret* t + V(j + e, ℓ') − V(j, ℓ) ≥ 0; the regrets of a turn's
steps add up exactly to its time minus the bound's (they telescope). Each step is put in one class by what it verified:

- **rejected drafts** — k > n: it verified drafts the target rejected (drafted too far);
- **stopped short** — k = n < n*, n* the leading run of the recorded rollout that the target accepts there
  (capped as the bound caps it): every verified draft was accepted, and more would have been;
- **exact** — k = n = n*: it verified exactly the accepted run; what it loses is the price of that run's length
  (a verify of k + 1 tokens on the measured table, a discarded proposal) against a shorter or longer schedule.

A policy's time is also split into its parts, each a share of the bound's time: steps × (T(1) + o) (one plain target
step per step), draft forwards (a discarded proposal included) and Φ = Σ T(k + 1) − T(1) (the extra verify time),
the step terms the bound's and replay's clock use (``actors/tracing/replay.py::CostClock``).

Figures: per pair, sums over the held-out questions' turns, as shares of the bound's time — the mean over questions
with a 95 % bootstrap interval over those questions (``jobs/report/intervals.py``) — and the steps taken from the
same position as a step of the bound's schedule, by whether k was below, equal to or above the bound's.

    python -m bench.tune_gap runs/default                       # gt at its defaults, gt with ε 0.05, oracle
    python -m bench.tune_gap runs/default --policy gt:eps=0.1 --seed 1
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from actors.tracing.oracle_bound import SchedulePolicy, bound_of, next_lag, value_table
from actors.tracing.replay import replay
from actors.tracing.traces import Trace, read_traces
from jobs.replay_cli import read_json, actor_costs
from jobs.report.intervals import bootstrap_weights, percentile_interval
from jobs.tune.cli import split_questions
from policies.errors import SpecsweepError
from policies.registry import build, parse

DEFAULT_POLICIES = ("gt", "gt:eps=0.05", "oracle")
CLASSES = ("rejected drafts", "stopped short", "exact")


def accepted_run(options: dict) -> int:
    """n*: the longest run of the rollout at this position that the target accepts (among the step options)."""
    return max(n for (n, _e) in options.values())


def step_records(trace: Trace, steps, model, best: np.ndarray, options: list[dict]) -> list[dict]:
    """Per step of a replayed generation: its position, k, n, n*, time parts and regret (module docstring)."""
    m = model.as_measured()
    plen, size = len(trace.prompt_ids), best.shape[1]
    j, lag, out = 0, plen - 1, []
    for s in steps:
        base, k, p, n, e = plen + j, s.drafted, s.proposed, s.accepted, s.emitted
        draft = float(m.draft_time(p, lag, base)) if p else 0.0
        verify = m.verify_time(k + 1, base)
        plain = m.verify_time(1, base) + m.overhead
        t = draft + verify + m.overhead
        nxt = next_lag(lag, base, k, p, n, e)
        regret = t + best[j + e, min(nxt, size - 1)] - best[j, lag]
        n_star = accepted_run(options[j])
        cls = CLASSES[0] if k > n else CLASSES[1] if n < n_star else CLASSES[2]
        out.append({"j": j, "k": k, "p": p, "n": n, "n_star": n_star, "time": t, "plain": plain, "draft": draft,
                    "phi": verify - m.verify_time(1, base), "regret": regret, "cls": cls,
                    "rejected_drafts": k - n, "discarded": p - k})
        j, lag = j + e, min(nxt, size - 1)
    return out


def _qid(t: Trace) -> int:
    return int(t.meta.get("question_id", 0))


def _mean_ci(per_q: np.ndarray, den: np.ndarray) -> tuple[float, float, float]:
    """Σ per_q / Σ den over questions (a share of the bound's time), with its 95 % bootstrap interval."""
    w = bootstrap_weights(len(per_q))
    samples = (w @ per_q) / (w @ den)
    lo, hi = percentile_interval(samples)
    return float(per_q.sum() / den.sum()), float(lo), float(hi)


def gap(output: str, policies=DEFAULT_POLICIES, seed: int = 0) -> list[dict]:
    """One row per (pair, policy): the held-out decomposition (module docstring)."""
    out = Path(output)
    traces = [t for t in read_traces(out / "traces") if int(t.meta.get("batch_size", 1)) == 1] \
        if (out / "traces").is_dir() else []
    if not traces:
        raise SpecsweepError(f"{output} holds no batch-size-1 traces: run a sweep with mode: replay first")
    infos = read_json(out / "actors.json", "the actors' cost models")     # one line when missing or malformed
    _, held = split_questions({_qid(t) for t in traces}, seed)
    rows = []
    for pair in sorted({t.pair for t in traces}):
        curve, model = actor_costs(infos, pair, str(out / "actors.json"))
        he = [t for t in traces if t.pair == pair and _qid(t) in held]
        per_trace, bound_parts = {}, {"plain": 0.0, "draft": 0.0, "phi": 0.0}
        for t in he:                                  # the bound's programme, schedule and parts: once per trace
            table = value_table(t, model)
            bound = bound_of(t, table)
            per_trace[t.key] = (table.best, table.options, bound)
            g = replay(t, SchedulePolicy(bound.schedule), cost_model=model)
            for r in step_records(t, g.steps, model, table.best, table.options):
                for name in bound_parts:
                    bound_parts[name] += r[name]
        for spec in policies:
            qids = sorted({_qid(t) for t in he})
            acc = {q: {"bound": 0.0, "policy": 0.0, "plain": 0.0, "draft": 0.0, "phi": 0.0,
                       **{c: 0.0 for c in CLASSES}} for q in qids}
            steps_n, k_vs = {c: 0 for c in CLASSES}, {"below": 0, "equal": 0, "above": 0}
            drafted = rejected = discarded = 0
            for t in he:
                best, opts, bound = per_trace[t.key]
                g = replay(t, build(parse(spec), 1), costs=curve, cost_model=model)
                recs = step_records(t, g.steps, model, best, opts)
                a = acc[_qid(t)]
                a["bound"] += bound.step_time
                a["policy"] += sum(r["time"] for r in recs)
                for r in recs:
                    a["plain"] += r["plain"]
                    a["draft"] += r["draft"]
                    a["phi"] += r["phi"]
                    a[r["cls"]] += r["regret"]
                    steps_n[r["cls"]] += 1
                    drafted += r["k"]
                    rejected += r["rejected_drafts"]
                    discarded += r["discarded"]
                bpos, j = {}, 0                       # the bound's k at each position its schedule steps from
                for (k, p) in bound.schedule:
                    bpos[j] = k
                    j += opts[j][(k, p)][1]
                for r in recs:
                    if r["j"] in bpos:
                        bk = bpos[r["j"]]
                        k_vs["below" if r["k"] < bk else "equal" if r["k"] == bk else "above"] += 1
            den = np.array([acc[q]["bound"] for q in qids])
            row = {"pair": pair, "policy": spec, "questions": len(qids), "steps": sum(steps_n.values()),
                   "drafted": drafted, "rejected": rejected, "discarded": discarded, **{f"n_{c}": v for c, v in
                                                                                       steps_n.items()}, **k_vs}
            for name in ("policy", "plain", "draft", "phi", *CLASSES):
                row["time" if name == "policy" else name] = _mean_ci(np.array([acc[q][name] for q in qids]), den)
            row["bound_parts"] = {k: v / den.sum() for k, v in bound_parts.items()}
            rows.append(row)
    return rows


def _ci(v) -> str:
    return f"{v[0]:.1%} [{v[1]:.1%}, {v[2]:.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", help="a sweep output folder with traces (mode: replay or both)")
    ap.add_argument("--policy", action="append", help="a policy spec like gt:eps=0.05 (repeatable; default: "
                                                      + ", ".join(DEFAULT_POLICIES) + ")")
    ap.add_argument("--seed", type=int, default=0, help="the tune split's seed (default 0)")
    a = ap.parse_args(argv)
    try:
        rows = gap(a.output, a.policy or DEFAULT_POLICIES, a.seed)
    except SpecsweepError as e:
        print(f"bench.tune_gap: {e}", file=sys.stderr)
        return 2
    print("Time as a share of the oracle bound's (held-out questions; 95 % bootstrap interval over questions):\n")
    print("| pair | policy | policy time | regret: rejected drafts | regret: stopped short | regret: exact | "
          "plain steps (bound) | draft (bound) | Φ (bound) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = r["bound_parts"]
        print(f"| {r['pair']} | {r['policy']} | {_ci(r['time'])} | {_ci(r['rejected drafts'])} | "
              f"{_ci(r['stopped short'])} | {_ci(r['exact'])} | {_ci(r['plain'])} ({b['plain']:.1%}) | "
              f"{_ci(r['draft'])} ({b['draft']:.1%}) | {_ci(r['phi'])} ({b['phi']:.1%}) |")
    print("\nSteps by class, drafts, and k against the bound's k from the same position:\n")
    print("| pair | policy | steps (rejected / short / exact) | drafts verified | rejected | discarded | "
          "k < bound's | k = | k > |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pair']} | {r['policy']} | {r['steps']} ({r['n_rejected drafts']} / {r['n_stopped short']} / "
              f"{r['n_exact']}) | {r['drafted']} | {r['rejected']} | {r['discarded']} | {r['below']} | "
              f"{r['equal']} | {r['above']} |")
    print(f"\n({rows[0]['questions']} held-out questions; split seed {a.seed}; times exclude prefill)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
