"""Traces for exact greedy replay: the target's greedy output plus the draft's rollouts along it.

A :class:`Trace` holds, for one prompt,

* the reference y_1 … y_N: the target-only greedy output (what ``ar`` emits), and
  whether it ended with an EOS;
* for every position j = 0 … N − 1 (state = prompt + y_<j) the *rollout*: the draft's
  own greedy continuation x_1 … x_m from that state, with, for each proposal, what a
  policy may read — q(x_i), max q and H(q) in nats — computed by the live drafter's
  own :func:`actors.drafting.drafters.pick_draft_token`.

A rollout stops after L proposals (``max_draft``; None = the whole remaining budget),
after ``max_new_tokens − j − 1`` proposals (the engine never drafts past the budget),
or right after an EOS proposal (the live drafter stops there too), whichever comes first.

Each drafter kind records its rollouts (``actors/drafter_kinds/``: the kind's ``record_rollouts``; the n-gram
drafter is not traced yet). A draft model (``method="incremental"``, ``actors/drafter_kinds/model.py``): exactly
the way the live :class:`~actors.drafting.drafters.ModelDrafter` computes proposals — the draft's own
runner, the prompt fed in one forward, then one token per forward on its KV cache — so
every proposal is produced by the same kernels on the same cache contents as a live
step that feeds one token at a time. Rollouts are shared along the reference: when the
first proposal at j equals y_j, the cache state "prompt + y_<j + x_1" *is* the state
"prompt + y_≤j", so the rollout at j + 1 is the rollout at j without its first token
(bit for bit — the same single-token forwards on the same cache) plus one new
proposal. Only positions whose first proposal is wrong start a fresh rollout. The cost
is about N + (1 − p₁)·N·L single-token draft forwards (p₁ = first-proposal acceptance),
instead of N·L.

Exactness caveat (floating point): a live step that follows a fully accepted draft
feeds the draft *two* tokens in one forward (the last draft token and the bonus),
and a step after a zero-draft step feeds several; a trace always feeds one. In exact
arithmetic the logits are identical; in floating point they may differ in the last
bits, so q values can differ by ulps and an argmax could flip on an exact near-tie.
The tests check replay against live step for step on tiny models; ``Trace.meta``
records the method so a mismatch can be traced.

EAGLE heads (``method="eagle"``, ``actors/drafter_kinds/eagle.py``): a head's proposals from a committed prefix depend on that
prefix and the target's features along it only (``actors/drafting/eagle_drafter.py``: every catch-up
re-feeds the accepted positions with the target's own features). The target's features over
prompt + reference come from one forward; the rollout at j is the live drafter's own chain at one row
(``actors/drafting/drafters.py::propose_chain``) from prompt + y_<j, asked for more until the cap or an EOS. The same
floating-point caveat applies (live features come from verify forwards of k + 1 tokens).
"""
from __future__ import annotations

import time
from typing import Sequence

import torch

from actors.drafter_kinds.registry import kind_of_drafter
from actors.tracing.traces import (TRACE_VERSION, Rollout, Trace, read_traces, table_to_traces, tokenizer_fingerprint,
                           traces_to_table, write_traces)
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly

__all__ = ["TRACE_VERSION", "Rollout", "Trace", "read_traces", "record_pair_trace", "record_trace",
           "table_to_traces", "tokenizer_fingerprint", "traces_to_table", "write_traces"]


@torch.no_grad()
def record_trace(engine, prompt_ids: Sequence[int], *, max_new_tokens: int, max_draft: int | None = None,
                 pair: str = "", tokenizer_hash: str = "", target: str = "", draft: str = "",
                 key: str = "", ar=None) -> Trace:
    """Run the target alone (the ``ar`` generation, timed) and compute the draft's rollouts along its output.

    ``engine``: a :class:`~actors.core.engine.SpecEngine` whose drafter's kind records rollouts. The reference
    is exactly what ``ar`` emits under the same ``max_new_tokens`` and EOS set.
    ``ar``: that generation when the caller already ran it (then it is not run again).
    """

    if max_draft is not None and max_draft < 1:
        raise SpecsweepError(f"max_draft must be >= 1 or None (the whole budget), got {max_draft}")
    kind = kind_of_drafter(engine.drafter)
    if kind is None or kind.record_rollouts is None:
        raise SpecsweepError(f"rollouts need a draft model or an EAGLE head (the {kind.name if kind else 'no'} drafter "
                             "is not traced yet)")
    if ar is None:
        ar = engine.generate(list(prompt_ids), TargetOnly(), max_new_tokens=max_new_tokens)
    t0 = time.perf_counter()
    rollouts, info = kind.record_rollouts(engine.drafter, engine.target, prompt_ids, ar.token_ids,
                                          max_new_tokens=max_new_tokens, max_draft=max_draft, eos_ids=engine.eos)
    info["rollout_seconds"] = time.perf_counter() - t0
    info["version"] = TRACE_VERSION
    return Trace(prompt_ids=[int(t) for t in prompt_ids], reference=list(ar.token_ids),
                 finished_by_eos=ar.finished_by_eos, max_new_tokens=int(max_new_tokens), max_draft=max_draft,
                 eos_ids=sorted(engine.eos), rollouts=rollouts, pair=pair, tokenizer_hash=tokenizer_hash,
                 target=target, draft=draft, prefill_time=ar.prefill_time,
                 ar_step_times=[s.draft_time + s.verify_time for s in ar.steps], ar_wall_time=ar.wall_time,
                 key=key, meta=info)


def record_pair_trace(pair, prompt_ids: Sequence[int], *, max_new_tokens: int, max_draft: int | None = None,
                      key: str = "", ar=None) -> Trace:
    """:func:`record_trace` on a loaded :class:`~actors.pair.Pair`, fingerprinted by label, tokenizer and models."""
    return record_trace(pair.engine, prompt_ids, max_new_tokens=max_new_tokens, max_draft=max_draft,
                        pair=(pair.cfg.name or pair.cfg.target), tokenizer_hash=tokenizer_fingerprint(pair.tokenizer),
                        target=pair.cfg.target, draft=str(pair.cfg.draft), key=key, ar=ar)
