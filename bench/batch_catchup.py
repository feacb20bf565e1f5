"""What an independent draft's catch-up costs in a batch: the first draft forward of a step at width 2 (a row that
accepted every draft feeds its last draft and the target's token) against width 1, over B rows, on the engine's
rows runner (``actors/runtime/row_runners.py``), beside the B-row target forward a K = 3 step verifies.

Why: the γ table (``jobs/report/gamma_table.py``) prices a B-row step from the batch cost surface, which stores the
first draft level at width 1 only; a batch pays the catch-up whenever any of its rows accepted everything. This
measures how large that unpriced term can be: extra = T_draft(B, width 2) − T_draft(B, width 1), and its share of
one B-row step of K = 3 (draft levels 1 + 3·T_draft(B, 1) + the target forward over B × 4 tokens).

Rule: per batch size, B rows of ``--context`` random tokens are prefilled once; each round times (interleaved, in
alternating order) one draft forward of width 1, one of width 2 and one target forward of width 4, every row fed,
the cache rolled back after each; each width's median over ``--rounds`` rounds, and the extra as the mean paired
difference (width 2 − width 1 of a round) with its 95 % percentile-bootstrap interval over rounds.

    python -m bench.batch_catchup [--sizes 1 4 8] [--context 128] [--rounds 40]     # ~1 min on the 2-core CPU
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from actors.costs.quiet import quiet_third_party
from actors.pair import Pair, PairConfig
from actors.runtime.row_runners import rows_runner
from jobs.report.intervals import bootstrap_weights, percentile_interval


def timed_rolled_back(runner, feeds, **forward) -> float:
    """Seconds of one forward of ``feeds`` (one list per row; ``forward``: the runner's options, last-position logits
    by default), the cache rolled back after it: every row holds what it held before, its new slots masked."""
    before = list(runner.lengths)
    t0 = time.perf_counter()
    runner.forward(feeds, **({"last_only": True} | forward))
    dt = time.perf_counter() - t0
    for b, n in enumerate(before):
        runner.rollback(b, n)
    return dt


@torch.no_grad()
def measure(pair: Pair, rows: int, context: int, rounds: int, seed: int = 0) -> dict:
    """Medians (seconds) of draft width 1, draft width 2 and target width 4 over ``rows`` rows, and the extra's
    interval (module rule)."""
    g = torch.Generator().manual_seed(seed + rows)
    vocab = int(pair.tokenizer.vocab_size)
    prompt = [torch.randint(100, vocab - 1, (context,), generator=g).tolist() for _ in range(rows)]
    draft = rows_runner(pair.draft_model, "eager")
    target = rows_runner(pair.target, "eager")
    for r in (draft, target):
        r.reset(rows)
        r.forward(prompt, last_only=True)
    feed = lambda w: [torch.randint(100, vocab - 1, (w,), generator=g).tolist() for _ in range(rows)]   # noqa: E731
    for _ in range(3):                                   # warm-up: first calls allocate
        timed_rolled_back(draft, feed(1)), timed_rolled_back(draft, feed(2)), timed_rolled_back(target, feed(4))
    one, two, verify = [], [], []
    for i in range(rounds):
        if i % 2:
            two.append(timed_rolled_back(draft, feed(2)))
            one.append(timed_rolled_back(draft, feed(1)))
        else:
            one.append(timed_rolled_back(draft, feed(1)))
            two.append(timed_rolled_back(draft, feed(2)))
        verify.append(timed_rolled_back(target, feed(4)))
    one, two, verify = np.array(one), np.array(two), np.array(verify)
    w = bootstrap_weights(rounds, 2000, seed)
    lo, hi = percentile_interval((w @ (two - one)) / w.sum(axis=1))
    step = 4 * np.median(one) + np.median(verify)       # a K = 3 step: 4 draft forwards' worth (d₀ ≈ 1) + T_B(4)
    return {"rows": rows, "draft_1": float(np.median(one)), "draft_2": float(np.median(two)),
            "verify_4": float(np.median(verify)), "extra": float(np.mean(two - one)), "extra_lo": float(lo),
            "extra_hi": float(hi), "share": float(np.mean(two - one) / step)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--target", default="smollm2-135m")
    a = ap.parse_args(argv)
    if min(a.sizes) < 1 or a.context < 1 or a.rounds < 2:
        print("bench.batch_catchup: --sizes must be >= 1, --context >= 1 and --rounds >= 2", file=sys.stderr)
        return 2
    quiet_third_party()
    torch.manual_seed(0)
    pair = Pair(PairConfig(target=a.target, draft=a.draft, device="cpu"))
    print(f"{a.draft} drafting for {a.target}, context {a.context}, {a.rounds} rounds, torch threads "
          f"{torch.get_num_threads()}")
    print("| B | draft width 1 | draft width 2 | extra [95 %] | target B × 4 | extra / K = 3 step |")
    print("|---|---|---|---|---|---|")
    for rows in a.sizes:
        r = measure(pair, rows, a.context, a.rounds)
        print(f"| {rows} | {r['draft_1'] * 1e3:.2f} ms | {r['draft_2'] * 1e3:.2f} ms | {r['extra'] * 1e3:.2f} ms "
              f"[{r['extra_lo'] * 1e3:.2f}, {r['extra_hi'] * 1e3:.2f}] | {r['verify_4'] * 1e3:.1f} ms | "
              f"{r['share']:.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
