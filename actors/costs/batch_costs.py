"""Measure a pair's batch cost surface: what one batched target forward and one batched draft forward cost.

Rule. For each batch size B in ``sizes``, B rows of ``context`` tokens (a random block repeated,
``actors/costs/calibrate.py::block_prompt``, row b with its own seed) are prefilled into the rows runner of the pair's
engine (``actors/runtime/row_runners.py::rows_runner``: the gap-masked eager cache, or the per-row static cache, compiled
into CUDA graphs on ``compiled``), the one the engine's batches run on. Then, for each width L in ``widths``:
one discarded forward, then ``repeats`` timed forwards, each feeding every row L new tokens
(B·L slots) and rolling every row back to ``context`` tokens afterwards, so every timed forward
runs at the same context. T_B(L) is the median of those times. On the eager cache the masked
slots left by the rollbacks are compacted away, outside the timer, once they exceed :data:`GAP_LIMIT` per row
(the engine's cache carries gaps of that order too); the static cache has none. T_d(B), one batched draft level, is
the drafter kind's cost probe (``actors/drafter_kinds/``): with a draft model the same is done on a runner of
the draft with L = 1 (one draft token per row, the batch drafter's level, :func:`forward_medians`) and T_d(B) is
its median; with an EAGLE head it is the median of one batched head level (``actors/drafting/batch_eagle.py``: one token
per row, its draft logits and pick) after a ``context``-position catch-up on random features; without either (a
model-free drafter: a lookup, no forward) T_d(B) = 0.

Result: ``{B: {"knots": [L…], "values": [T_B(L)…], "draft": T_d(B), "raw": [medians…]}}``, the format of
``policies/costs.py``'s ``CostModel.batch``: ``values`` is the least-squares non-decreasing fit of the medians
over L (``policies/costs.py::monotone``, as the single-row table gets: a wider forward never costs less),
``raw`` the medians themselves. On CUDA the device is synchronized at every clock reading.
"""
from __future__ import annotations

import statistics
from typing import Sequence

import torch

from actors.runtime.batch_runner import BatchRunner
from actors.costs.calibrate import block_prompt
from actors.runtime.clock import device_clock as clock
from actors.runtime.row_runners import rows_runner
from policies.costs import monotone

GAP_LIMIT = 64      # masked slots per row tolerated before an (untimed) compaction


def _vocab(model) -> int:
    """Rows of the target's input embedding: the token ids both models are fed (a reduced-vocabulary draft maps
    them itself)."""
    return int(model.get_input_embeddings().weight.shape[0])


@torch.no_grad()
def forward_medians(model, rows: int, widths: Sequence[int], context: int, repeats: int, vocab: int,
                    seed: int = 0, engine: str = "eager", inductor: bool | None = None) -> list[float]:
    """Median seconds of one forward of ``model`` over ``rows`` rows × L new tokens (ids < ``vocab``) after a
    ``context``-token prefill, for each L in ``widths`` (the module docstring's rule), on ``engine``'s rows runner."""
    runner = rows_runner(model, engine, capacity=context + max(widths) + 1, inductor=inductor)
    runner.prepare(max(widths))
    runner.reset(rows)
    runner.forward([block_prompt(vocab, context, seed + b) for b in range(rows)], logits=False)
    gen = torch.Generator().manual_seed(seed)
    out = []
    for width in widths:
        times = []
        for r in range(repeats + 1):                      # the first forward of each width is discarded
            feeds = torch.randint(0, vocab, (rows, width), generator=gen).tolist()
            if isinstance(runner, BatchRunner) and runner.slots > context + GAP_LIMIT:
                runner.compact()
            t = clock(runner.device)
            runner.forward(feeds)
            dt = clock(runner.device) - t
            for b in range(rows):
                runner.rollback(b, context)
            if r:
                times.append(dt)
        out.append(statistics.median(times))
    return out


def measure_batch_costs(target, draft_level=None, sizes: Sequence[int] = (1, 2, 4, 8, 16),
                        widths: Sequence[int] = (1, 2, 3, 5, 9), context: int = 256, repeats: int = 5,
                        seed: int = 0, engine: str = "eager", inductor: bool | None = None) -> dict:
    """The batch cost surface ``{B: {"knots", "values", "draft"}}`` of ``target`` at each batch size in ``sizes`` and
    verified width in ``widths`` (module docstring's rule). ``draft_level``: the drafter kind's cost probe
    ``(rows, context, repeats, vocab, seed) -> seconds`` of one batched draft level
    (``actors/drafter_kinds/registry.py::cost_probe``), or None when drafting runs no forward. ``engine``,
    ``inductor``: the pair's engine (its batches' rows runner)."""
    sizes, widths = sorted({int(b) for b in sizes}), sorted({int(w) for w in widths})
    if not sizes or sizes[0] < 1 or not widths or widths[0] < 1:
        raise ValueError(f"batch sizes and widths must be integers >= 1, got {sizes} and {widths}")
    if context < 1 or repeats < 1:
        raise ValueError(f"context and repeats must be >= 1, got {context} and {repeats}")
    vocab, out = _vocab(target), {}
    for rows in sizes:
        values = forward_medians(target, rows, widths, context, repeats, vocab, seed, engine, inductor)
        d = draft_level(rows, context, repeats, vocab, seed) if draft_level is not None else 0.0
        fitted = monotone(dict(zip(widths, values)))          # a wider forward never costs less
        out[rows] = {"knots": list(widths), "values": [fitted[w] for w in widths], "draft": d, "raw": list(values)}
    return out
