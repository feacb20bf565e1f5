"""Batch benchmark (issue 28 item 8): `ar` throughput against batch size, and whether speculation still pays in a
batch, on the embedded default pair (SmolLM2-135M-Instruct + the shipped distilled draft), in one run.

    python -m bench.batch [--prompts 16] [--max-new-tokens 48] [--sizes 1 4 16] [--gammas 1 2 3 4]
                          [--screen-tokens 16] [--repeats 3]          # ~10 min on the 2-core CPU, quiet
    python -m bench.batch --quick                                    # 4 prompts, 16 tokens, B = 1 and 4

Prompts: the `sample` questions' first turns (then their second turns, as standalone messages, past 26),
rendered with the target's chat template; greedy; the engine (``actors/core/engine.py``) at each batch size.

1. Cost surface: ``actors/costs/batch_costs.py`` (the engine's own steps at B rows, fitted by phase) at B = 1, 2,
   4, … up to the largest size and L = 1, 2, 3, 4, 5, 9, at the prompts' median length + half the new tokens. `gt-batch` reads it: its cost model is
   ``CostModel.measured`` from the B = 1 row with this surface as ``.batch``.
2. Screen: at each B, every candidate — fixed γ for each ``--gammas``, `tetris` (γ = ``--tetris-gamma``),
   `gt-batch`, `batch-schedule` (default schedule; skipped where it equals a fixed γ already screened, same
   decisions) — runs the first max(B, 2) prompts for ``--screen-tokens`` tokens; the best total throughput
   is that B's speculative policy. Picking on this short separate run keeps the winner's luck out of step 3.
3. Measurement: at each B, the prompts in consecutive batches of B; in each batch `ar` and the chosen
   policy run back to back (drift hits both alike).

Figures (bench rule: ratios of configurations measured side by side in this run):
- total throughput of a config = Σ new tokens / Σ batch wall times (prefill included) over all its batches;
  for `ar` also the decode throughput, each batch's prefill left out (the prefill is compute-bound on a CPU:
  16 prompts cost about 16 × one, so it caps the total ratio well below the decode steps' ratio);
- intervals: 95 % paired bootstrap over prompts (``jobs/report/metrics.py``'s ``bootstrap_weights`` and
  ``percentile_interval``). A batch's wall time is split over its rows in proportion to Σ over the row's steps
  of 1 / (rows in that step) — each step's time shared equally by the rows it served — so every prompt
  carries (tokens, seconds) and a resample's throughput is Σ tokens / Σ seconds of the drawn prompts; one
  draw serves every config and every B, so ratios are paired by prompt;
- mean accepted length: ``jobs/report/derived.py``'s ``summarize`` over every row's steps.
Ends with the batch size where speculation stops paying (the smallest B whose best policy is not above `ar`).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from actors.costs.batch_costs import measure_batch_costs
from actors.core.engine import SpecEngine
from actors.pair import Pair, PairConfig
from actors.loading.templates import default_template, render
from jobs.dataset import load_questions
from jobs.report.derived import summarize
from jobs.report.metrics import bootstrap_weights, percentile_interval, verdict
from policies.base import BatchPolicy
from policies.batch import BatchSchedule
from policies.costs import CostModel
from policies.registry import build

SURFACE_WIDTHS = (1, 2, 3, 4, 5, 9)            # every width the screened γ 1–4 verify, and 9


def sample_prompts(tokenizer, template: str, n: int) -> list[list[int]]:
    """The first ``n`` user messages of the `sample` questions (first turns, then second turns), rendered."""
    qs = load_questions("sample")
    texts = [q.turns[0] for q in qs] + [q.turns[1] for q in qs if len(q.turns) > 1]
    if n > len(texts):
        raise SystemExit(f"bench.batch: --prompts {n} > the {len(texts)} sample messages")
    return [render(template, tokenizer, [{"role": "user", "content": t}]) for t in texts[:n]]


def candidates(gammas, tetris_gamma: int) -> list[tuple[str, int]]:
    """(policy spec, initial γ) of every speculative candidate."""
    return [("fixed", g) for g in gammas] + [("tetris", tetris_gamma), ("gt-batch", 1), ("batch-schedule", 1)]


def label(spec: str, gamma: int) -> str:
    """A candidate's name in the tables."""
    return f"fixed γ={gamma}" if spec == "fixed" else (f"tetris γ={gamma}" if spec == "tetris" else spec)


