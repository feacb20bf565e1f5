"""Tree benchmark: for one pair, side by side in one run (greedy): `fixed` at its best γ,
`gammatune`, `sequoia`, `gt-static`, `eagle2`, `gt-dynamic` — throughput, mean accepted
length, nodes verified per step, tree depth — plus the target's verify time against the
number of tokens verified (where verifying more stops being free).

    python bench/trees.py [--target smollm2-135m] [--draft smollm2-135m-draft] [--questions 6]
    python bench/trees.py --random-shapes llama-7b/vicuna-68m --cost-curve-only   # GPU: verify time vs nodes
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/

import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--gammas", type=int, nargs="+", default=[2, 3, 4, 6])
    ap.add_argument("--random-shapes", default=None)
    ap.add_argument("--cost-curve-only", action="store_true")
    a = ap.parse_args()
    from actors.calibrate import calibrate

    if a.random_shapes:
        from bench.engine import random_pair

        dev = "cuda" if torch.cuda.is_available() else "cpu"
        target, draft = random_pair(a.random_shapes, dev)
        costs = calibrate(target, draft, context=512, max_tokens=256)
        print(f"# verify time vs tokens verified: {a.random_shapes} (random weights) on {dev}, {time.strftime('%Y-%m-%d %H:%M')}")
        for m, t in sorted(costs.t_verify.items()):
            print(f"{m:5d} tokens: {t * 1e3:8.2f} ms  ({t / costs.verify(1):5.2f}× one token)")
        print(f"draft token: {costs.t_draft * 1e3:.2f} ms, c = {costs.c:.3f}")
        if a.cost_curve_only:
            return
    from actors.pair import Pair, PairConfig
    from jobs.dataset import load_questions
    from actors.templates import default_template, render
    from policies.registry import build

    pair = Pair(PairConfig(target=a.target, draft=a.draft))
    costs = pair.calibrate()
    tmpl = default_template(a.target, pair.tokenizer)
    qs = load_questions("sample", limit_per_category=1)[: a.questions]
    prompts = [render(tmpl, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs]
    pair.engine.generate(prompts[0], build("ar"), max_new_tokens=16)

    def run(spec, gamma=1):
        tok, sec, al, nodes, depth, outs = 0, 0.0, [], [], [], []
        for p in prompts:
            g = pair.engine.generate(p, build(spec, gamma), max_new_tokens=a.max_new_tokens)
            tok, sec = tok + g.new_tokens, sec + g.wall_time
            al += g.accept_lengths
            nodes += g.drafted
            depth += g.gammas
            outs.append(g.token_ids)
        return tok / sec, statistics.fmean(al), statistics.fmean(nodes), statistics.fmean(depth), outs

    print(f"# tree benchmark {time.strftime('%Y-%m-%d %H:%M')}: {a.target} + {a.draft} on {pair.device}, "
          f"{len(prompts)} sample questions, max_new_tokens={a.max_new_tokens}, greedy, {torch.get_num_threads()} threads")
    print(f"c = {costs.c:.3f}; per-rank acceptance = {[round(x, 3) for x in pair.rank_acceptance]}")
    print("verify time vs tokens: " + ", ".join(f"{m}: {t * 1e3:.1f} ms" for m, t in sorted(costs.t_verify.items())))
    ar_tps, _, _, _, ar_out = run("ar")
    rows = [("ar", ar_tps, 1.0, 0.0, 0.0, True)]
    best = None
    for gm in a.gammas:
        r = run("fixed", gm)
        if best is None or r[0] > best[1][0]:
            best = (gm, r)
    rows.append((f"fixed γ={best[0]} (best)", *best[1][:4], best[1][4] == ar_out))
    for spec in ("gammatune", "sequoia", "gt-static", "eagle2", "gt-dynamic"):
        r = run(spec, best[0])
        rows.append((spec, *r[:4], r[4] == ar_out))
    print(f"{'config':22s} {'tok/s':>8s} {'vs ar':>6s} {'MAL':>6s} {'nodes':>6s} {'depth':>6s} lossless")
    for name, tps, mal, nodes, depth, same in rows:
        print(f"{name:22s} {tps:8.2f} {tps / ar_tps:6.3f} {mal:6.2f} {nodes:6.1f} {depth:6.1f} {same}")


if __name__ == "__main__":
    main()
