"""Independent draft vs EAGLE head on one target, side by side in one run (greedy, the `sample` questions' first
turns with the chat template; both held out from every distillation prompt set).

    python -m bench.eagle [--target smollm2-135m] [--draft smollm2-135m-draft] [--head smollm2-135m-eagle]
                          [--gammas 2 4 6] [--max-new-tokens 64]   # ~10 min on 2 cores; a line per question

For each drafter: c (draft per token over a plain target step, measured on the engine's step path),
mean accepted length (bonus counted) with a 95 % bootstrap interval over questions, and speedup vs
`ar` (mean over questions of per-question tok/s, paired ratio with a 95 % bootstrap interval,
``jobs/report/metrics.py``) for `fixed` at each γ and the `eagle2` dynamic tree. All configs of a
question run back to back, so machine drift hits every config alike. Every output is checked
against `ar` (lossless column).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from actors.pair import Pair, PairConfig
from actors.templates import default_template, render
from jobs.dataset import load_questions
from jobs.report.derived import summarize
from jobs.report.intervals import bootstrap_weights, percentile_interval
from jobs.report.metrics import speedup
from policies.registry import build


def mal_interval(gens) -> tuple[float, float, float]:
    """Pooled mean accepted length and its 95 % bootstrap interval over questions."""
    sums = np.array([sum(g.accept_lengths) for g in gens], float)
    steps = np.array([len(g.accept_lengths) for g in gens], float)
    w = bootstrap_weights(len(gens))
    lo, hi = percentile_interval((w @ sums) / (w @ steps))
    return float(sums.sum() / steps.sum()), float(lo), float(hi)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--head", default="smollm2-135m-eagle", help="a shipped head's name or eagle:PATH")
    ap.add_argument("--gammas", type=int, nargs="+", default=[2, 4, 6])
    ap.add_argument("--tree", default="eagle2")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--per-category", type=int, default=1)
    a = ap.parse_args()

    pair = Pair(PairConfig(target=a.target, draft=a.draft))
    engines = {"draft": pair, "eagle": Pair(PairConfig(target=a.target, draft=a.head))}
    costs = {k: p.calibrate() for k, p in engines.items()}
    tmpl = default_template(a.target, pair.tokenizer)
    qs = load_questions("sample", limit_per_category=a.per_category)
    prompts = [render(tmpl, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs]
    configs = [("ar", "ar", 1)] + [(k, "fixed", g) for k in engines for g in a.gammas] + [(k, a.tree, 1) for k in engines]
    for k, p in engines.items():                  # warm-up
        p.engine.generate(prompts[0], build("fixed", 4), max_new_tokens=16)
    gens = {c: [] for c in configs}
    t0 = time.perf_counter()
    for i, prompt in enumerate(prompts, 1):
        for c in configs:
            kind, spec, gamma = c
            eng = pair.engine if kind == "ar" else engines[kind].engine
            gens[c].append(eng.generate(prompt, build(spec, gamma), max_new_tokens=a.max_new_tokens))
        spent = time.perf_counter() - t0
        print(f"[bench.eagle] question {i}/{len(prompts)} done: {len(configs)} configs, {spent:.0f} s so far, "
              f"~{spent / i * (len(prompts) - i):.0f} s left", file=sys.stderr, flush=True)
    print(f"# eagle benchmark {time.strftime('%Y-%m-%d %H:%M')}: {a.target}; draft {a.draft} vs head {a.head}; "
          f"{len(prompts)} sample questions (turn 1), max_new_tokens={a.max_new_tokens}, greedy, "
          f"{torch.get_num_threads()} threads, {pair.device}")
    for k, m in costs.items():
        print(f"{k:6s} c = {m.c:.3f} (draft/token {m.t_draft * 1e3:.2f} ms, plain target step {m.t_target * 1e3:.2f} ms), "
              f"trusted: {'yes' if m.reliable else 'NO'}")
    ar = summarize(gens[configs[0]])
    ar_out = [g.token_ids for g in gens[configs[0]]]
    print(f"{'drafter':7s} {'config':16s} {'tok/s':>7s} {'MAL':>6s} {'MAL 95 %':>15s} {'vs ar':>7s} {'95 % interval':>15s}"
          "  lossless")
    print(f"{'-':7s} {'ar':16s} {ar['throughput']:7.2f} {1.0:6.2f} {'':15s} {1.0:7.3f}")
    best = {}
    for c in configs[1:]:
        kind, spec, gamma = c
        m = summarize(gens[c])
        sp, lo, hi = speedup(m, ar)
        mal, mlo, mhi = mal_interval(gens[c])
        label = f"fixed γ={gamma}" if spec == "fixed" else spec
        if spec == "fixed":
            best[kind] = max(best.get(kind, (0.0, 0)), (sp, gamma))
        print(f"{kind:7s} {label:16s} {m['throughput']:7.2f} {mal:6.2f} {f'[{mlo:.2f}, {mhi:.2f}]':>15s} {sp:7.3f} "
              f"{f'[{lo:.3f}, {hi:.3f}]':>15s}  {[g.token_ids for g in gens[c]] == ar_out}")
    for kind, (sp, g) in best.items():
        print(f"best chain with {kind}: fixed γ={g}, {sp:.3f}× ar")


if __name__ == "__main__":
    main()
