"""Measure a pair's cost curve once per actor (GT paper §3: the cost ratio c).

At a realistic context (``context`` tokens already in both KV caches) we time one
draft decode forward (seconds per draft token) and the target forward over m
tokens for m = 1, 2, 4, … ``max_tokens``, each as the median of ``repeats`` runs
after a warm-up; the caches are cropped back after every run. The verify curve is
made non-decreasing (``policies.costs.monotone``) with a warning when the raw medians
were not, the raw points kept in ``CostModel.raw_verify``.
"""
from __future__ import annotations

import statistics
import time
import warnings

import torch

from actors.engine import SpecEngine
from actors.kv import crop_to, new_cache
from policies.costs import CostModel, monotone
from policies.fixed import TargetOnly


def _median_time(fn, repeats: int, sync) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


@torch.no_grad()
def calibrate(target, draft=None, *, context: int = 256, max_tokens: int = 64, repeats: int = 5,
              vocab: int | None = None, seed: int = 0) -> CostModel:
    """The pair's :class:`~policies.costs.CostModel` at ``context`` cached tokens: median seconds of one draft forward
    and of target forwards over m = 1, 2, 4, … ``max_tokens`` tokens (made non-decreasing); t_draft = 0 when the pair
    has no draft model."""
    device = target.device
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    g = torch.Generator().manual_seed(seed)
    vocab = vocab or target.get_input_embeddings().weight.shape[0]
    ctx_ids = torch.randint(0, vocab, (1, context), generator=g).to(device)

    def prefilled(model):
        cache = new_cache(model)
        model(input_ids=ctx_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        return cache

    t_cache = prefilled(target)
    t_verify: dict[int, float] = {}
    m = 1
    while m <= max_tokens:
        inp = torch.randint(0, vocab, (1, m), generator=g).to(device)

        def step(inp=inp):
            target(input_ids=inp, past_key_values=t_cache, use_cache=True)
            crop_to(t_cache, context)
        t_verify[m] = _median_time(step, repeats, sync)
        m *= 2
    if draft is None:
        t_draft = 0.0
    else:
        d_cache = prefilled(draft)
        one = ctx_ids[:, :1]

        def dstep():
            draft(input_ids=one, past_key_values=d_cache, use_cache=True, logits_to_keep=1)
            crop_to(d_cache, context)
        t_draft = _median_time(dstep, repeats * 2, sync)
    fitted = monotone(t_verify)
    raw = {}
    if fitted != t_verify:
        warnings.warn(f"verify cost curve not monotone in the number of tokens (raw seconds {t_verify}); "
                      f"using its non-decreasing fit {fitted}: the timings are noisy — raise repeats or unload the machine",
                      RuntimeWarning, stacklevel=2)
        raw = t_verify
    return CostModel.measured(t_draft, fitted, context=context, device=str(device), raw_verify=raw)


@torch.no_grad()
def rank_acceptance(target, draft, prompts: list[list[int]], *, ranks: int = 8, max_new_tokens: int = 48,
                    floor: float = 1e-3) -> list[float]:
    """Per-rank acceptance p[r-1] = P(the target's greedy token is the draft's rank-r candidate),
    unconditional (Σ_r p_r <= 1): Sequoia's acceptance vector (Chen et al. 2024, §3.1), which its
    dynamic program and GT(s)'s α̂ = Π p multiply along a path.

    Measured with teacher forcing on the target's own greedy continuations of ``prompts``: p_r =
    (positions where the target's token is the draft's rank-r candidate) / (all positions). Each
    entry is at least ``floor`` (a rank never seen still gets a tiny chance); if the floors push
    the sum above 1 the vector is scaled back to sum 1.
    """
    hits = [0] * ranks
    positions = 0
    engine = SpecEngine(target)
    for prompt in prompts:
        cont = engine.generate(prompt, TargetOnly(), max_new_tokens=max_new_tokens).token_ids
        seq = list(prompt) + cont
        logits = draft(input_ids=torch.tensor([seq[:-1]], device=draft.device)).logits[0, len(prompt) - 1:]
        order = logits.float().argsort(-1, descending=True)[:, :ranks].tolist()
        for row, tok in zip(order, cont):
            positions += 1
            if tok in row:
                hits[row.index(tok)] += 1
    return acceptance_vector(hits, positions, floor)


def acceptance_vector(hits: list[int], positions: int, floor: float = 1e-3) -> list[float]:
    """Unconditional per-rank acceptance from hit counts: max(floor, hits_r / positions), rescaled
    to sum 1 if the floors push it above 1."""
    p = [max(floor, h / positions) if positions > 0 else floor for h in hits]
    total = sum(p)
    return [x / total for x in p] if total > 1.0 else p