def make_policy(spec: str, gamma: int, rows: int):
    """A batch policy, or ``rows`` fresh per-row policies."""
    first = build(spec, gamma)
    return first if isinstance(first, BatchPolicy) else [first] + [build(spec, gamma) for _ in range(rows - 1)]


def row_seconds(outs, decode_only: bool = False) -> list[float]:
    """A batch's wall time (its prefill left out when ``decode_only``) split over its rows ∝ Σ over each row's steps of
    1 / rows in that step (module docstring)."""
    wall = max(g.wall_time for g in outs) - (max(g.prefill_time for g in outs) if decode_only else 0.0)
    shares = [sum(1.0 / s.batch_rows for s in g.steps) for g in outs]
    total = sum(shares)
    return [wall * s / total if total > 0 else wall / len(outs) for s in shares]


class Run:
    """One config at one batch size: per prompt its generation and its share of the batch time."""

    def __init__(self):
        """No batch yet."""
        self.gens, self.seconds, self.decode_seconds, self.batch_walls, self.prefills = [], [], [], [], []

    def add(self, outs) -> None:
        """Record one batch's generations (in prompt order)."""
        self.gens += outs
        self.seconds += row_seconds(outs)
        self.decode_seconds += row_seconds(outs, decode_only=True)
        self.batch_walls.append(max(g.wall_time for g in outs))
        self.prefills.append(max(g.prefill_time for g in outs))

    @property
    def tokens(self) -> np.ndarray:
        """New tokens per prompt."""
        return np.array([g.new_tokens for g in self.gens], float)

    @property
    def throughput(self) -> float:
        """Σ new tokens / Σ batch wall times."""
        return float(self.tokens.sum() / sum(self.batch_walls))

    @property
    def decode_throughput(self) -> float:
        """Σ new tokens / Σ (batch wall time − its prefill): the decode steps alone."""
        return float(self.tokens.sum() / (sum(self.batch_walls) - sum(self.prefills)))

    @property
    def mal(self) -> float:
        """Mean accepted length over every row's steps."""
        return summarize(self.gens)["mean_accepted_length"]


def ratio_interval(num: Run, den: Run, decode_only: bool = False) -> tuple[float, float, float]:
    """(point, lo, hi): total (or decode-only) throughput of ``num`` over that of ``den``, 95 % paired bootstrap over
    prompts."""
    a_sec, b_sec = (num.decode_seconds, den.decode_seconds) if decode_only else (num.seconds, den.seconds)
    a_tok, a_sec, b_tok, b_sec = num.tokens, np.array(a_sec), den.tokens, np.array(b_sec)
    w = bootstrap_weights(len(a_tok))
    point = (a_tok.sum() / a_sec.sum()) / (b_tok.sum() / b_sec.sum())
    lo, hi = percentile_interval(((w @ a_tok) / (w @ a_sec)) / ((w @ b_tok) / (w @ b_sec)))
    return float(point), float(lo), float(hi)


def run_batches(engine, prompts, size: int, configs, max_new: int, runs: dict, progress=None) -> None:
    """Every config over ``prompts`` in consecutive batches of ``size``, the configs of a batch back to back;
    adds each batch to ``runs[config]``."""
    for start in range(0, len(prompts), size):
        chunk = prompts[start:start + size]
        for c in configs:
            runs.setdefault(c, Run()).add(engine.generate_batch(chunk, make_policy(*c, len(chunk)),
                                                                max_new_tokens=max_new))
        if progress:
            progress(f"B={size}: batch {start // size + 1}/{-(-len(prompts) // size)}")


