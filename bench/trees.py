"""Tree benchmark: for one pair, side by side in one run (greedy): `ar`, `fixed` and `gammatune`
at each γ, `sequoia`, `gt-static`, `eagle2`, `gt-dynamic` — throughput, speedup vs `ar` with its
95 % paired-bootstrap interval over questions, mean accepted length, nodes verified and tree depth
per target forward, losslessness — plus the target's verify time against the number of tokens
verified (where verifying more stops being free).

    python -m bench.trees [--target smollm2-135m] [--draft smollm2-135m-draft] [--questions 6]
    python -m bench.trees --random-shapes llama-7b/vicuna-68m --cost-curve-only   # GPU: verify time vs nodes

Rules:
- interleaved: each question runs every config before the next question starts; the middle
  configs alternate forward / reverse order between questions, and `ar` runs first and last
  on every question. The closing `ar` is the noise control: "ar last / ar first" compares `ar`
  with itself, so a speedup whose interval overlaps that control's is not resolved.
- metrics, ratios and intervals come from ``jobs/report/metrics.py`` (throughput = mean over questions
  of per-question tok/s); every speedup uses the first `ar` on the same questions.
- head-to-head ratios: gt-static / sequoia and gt-dynamic / eagle2 (building by benefit vs by
  length), each with its paired interval.
"""
from __future__ import annotations

import argparse
import time

import torch

from actors.costs.calibrate import calibrate
from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.pair import Pair, PairConfig
from actors.loading.templates import default_template, render
from bench.engine import random_pair
from jobs.dataset import load_questions
from jobs.report.derived import summarize
from jobs.report.metrics import speedup
from policies.registry import build

TREES = ("sequoia", "gt-static", "eagle2", "gt-dynamic")


def cost_curve(a) -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    target, draft = random_pair(a.random_shapes, dev)
    engine = SpecEngine(target, ModelDrafter(draft), capacity=4096, max_draft=255)
    costs = calibrate(engine, context=512, max_tokens=256)
    print(f"# verify time vs tokens verified: {a.random_shapes} (random weights) on {dev}, {time.strftime('%Y-%m-%d %H:%M')}")
    for m, t in sorted(costs.t_verify.items()):
        print(f"{m:5d} tokens: {t * 1e3:8.2f} ms  ({t / costs.verify(1):5.2f}× one token)")
    print(f"draft token: {costs.t_draft * 1e3:.2f} ms, c = {costs.c:.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--gammas", type=int, nargs="+", default=[2, 3, 4, 6])
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    ap.add_argument("--random-shapes", default=None)
    ap.add_argument("--cost-curve-only", action="store_true")
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.random_shapes:
        cost_curve(a)
        if a.cost_curve_only:
            return

    pair = Pair(PairConfig(target=a.target, draft=a.draft))
    costs = pair.calibrate()
    tmpl = default_template(a.target, pair.tokenizer)
    qs = load_questions("sample", limit_per_category=1)[: a.questions]
    prompts = [render(tmpl, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs]
    pair.engine.generate(prompts[0], build("ar"), max_new_tokens=16)          # warm-up, not counted

    middle = [(f"{s} γ={g}", s, g) for s in ("fixed", "gammatune") for g in a.gammas] + [(t, t, 1) for t in TREES]
    configs = [("ar", "ar", 1)] + middle + [("ar (last)", "ar", 1)]
    gens = {name: [] for name, _, _ in configs}
    t0 = time.perf_counter()
    for qi, p in enumerate(prompts):
        order = [configs[0]] + (middle if qi % 2 == 0 else middle[::-1]) + [configs[-1]]
        for name, spec, gamma in order:
            gens[name].append(pair.engine.generate(p, build(spec, gamma), max_new_tokens=a.max_new_tokens))
        print(f"question {qs[qi].question_id} ({qs[qi].category}): {len(order)} generations, "
              f"{time.perf_counter() - t0:.0f} s so far", flush=True)

    m = {name: summarize(g) for name, g in gens.items()}
    ar_out = [g.token_ids for g in gens["ar"]]
    print(f"# tree benchmark {time.strftime('%Y-%m-%d %H:%M')}: {a.target} + {a.draft} on {pair.device}, "
          f"{len(prompts)} sample questions (turn 1), max_new_tokens={a.max_new_tokens}, greedy, "
          f"{torch.get_num_threads()} threads, configs interleaved per question")
    print(f"c = {costs.c:.3f}; per-rank acceptance (unconditional) = {[round(x, 3) for x in pair.rank_acceptance]}")
    print("verify time vs tokens: " + ", ".join(f"{k}: {t * 1e3:.1f} ms" for k, t in sorted(costs.t_verify.items())))
    print(f"{'config':16s} {'tok/s':>7s} {'vs ar':>6s} {'95 % interval':>16s} {'MAL':>5s} {'nodes':>6s} {'depth':>6s} lossless")
    for name, _, _ in configs:
        r = m[name]
        sp, lo, hi = speedup(r, m["ar"])
        same = [g.token_ids for g in gens[name]] == ar_out
        print(f"{name:16s} {r['throughput']:7.2f} {sp:6.3f} {f'[{lo:.3f}, {hi:.3f}]':>16s} "
              f"{r['mean_accepted_length']:5.2f} {r['drafted_per_forward']:6.1f} {r['max_draft_per_forward']:6.1f} {same}")
    for num, den in (("gt-static", "sequoia"), ("gt-dynamic", "eagle2")):
        sp, lo, hi = speedup(m[num], m[den])
        print(f"{num} / {den}: {sp:.3f} [{lo:.3f}, {hi:.3f}]")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
