"""Independent draft vs EAGLE-1/2 head vs EAGLE-3 head vs the model-free drafters (suffix decoding, n-gram lookup) on one target, side by
side in one run (greedy, chat template; the questions are held out from every distillation prompt set):

* ``sample``: the `sample` questions of Spec-Bench's categories, first turns (``--per-category`` per category);
* ``editing``: the `sample` set's repetitive ``editing`` questions (code editing, multi-turn rewriting), every turn,
  each asked after the target's own earlier answers — the workload suffix decoding is for.

    python -m bench.eagle [--target smollm2-135m] [--draft smollm2-135m-draft] [--head smollm2-135m-eagle]
                          [--head3 smollm2-135m-eagle3]
                          [--model-free suffix ngram] [--gammas 2 4 6] [--max-new-tokens 64]
                          # ~10 min on 2 cores without the model-free drafters; a line per prompt
    python -m bench.eagle --target T --draft D --no-head --gammas 2 --per-category 1 --editing 1 --max-new-tokens 8
                          # a smoke run on small models

A drafter with a memory of earlier responses (suffix decoding) is held, as a sweep actor holds it
(``actors/pair_actor.py``, "Request order"): every config of a prompt drafts from the same memory, the `ar` answers of
the prompts before it, learnt after each prompt's configs ran — no config drafts from another's answer to its own
prompt. The trees (``--tree``) run on every drafter that drafts trees.

For each drafter: c (draft per token over a plain target step, measured on the engine's step path),
mean accepted length (bonus counted) with a 95 % bootstrap interval over questions, and speedup vs
`ar` (mean over questions of per-question tok/s, paired ratio with a 95 % bootstrap interval,
``jobs/report/metrics.py``) for `fixed` at each γ and the `eagle2` dynamic tree. All configs of a
question run back to back, so machine drift hits every config alike. With both heads, the EAGLE-3 head's MAL over the
EAGLE-1/2 head's per config (paired bootstrap over prompts: MAL does not depend on timing). Every output is checked
against `ar` (lossless column). Last, the MAL of each drafter's longest chain and of its tree per category of the
sample questions (steps pooled within the category).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from actors.pair import Pair, PairConfig
from actors.loading.templates import default_template, render
from jobs.dataset import CATEGORIES, SAMPLE_EXTRA, load_questions
from jobs.report.derived import summarize
from jobs.report.intervals import bootstrap_weights, paired_ratio, percentile_interval, ratio
from jobs.report.metrics import speedup
from policies.registry import build


def mal_interval(gens) -> tuple[float, float, float]:
    """Pooled mean accepted length and its 95 % bootstrap interval over questions."""
    return paired_ratio([sum(g.accept_lengths) for g in gens], [len(g.accept_lengths) for g in gens])


def mal_ratio(gens_a, gens_b) -> tuple[float, float, float]:
    """MAL of ``gens_a`` over MAL of ``gens_b`` (each pooled: Σ accepted lengths / Σ steps over the same questions),
    with a 95 % bootstrap interval that resamples the questions once for both sides (paired)."""
    acc_a, n_a = (np.array([f(g) for g in gens_a], float) for f in (lambda g: sum(g.accept_lengths),
                                                                      lambda g: len(g.accept_lengths)))
    acc_b, n_b = (np.array([f(g) for g in gens_b], float) for f in (lambda g: sum(g.accept_lengths),
                                                                      lambda g: len(g.accept_lengths)))
    w = bootstrap_weights(len(acc_a))
    point = (acc_a.sum() / n_a.sum()) / (acc_b.sum() / n_b.sum())
    lo, hi = percentile_interval(ratio(ratio(w @ acc_a, w @ n_a), ratio(w @ acc_b, w @ n_b)))
    return float(point), float(lo), float(hi)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--head", default="smollm2-135m-eagle", help="a shipped head's name or eagle:PATH")
    ap.add_argument("--gammas", type=int, nargs="+", default=[2, 4, 6])
    ap.add_argument("--tree", default="eagle2")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--per-category", type=int, default=1)
    ap.add_argument("--head3", default="smollm2-135m-eagle3", help="a shipped EAGLE-3 head's name or eagle3:PATH")
    ap.add_argument("--no-draft", action="store_true", help="leave the independent draft out (it still runs `ar`)")
    ap.add_argument("--no-head", action="store_true", help="leave the EAGLE heads out (a target without one)")
    ap.add_argument("--model-free", nargs="*", default=["suffix", "ngram"], help="model-free drafters compared too")
    ap.add_argument("--editing", type=int, default=8, help="how many of the sample's editing questions (all turns)")
    a = ap.parse_args()

    pair = Pair(PairConfig(target=a.target, draft=a.draft))
    engines = {} if a.no_draft else {"draft": pair}
    if not a.no_head:
        engines["eagle"] = Pair(PairConfig(target=a.target, draft=a.head))
        engines["eagle3"] = Pair(PairConfig(target=a.target, draft=a.head3))
    for name in a.model_free:
        engines[name] = Pair(PairConfig(target=a.target, draft=name))
    costs = {k: p.calibrate() for k, p in engines.items()}
    if not engines:
        raise SystemExit("bench.eagle: no drafter left to compare (--no-draft, --no-head and no --model-free)")
    tmpl = default_template(a.target, pair.tokenizer)
    spec_bench = [q for q in load_questions("sample", limit_per_category=a.per_category) if q.category in CATEGORIES]
    editing = load_questions("sample", categories=SAMPLE_EXTRA)[:a.editing] if a.editing > 0 else []
    configs = [("ar", "ar", 1)] + [(k, "fixed", g) for k in engines for g in a.gammas] + \
        [(k, a.tree, 1) for k, p in engines.items() if p.drafter.supports_trees]
    first = render(tmpl, pair.tokenizer, [{"role": "user", "content": spec_bench[0].turns[0]}])
    for k, p in engines.items():                  # warm-up, then every memory of responses is held (module doc)
        p.engine.generate(first, build("fixed", 4), max_new_tokens=16)
        p.drafter.hold(True)
    sets = {"sample": [(q, q.turns[:1]) for q in spec_bench], "editing": [(q, q.turns) for q in editing]}
    total = sum(len(turns) for qs in sets.values() for _, turns in qs)
    gens = {s: {c: [] for c in configs} for s in sets}
    t0, done = time.perf_counter(), 0
    for name, questions in sets.items():
        for q, turns in questions:
            messages = []
            for turn in turns:
                messages.append({"role": "user", "content": turn})
                prompt = render(tmpl, pair.tokenizer, messages)
                for c in configs:
                    kind, spec, gamma = c
                    eng = pair.engine if kind == "ar" else engines[kind].engine
                    gens[name][c].append(eng.generate(prompt, build(spec, gamma), max_new_tokens=a.max_new_tokens))
                answer = gens[name][configs[0]][-1].token_ids
                for p in engines.values():            # learnt after every config of the prompt ran
                    p.drafter.remember(answer)
                messages.append({"role": "assistant",
                                 "content": pair.tokenizer.decode(answer, skip_special_tokens=True).strip()})
                done += 1
                spent = time.perf_counter() - t0
                print(f"[bench.eagle] prompt {done}/{total} done: {len(configs)} configs, {spent:.0f} s so far, "
                      f"~{spent / done * (total - done):.0f} s left", file=sys.stderr, flush=True)
    print(f"# eagle benchmark {time.strftime('%Y-%m-%d %H:%M')}: {a.target}; drafters {', '.join(engines)} "
          f"(draft {a.draft}{'' if a.no_head else f', heads {a.head}, {a.head3}'}); {len(spec_bench)} sample questions (turn 1), "
          f"{len(editing)} editing questions (every turn); max_new_tokens={a.max_new_tokens}, greedy, "
          f"{torch.get_num_threads()} threads, {pair.device}")
    for k, m in costs.items():
        print(f"{k:6s} c = {m.c:.3f} (draft/token {m.t_draft * 1e3:.2f} ms, plain target step {m.t_target * 1e3:.2f} ms), "
              f"trusted: {'yes' if m.reliable else 'NO'}")
    for name, by_config in gens.items():
        if by_config[configs[0]]:
            print(f"## {name}: {len(by_config[configs[0]])} prompts")
            table(configs, by_config, None if a.no_head else ("eagle3", "eagle"))
    by_category(configs, gens["sample"], [q.category for q in spec_bench])


def table(configs, gens, ratio: tuple[str, str] | None = None) -> None:
    """One prompt set's rows: tok/s, MAL with its interval, speedup vs ar with its interval, lossless; with ``ratio``
    = (a, b), drafter a's MAL over drafter b's per config (:func:`mal_ratio`)."""
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
        print(f"{kind[:7]:7s} {label:16s} {m['throughput']:7.2f} {mal:6.2f} {f'[{mlo:.2f}, {mhi:.2f}]':>15s} {sp:7.3f} "
              f"{f'[{lo:.3f}, {hi:.3f}]':>15s}  {[g.token_ids for g in gens[c]] == ar_out}")
    for kind, (sp, g) in best.items():
        print(f"best chain with {kind}: fixed γ={g}, {sp:.3f}× ar")
    if ratio:                                                  # issue 42's bar: the EAGLE-3 head's MAL over EAGLE-1/2's
        top, bottom = ratio
        for c in configs[1:]:
            if c[0] == top and (bottom, *c[1:]) in gens:
                r, lo, hi = mal_ratio(gens[c], gens[(bottom, *c[1:])])
                label = f"fixed γ={c[2]}" if c[1] == "fixed" else c[1]
                print(f"MAL {top} / {bottom}, {label}: {r:.3f} [{lo:.3f}, {hi:.3f}] (paired over prompts)")


def by_category(configs, gens, categories: list[str]) -> None:
    """MAL per category of the sample questions (steps pooled within a category) for each drafter's longest chain
    and its tree: where a drafter falls short. One question per category by default (``--per-category``), so no
    interval."""
    longest = {}
    for c in configs[1:]:
        if c[1] == "fixed" and c[2] >= longest.get(c[0], ("", "", 0))[2]:
            longest[c[0]] = c
    shown = list(longest.values()) + [c for c in configs[1:] if c[1] != "fixed"]
    if not shown or not categories:
        return
    print("## sample: MAL by category (" + ", ".join(f"{k} {'fixed γ=' + str(g) if s == 'fixed' else s}"
                                                    for k, s, g in shown) + ")")
    for cat in dict.fromkeys(categories):
        cells = []
        for c in shown:
            lengths = [a for g, q in zip(gens[c], categories) if q == cat for a in g.accept_lengths]
            cells.append(f"{sum(lengths) / max(len(lengths), 1):5.2f}")
        print(f"{cat:16s} " + " ".join(cells))


if __name__ == "__main__":
    main()
