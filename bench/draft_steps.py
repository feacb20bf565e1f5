"""What one drafting step costs under each policy at equal draft forwards: the real pair at B = 1, every step timed
apart (``Step.draft_time``), the policies interleaved over the same questions.

Why: the γ table's live check (``jobs/report/gamma_table.py``) prices ``fixed`` γ = K out of sample, from the other
configs' steps, with one draft rule for every policy — d₀ per drafting step + T_d per draft forward + the catch-up
and context terms (``jobs/report/live_costs.py``). A sweep's log holds each row's summed clocks only; this times the
steps themselves, to see whether a policy's drafting steps cost more or less than the rule gives at the same number
of forwards.

Rule: ``--repeats`` rounds; in each, after each question every policy (built at γ = ``--gamma``, calibrated cost
model attached as the sweep's actors do) generates ``--max-new-tokens``, the policies' order rotated by one per
question and round, so a machine that drifts over minutes slows every policy alike. Each step
that drafted, after a generation's first (which feeds the prompt to the draft), is one sample: its draft seconds,
its draft forwards ℓ (proposals made), whether the step before it verified every draft (the draft then catches up
on two tokens) and the tokens before it. Printed: median ms per (policy, ℓ); then one least-squares rule over every
policy's samples, ms = d₀ + T_d·ℓ + d_c·[caught up] + d_x·ℓ·tokens/100, and per policy the mean residual (measured
− rule) with its 95 % bootstrap interval over question × round blocks (every policy drawn with the same blocks).

    python -m bench.draft_steps [--draft smollm2-135m-draft] [--policies fixed gt-batch tetris] [--repeats 3]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from actors.costs.quiet import quiet_third_party
from actors.loading.templates import default_template, render
from actors.pair import Pair, PairConfig
from jobs.dataset import load_questions
from jobs.report.intervals import bootstrap_weights, percentile_interval
from policies.registry import build

QUESTIONS = (9017, 9021, 9022, 9023)                 # jobs/configs/batches.yaml's


def schedule(questions: int, policies: list[str], repeats: int) -> list[tuple[int, int, str]]:
    """(block, question index, policy) in run order: block = question × round, every policy once per block, the
    policies' order rotated by one from each block to the next (module rule)."""
    out = []
    for block in range(repeats * questions):
        out += [(block, block % questions, policies[(j + block) % len(policies)]) for j in range(len(policies))]
    return out


def samples(pair: Pair, prompts: list, policies: list[str], gamma: int, repeats: int, max_new: int) -> list[tuple]:
    """(policy, block, ℓ, caught up, tokens before, draft seconds) of every drafting step but each generation's
    first (module rule)."""
    out = []
    for block, q, spec in schedule(len(prompts), policies, repeats):
        g = pair.engine.generate(prompts[q], build(spec, gamma), max_new_tokens=max_new)
        before, caught = 0, False
        for i, s in enumerate(g.steps):
            made = s.proposed or s.drafted
            if i and made:
                out.append((spec, block, made, caught, before, s.draft_time))
            caught = bool(s.drafted) and s.accepted == s.drafted
            before += s.emitted
    return out


def residuals(rows: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """(the shared rule's coefficients [d₀, T_d, d_c, d_x] in ms, each sample's measured − rule in ms)."""
    made = np.array([r[2] for r in rows], dtype=float)
    X = np.column_stack([np.ones(len(rows)), made, [float(r[3]) for r in rows], made * [r[4] / 100 for r in rows]])
    y = np.array([r[5] for r in rows]) * 1e3
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    return coef, y - X @ coef


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--policies", nargs="+", default=["fixed", "gt-batch", "tetris"])
    ap.add_argument("--gamma", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.gamma < 1 or a.max_new_tokens < 2:
        print("bench.draft_steps: --repeats and --gamma must be >= 1, --max-new-tokens >= 2", file=sys.stderr)
        return 2
    quiet_third_party()
    torch.manual_seed(0)
    pair = Pair(PairConfig(target=a.target, draft=a.draft, device="cpu"))
    pair.calibrate(context=128, max_tokens=16, repeats=3)          # batches.yaml's calibration: gt-batch reads it
    template = default_template(a.target, pair.tokenizer)
    qs = [q for q in load_questions("sample") if q.question_id in QUESTIONS]
    prompts = [render(template, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs]
    pair.engine.generate(prompts[0], build("ar"), max_new_tokens=8)                      # warm-up
    rows = samples(pair, prompts, a.policies, a.gamma, a.repeats, a.max_new_tokens)
    print(f"{a.draft} drafting for {a.target} at B = 1, γ {a.gamma}, {len(prompts)} questions × {a.repeats} rounds, "
          f"{a.max_new_tokens} new tokens, torch threads {torch.get_num_threads()}")
    widest = max(r[2] for r in rows)
    print("| policy | " + " | ".join(f"ℓ = {m}: steps, median ms" for m in range(1, widest + 1)) + " |")
    print("|---|" + "---|" * widest)
    for spec in a.policies:
        cells = []
        for m in range(1, widest + 1):
            t = [r[5] * 1e3 for r in rows if r[0] == spec and r[2] == m]
            cells.append(f"{len(t)}, {np.median(t):.2f}" if t else "–")
        print(f"| {spec} | " + " | ".join(cells) + " |")
    coef, res = residuals(rows)
    print(f"\nshared rule: d₀ {coef[0]:.2f} ms + T_d {coef[1]:.2f} ms·ℓ + catch-up {coef[2]:.2f} ms + "
          f"{coef[3]:.3f} ms·ℓ per 100 tokens before")
    print("| policy | steps | mean measured − rule [95 %] |")
    print("|---|---|---|")
    for spec in a.policies:
        mine = [i for i, r in enumerate(rows) if r[0] == spec]
        blocks = sorted({rows[i][1] for i in mine})
        tot = np.array([sum(res[i] for i in mine if rows[i][1] == g) for g in blocks], dtype=float)
        cnt = np.array([sum(1 for i in mine if rows[i][1] == g) for g in blocks], dtype=float)
        w = bootstrap_weights(len(blocks), 2000, 0)
        lo, hi = percentile_interval((w @ tot) / (w @ cnt))
        print(f"| {spec} | {len(mine)} | {tot.sum() / cnt.sum():+.2f} ms [{lo:+.2f}, {hi:+.2f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
