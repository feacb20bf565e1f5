"""Does the engine-path cost model price a step as the live engine pays it?

Measures, side by side in one run on the default pair: the cost model of ``actors/costs/calibrate.py``
(c = t_draft / (T(1) + o), V(1) = (T(2) + o) / (T(1) + o)) and the same figures implied by live generations of Spec-Bench
sample questions (first turns) under ``ar`` and ``fixed`` γ = 1:

    c_live   = median draft phase of a γ = 1 step  /  median ``ar`` step (wall − prefill) / steps
    V_live(1) = median γ = 1 step without its draft phase  /  the same ``ar`` step

(the first step of each generation, which carries the draft's prompt prefill, is left out of the
draft median). Prints both, their ratio, and whether c is within 10 % (issue 26's measure).

    python -m bench.cost_truth [--questions 8] [--max-new-tokens 64] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from actors.costs.calibrate import calibrate
from actors.pair import Pair, PairConfig
from actors.loading.templates import default_template, render
from jobs.dataset import load_questions
from policies.fixed import Fixed, TargetOnly


def live_figures(pair, prompts, max_new_tokens: int) -> dict:
    """c and V(1) implied by live ``ar`` and ``fixed`` γ = 1 generations (module docstring)."""
    ar_steps, drafts, rests = [], [], []
    for ids in prompts:
        ar = pair.engine.generate(ids, TargetOnly(), max_new_tokens=max_new_tokens)
        ar_steps.append((ar.wall_time - ar.prefill_time) / max(ar.decoding_steps, 1))
        g = pair.engine.generate(ids, Fixed(1), max_new_tokens=max_new_tokens)
        drafts += [s.draft_time for s in g.steps[1:] if s.proposed]
        rests.append((g.wall_time - g.prefill_time - sum(s.draft_time for s in g.steps)) / max(g.decoding_steps, 1))
    ar_step = statistics.median(ar_steps)
    return {"ar_step": ar_step, "draft": statistics.median(drafts), "c": statistics.median(drafts) / ar_step,
            "phi1": statistics.median(rests) / ar_step, "generations": 2 * len(prompts)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3, help="probe repeats (actors/costs/calibrate.py)")
    a = ap.parse_args(argv)
    pair = Pair(PairConfig())
    tmpl = default_template(pair.cfg.target, pair.tokenizer)
    qs = load_questions("sample")[: a.questions]
    prompts = [render(tmpl, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs]
    print(f"# bench.cost_truth {time.strftime('%Y-%m-%d %H:%M')} · load {os.getloadavg()[0]:.2f} at start")
    for ids in prompts[:2]:                                                  # warm-up, not counted
        pair.engine.generate(ids, Fixed(1), max_new_tokens=16)
    t = time.perf_counter()
    model = calibrate(pair.engine, repeats=a.repeats)
    probe_s = time.perf_counter() - t
    live = live_figures(pair, prompts, a.max_new_tokens)
    m = model.machine
    print(f"machine: {m['device_name']} · {m['threads']} threads · torch {m['torch']} · load {m['load_avg']} "
          f"after the probe · trusted: {model.reliable} {model.trust.get('reasons', '')}")
    print(f"probe: {probe_s:.1f} s, lengths {model.probe['lengths']}, contexts {model.probe['contexts']}, "
          f"step residual {model.residuals['step']['median_abs_rel']:.1%} (median)")
    print(f"{'':22s}{'model':>10s}{'live':>10s}{'model/live':>12s}")
    print(f"{'plain target step ms':22s}{model.t_target * 1e3:10.1f}{live['ar_step'] * 1e3:10.1f}"
          f"{model.t_target / live['ar_step']:12.3f}")
    print(f"{'draft/proposal ms':22s}{model.t_draft * 1e3:10.1f}{live['draft'] * 1e3:10.1f}"
          f"{model.t_draft / live['draft']:12.3f}")
    print(f"{'c':22s}{model.c:10.3f}{live['c']:10.3f}{model.c / live['c']:12.3f}")
    print(f"{'V(1) = (T(2)+o)/(T(1)+o)':22s}{model.verify_ratio(1):10.3f}{live['phi1']:10.3f}{model.verify_ratio(1) / live['phi1']:12.3f}")
    ok = abs(model.c / live["c"] - 1) <= 0.10
    print(f"c within 10 % of live γ=1 steps: {'yes' if ok else 'NO'} ({live['generations']} live generations)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
