"""The one timing harness: every measured cost in specsweep comes from the engine's own step path.

Rule. The pair's engine (``actors/core/engine.py``: its drafter, its runner, the step of ``actors/core/step.py``)
runs B rows with exactly k drafts per step for each k of a list of draft lengths (k = 0 is ``ar``); EOS is
ignored, so every step drafts k and verifies k + 1 tokens per row. Each row's prompt is ``context`` tokens of one
of two kinds: a random block of :data:`PERIOD` tokens repeated (drafts tend to be accepted, an n-gram or suffix
drafter finds matches, the draft catches up on a token) or random tokens (drafts rejected, no catch-up); row b
of a batch gets its own block (seed + b), and a batch's prompt lengths spread evenly over ``context`` ± 25 %
(:func:`row_lengths`): live prompts differ in length, so a live batch's cache holds masked slots from its prefill
on and its forwards take the padding mask's path — rows of equal length would time a cheaper forward than any live
batch runs (measured on SmolLM2-135M at B = 4: live ``ar`` steps 9 % dearer than an equal-length probe's). For each k and context, a run of :data:`WARMUP_STEPS` steps is
discarded (it warms this shape up), then max(2, ⌈steps·repeats / 2⌉) steps are kept on each prompt kind. The engine
times each step by phase as it runs it: the draft phase (``Step.draft_time``), the target forward alone
(``Step.forward_time``), the rest of the step (acceptance, cache crops, the policy, bookkeeping) through the
row's wall time. ``specsweep calibrate`` fits the single-row cost model on these runs at B = 1
(``actors/costs/calibrate.py``); the batch cost surface fits the same model on them at each B > 1
(``actors/costs/batch_costs.py``), so a single-row cost and a batch cost are one measurement at two sizes.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

import torch

from actors.core.engine import SpecEngine
from policies.fixed import Fixed, TargetOnly

WARMUP_STEPS = 2          # steps of the discarded run before each measured one
PERIOD = 16               # the probe prompt repeats a random block of this many tokens
SPREAD = 0.25             # a probe batch's prompt lengths spread over context ± this share


def probe_lengths(max_tokens: int, max_draft: int) -> list[int]:
    """k = 0, 1, 2, 4, … with k + 1 ≤ ``max_tokens`` and k ≤ ``max_draft``."""
    ks, k = [0], 1
    while k + 1 <= max_tokens and k <= max_draft:
        ks.append(k)
        k *= 2
    return ks


@contextmanager
def eos_ignored(engine: SpecEngine):
    """While probing, no token ends a generation: every step drafts what the policy asks (the cost, not the text)."""
    eos, engine.eos = engine.eos, frozenset()
    try:
        yield
    finally:
        engine.eos = eos


def block_prompt(vocab: int, length: int, seed: int) -> list[int]:
    """``length`` tokens: a random block of :data:`PERIOD` tokens, repeated."""
    block = torch.randint(0, vocab, (PERIOD,), generator=torch.Generator().manual_seed(seed + 1)).tolist()
    return (block * (length // PERIOD + 1))[:length]


def row_lengths(context: int, rows: int) -> list[int]:
    """The prompt length of each row of a probe batch: ``context`` for one row; for B rows spread evenly over
    ``context`` ± :data:`SPREAD` (mean ``context``), as a live batch's prompts differ in length."""
    if rows == 1:
        return [context]
    return [max(1, round(context * (1 + SPREAD * (2 * b / (rows - 1) - 1)))) for b in range(rows)]


def probe_runs(engine: SpecEngine, *, context: int = 256, max_tokens: int = 64, repeats: int = 3, steps: int = 4,
               seed: int = 0, vocab: int | None = None, second_context: bool = True, rows: int = 1,
               lengths: Sequence[int] | None = None) -> tuple[list, dict]:
    """The kept runs [(prompt length, Generation of row 0), …] of ``rows``-row batches and what was run (the module
    docstring's rule). Every row of a batch runs the same steps, so row 0's step records carry the batch's phase
    times. ``lengths``: the draft lengths k (default :func:`probe_lengths` of ``max_tokens`` and the engine's
    ``max_draft``; ``[0]`` without a drafter). ``second_context``: ``ar`` and the longest k run again at 2 ×
    ``context`` (within the KV capacity) to see whether context moves the cost."""
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    g = torch.Generator().manual_seed(seed)
    vocab = vocab or engine.target.get_input_embeddings().weight.shape[0]
    if lengths is None:
        ks = probe_lengths(max_tokens, engine.max_draft if engine.drafter is not None else 0)
    else:
        ks = sorted({int(k) for k in lengths} if engine.drafter is not None else {0})
    capacity = getattr(engine.runner, "capacity", None) or 1 << 30
    long = min(2 * context, capacity - steps * repeats * (ks[-1] + 1) - 2)
    contexts = [context] + ([long] if second_context and long > context * 1.5 else [])
    kinds = {c: [[block_prompt(vocab, n, seed + b) for b, n in enumerate(row_lengths(c, rows))],   # drafts accepted
                 [torch.randint(0, vocab, (n,), generator=g).tolist() for n in row_lengths(c, rows)]]  # rejected
             for c in contexts}
    half = max(2, -(-steps * repeats // 2))                 # steps per prompt kind (2 at least: a fit needs them)

    def policies(k: int) -> list:
        return [TargetOnly() if k == 0 else Fixed(k) for _ in range(rows)]

    runs = []
    with eos_ignored(engine):
        for c in contexts:
            for k in (ks if c == context else [ks[0], ks[-1]]):
                engine.generate_batch(kinds[c][0], policies(k), max_new_tokens=WARMUP_STEPS * (k + 1) + 1,
                                      max_steps=WARMUP_STEPS)                 # warms this shape up: discarded
                for prompts in kinds[c]:
                    gens = engine.generate_batch(prompts, policies(k), max_new_tokens=half * (k + 1) + 1,
                                                 max_steps=half)
                    runs.append((row_lengths(c, rows)[0], gens[0]))
    return runs, {"lengths": ks, "steps": steps, "repeats": repeats, "contexts": contexts, "rows": rows}
