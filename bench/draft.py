"""Distilled-draft benchmark on the `sample` questions (held out from the distillation prompts),
greedy, side by side in one run: acceptance rate and mean accepted length at γ = 4, the cost
ratio c (draft time per token / target forward time), and `fixed` speedup vs `ar` per γ.

    python -m bench.draft [--target smollm2-135m] [--draft smollm2-135m-draft] [--gammas 1 2 3 4 6 8]

Throughput is the mean over questions of per-question tok/s and "vs ar" its paired ratio with a
95 % bootstrap interval over questions (``jobs/report/metrics.py``).
Goals: mean accepted length >= 2.0 at γ = 4, c <= 0.25, best speedup > 1.0.
"""
from __future__ import annotations

import argparse
import time

import torch

from actors.pair import Pair, PairConfig
from actors.loading.templates import default_template, render
from jobs.dataset import load_questions
from jobs.report.derived import summarize
from jobs.report.metrics import speedup
from policies.registry import build


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--gammas", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8])
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--per-category", type=int, default=1)
    a = ap.parse_args()


    pair = Pair(PairConfig(target=a.target, draft=a.draft))
    costs = pair.calibrate()
    tmpl = default_template(a.target, pair.tokenizer)
    qs = load_questions("sample", limit_per_category=a.per_category)
    prompts = [render(tmpl, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs]
    pair.engine.generate(prompts[0], build("ar"), max_new_tokens=16)   # warm-up

    def run(spec, gamma):
        gens = [pair.engine.generate(p, build(spec, gamma), max_new_tokens=a.max_new_tokens) for p in prompts]
        return summarize(gens), [g.token_ids for g in gens]

    print(f"# draft benchmark {time.strftime('%Y-%m-%d %H:%M')}: {a.target} + {a.draft}, {len(prompts)} sample "
          f"questions (turn 1), max_new_tokens={a.max_new_tokens}, greedy, {torch.get_num_threads()} threads, {pair.device}")
    print(f"c = t_draft / t_target = {costs.t_draft * 1e3:.2f} ms / {costs.verify(1) * 1e3:.2f} ms = {costs.c:.3f} "
          f"(context {costs.context})")
    ar, ar_out = run("ar", 1)
    print(f"{'config':14s} {'tok/s':>8s} {'MAL':>6s} {'alpha':>6s} {'vs ar':>7s} {'95 % interval':>15s}  lossless")
    print(f"{'ar':14s} {ar['throughput']:8.2f} {ar['mean_accepted_length']:6.2f} {'-':>6s} {1.0:7.3f}")
    best = (0.0, None)
    for gm in a.gammas:
        m, outs = run("fixed", gm)
        sp, lo, hi = speedup(m, ar)
        best = max(best, (sp, gm))
        print(f"{f'fixed γ={gm}':14s} {m['throughput']:8.2f} {m['mean_accepted_length']:6.2f} {m['acceptance_rate']:6.3f} "
              f"{sp:7.3f} {f'[{lo:.3f}, {hi:.3f}]':>15s}  {outs == ar_out}")
    print(f"best fixed: γ={best[1]} speedup {best[0]:.3f}×")


if __name__ == "__main__":
    main()
