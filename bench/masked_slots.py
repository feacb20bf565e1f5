"""What masked slots cost a batch's target forward: the eager rows runner (``actors/runtime/batch_runner.py``) keeps
rejected drafts and padding as masked slots until it compacts (slots > 2 · the longest row + ``COMPACT_SLACK``), so a
B-row verify attends over more slots than its rows hold; this times that against a cache without them.

Why: the γ table's cost model (``jobs/report/gamma_table.py``) prices a B-row step by its verified width and the
rows' committed context, not by the cache's physical slots; a config that verifies wide and accepts little leaves
more masked slots behind, so its later steps cost more than the model says.

Rule: B rows of ``--context`` random tokens are prefilled into one runner per gap G (compaction switched off); before
each timed forward the runner is compacted and G masked slots are added (a forward of G tokens rolled back,
untimed); each round times a target forward of ``--width`` tokens per row in every runner (order alternating
between rounds), rolled back after it. Per G: the median time and the mean paired ratio to G = 0 within a round,
with its 95 % percentile-bootstrap interval over rounds.

    python -m bench.masked_slots [--rows 4] [--context 64] [--width 4] [--gaps 0 32 64 128] [--rounds 40]  # ~2 min
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from actors.costs.quiet import quiet_third_party
from actors.pair import Pair, PairConfig
from actors.runtime.batch_runner import BatchRunner
from bench.batch_catchup import timed_rolled_back
from jobs.report.intervals import bootstrap_weights, percentile_interval


@torch.no_grad()
def measure(model, vocab: int, rows: int, context: int, width: int, gaps: list[int], rounds: int,
            seed: int = 0) -> dict[int, np.ndarray]:
    """{G: [rounds] seconds of a width-``width`` forward over ``rows`` rows with G masked slots} (module rule)."""
    g = torch.Generator().manual_seed(seed)
    feed = lambda w: [torch.randint(100, vocab - 1, (w,), generator=g).tolist() for _ in range(rows)]   # noqa: E731
    runners = {}
    for gap in gaps:
        r = BatchRunner(model)
        r.COMPACT_SLACK = 10 ** 9                       # this instance never compacts by itself
        r.reset(rows)
        r.forward(feed(context), logits=False)
        runners[gap] = r

    def timed(gap: int) -> float:
        r = runners[gap]
        r.compact()
        if gap:
            timed_rolled_back(r, feed(gap), logits=False)
        return timed_rolled_back(r, feed(width), last_only=False)

    for gap in gaps:                                    # warm-up: first calls allocate
        timed(gap)
    out = {gap: [] for gap in gaps}
    for i in range(rounds):
        for gap in (gaps if i % 2 == 0 else gaps[::-1]):
            out[gap].append(timed(gap))
    return {gap: np.array(v) for gap, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--width", type=int, default=4)
    ap.add_argument("--gaps", type=int, nargs="+", default=[0, 32, 64, 128])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--target", default="smollm2-135m")
    a = ap.parse_args(argv)
    if min(a.rows, a.context, a.width) < 1 or a.rounds < 2 or min(a.gaps) < 0:
        print("bench.masked_slots: --rows, --context and --width must be >= 1, --rounds >= 2, --gaps >= 0",
              file=sys.stderr)
        return 2
    gaps = sorted(set([0] + a.gaps))
    quiet_third_party()
    torch.manual_seed(0)
    pair = Pair(PairConfig(target=a.target, draft=None, device="cpu"))
    t = measure(pair.target, int(pair.tokenizer.vocab_size), a.rows, a.context, a.width, gaps, a.rounds)
    w = bootstrap_weights(a.rounds, 2000, 0)
    print(f"{a.target}: B = {a.rows} rows of {a.context} tokens, a width-{a.width} forward, {a.rounds} rounds, "
          f"torch threads {torch.get_num_threads()}")
    print("| masked slots | cache slots | median | vs none (mean paired ratio − 1) [95 %] |")
    print("|---|---|---|---|")
    for gap in gaps:
        ratio = t[gap] / t[0]
        lo, hi = percentile_interval((w @ ratio) / w.sum(axis=1))
        print(f"| {gap} | {a.context + gap} | {np.median(t[gap]) * 1e3:.1f} ms | {ratio.mean() - 1:+.1%} "
              f"[{lo - 1:+.1%}, {hi - 1:+.1%}] |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