def surface_table(surface: dict) -> list[str]:
    """The measured batch cost surface as text lines (ms per forward, and per row at L = 1)."""
    widths = surface[min(surface)]["knots"]
    out = [f"{'B':>3s} " + " ".join(f"{f'T_B({L}) ms':>10s}" for L in widths)
           + f" {'draft ms':>9s} {'d0 ms':>7s} {'o ms':>7s} {'T_B(1)/B ms':>11s}"]
    for B, e in sorted(surface.items()):
        out.append(f"{B:3d} " + " ".join(f"{v * 1e3:10.1f}" for v in e["values"]) + f" {e['draft'] * 1e3:9.2f} "
                   f"{e.get('draft_base', 0.0) * 1e3:7.2f} {e.get('overhead', 0.0) * 1e3:7.2f} "
                   f"{e['values'][0] * 1e3 / B:11.2f}")
    return out


def cell(r) -> str:
    """'point [lo, hi]' of a ratio."""
    return f"{r[0]:6.3f} [{r[1]:.3f}, {r[2]:.3f}]"


def stops_paying(best: dict) -> str:
    """The sentence naming where the best policy is faster than `ar` (point value) and where it is not: the smallest
    batch size where it stops paying, or, when paying is not monotone in B, each size that pays and each that does
    not."""
    sizes = sorted(best)
    losing = [B for B in sizes if best[B][1][0] <= 1.0]
    paying = [B for B in sizes if B not in losing]
    if not losing:
        return f"speculation pays at every batch size measured ({', '.join(map(str, sizes))})"
    if not paying:
        return f"speculation does not pay at any batch size measured ({', '.join(map(str, sizes))})"
    if max(paying) < min(losing):
        return f"speculation stops paying at B = {losing[0]} (best policy there ≤ ar; it paid at B = {max(paying)})"
    return (f"speculation pays at B = {', '.join(map(str, paying))} and not at B = {', '.join(map(str, losing))} "
            "(best policy ≤ ar there)")


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (module docstring); ``--quick`` = 4 prompts, 16 tokens, B = 1 and 4, γ 1 and 2."""
    ap = argparse.ArgumentParser(prog="python -m bench.batch")
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--gammas", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--tetris-gamma", type=int, default=4)
    ap.add_argument("--screen-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the cost surface's engine steps (each width: max(4, 2 × repeats) kept steps)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 4 prompts, 16 tokens, B = 1 4, γ = 1 2")
    a = ap.parse_args(argv)
    if a.quick:
        a.prompts, a.max_new_tokens, a.sizes, a.gammas, a.screen_tokens, a.repeats = 4, 16, [1, 4], [1, 2], 8, 1
    a.sizes = sorted(set(a.sizes))
    if a.sizes[0] < 1 or max(a.sizes) > a.prompts:
        raise SystemExit(f"bench.batch: batch sizes must be >= 1 and <= --prompts ({a.prompts}), got {a.sizes}")
    return a


def gt_costs(surface: dict, context: int) -> CostModel:
    """gt-batch's cost model: ``CostModel.measured`` from the surface's B = 1 entry (its draft level, per-step draft
    part and overhead), with the surface as ``.batch``."""
    one = surface[1] if 1 in surface else surface[min(surface)]
    model = CostModel.measured(one["draft"], dict(zip(one["knots"], one["values"])), context=context)
    model.draft["per_step"] = one.get("draft_base", 0.0)
    model.overhead = one.get("overhead", 0.0)
    model.batch = surface
    return model


def main(argv=None) -> None:
    """Run the benchmark (module docstring) and print its tables."""
    a = parse_args(argv)
    t0 = time.perf_counter()
    progress = lambda what: print(f"[bench.batch] {what} · {time.perf_counter() - t0:.0f} s", file=sys.stderr,  # noqa: E731
                                  flush=True)
    pair = Pair(PairConfig(target=a.target, draft=a.draft, device=a.device))
    prompts = sample_prompts(pair.tokenizer, default_template(a.target, pair.tokenizer), a.prompts)
    context = sorted(len(p) for p in prompts)[len(prompts) // 2] + a.max_new_tokens // 2
    sizes_surface = sorted({1 << k for k in range(8) if 1 << k <= max(a.sizes)} | set(a.sizes))
    surface = measure_batch_costs(pair.engine, sizes=sizes_surface, widths=SURFACE_WIDTHS, context=context,
                                  repeats=a.repeats, progress=progress)
    progress(f"cost surface measured at B = {sizes_surface}")
    engine = SpecEngine(pair.target, pair.drafter, pair.eos_ids, costs=gt_costs(surface, context))
    for B in a.sizes:                                                  # warm-up, discarded
        engine.generate_batch(prompts[:B], make_policy("fixed", 2, B), max_new_tokens=4)
    screen, best = {}, {}
    for B in a.sizes:
        n = max(B, 2)
        sched = BatchSchedule().gamma_for(B)
        cands = [c for c in candidates(a.gammas, a.tetris_gamma)
                 if not (c[0] == "batch-schedule" and sched in a.gammas)]
        runs = {}
        run_batches(engine, prompts[:n], B, cands, a.screen_tokens, runs)
        screen[B] = {c: r.throughput for c, r in runs.items()}
        best[B] = max(screen[B], key=screen[B].get)
        progress(f"screen at B={B}: best {label(*best[B])}")
    measured = {}
    for B in a.sizes:
        runs = {}
        run_batches(engine, prompts, B, [("ar", 1), best[B]], a.max_new_tokens, runs, progress)
        measured[B] = runs
    report(a, pair, prompts, context, surface, screen, best, measured, time.perf_counter() - t0)


def report(a, pair, prompts, context, surface, screen, best, measured, seconds) -> None:
    """Print the run's header, cost surface, `ar` scaling, screen and best-vs-`ar` tables, and the closing line."""
    print(f"# batch benchmark {time.strftime('%Y-%m-%d %H:%M')}: {a.target} + {a.draft} on {pair.device}; "
          f"{len(prompts)} sample prompts (median {sorted(map(len, prompts))[len(prompts) // 2]} tokens), "
          f"max_new_tokens={a.max_new_tokens}, greedy, {torch.get_num_threads()} threads, {seconds:.0f} s in all")
    print(f"\n## batch cost surface (engine steps fitted by phase, {max(4, 2 * a.repeats)} per width, at context {context}; "
          "B rows × L tokens)")
    print("\n".join(surface_table(surface)))
    ar1 = measured[a.sizes[0]][("ar", 1)]
    print("\n## ar total throughput vs batch size (Σ tokens / Σ batch time; 95 % paired bootstrap over prompts; "
          "goal ≥ 6× at B = 16 on 2 cores;\n   decode = the same without each batch's prefill, which is compute-bound and "
          "does not gain from batching)")
    vs = f"vs B={a.sizes[0]} [95 %]"
    print(f"{'B':>3s} {'tok/s':>8s} {vs:>26s} {'decode tok/s':>13s} {'decode ' + vs:>30s}")
    for B in a.sizes:
        r = measured[B][("ar", 1)]
        print(f"{B:3d} {r.throughput:8.2f} {cell(ratio_interval(r, ar1)):>26s} {r.decode_throughput:13.2f} "
              f"{cell(ratio_interval(r, ar1, decode_only=True)):>30s}")
    print(f"\n## screen ({a.screen_tokens} tokens on the first max(B, 2) prompts; tok/s; * = chosen)")
    for B in a.sizes:
        row = " · ".join(f"{label(*c)} {v:.2f}{'*' if c == best[B] else ''}" for c, v in screen[B].items())
        print(f"B={B}: {row}")
    print(f"\n## best speculative policy vs ar at the same B ({len(prompts)} prompts, {a.max_new_tokens} tokens)")
    print(f"{'B':>3s} {'policy':16s} {'tok/s':>8s} {'ar tok/s':>8s} {'MAL':>6s} {'vs ar [95 %]':>24s} {'verdict':>24s}"
          "  lossless")
    result = {}
    for B in a.sizes:
        ar, sp = measured[B][("ar", 1)], measured[B][best[B]]
        r = ratio_interval(sp, ar)
        result[B] = (best[B], r)
        same = [g.token_ids for g in sp.gens] == [g.token_ids for g in ar.gens]
        print(f"{B:3d} {label(*best[B]):16s} {sp.throughput:8.2f} {ar.throughput:8.2f} {sp.mal:6.2f} {cell(r):>24s} "
              f"{verdict(*r):>24s}  {'yes' if same else 'NO'}")
    print(stops_paying(result))


if __name__ == "__main__":
    main()
