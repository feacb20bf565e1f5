"""Greedy-equality checks of ``python -m bench.gpu check`` beyond the engines' basic ones (``bench/gpu.py``), each
against eager target-only greedy tokens:

* EAGLE drafting 64 tokens a step (``max_draft`` 64) after a 300-token prompt: verified inputs of 65 tokens with the
  target's features kept (the 128-token graph), and a prefill of three chunks whose features the head reads;
* a model on ``cuda:1`` (two GPUs or more; else one line saying it is skipped and why): its graphs captured and
  replayed on its own device, after the graphs of a model on ``cuda:0`` (``actors/runtime/runners.py::device_context``).
"""
from __future__ import annotations

import copy

import torch

from actors.core.engine import SpecEngine
from actors.drafting.drafters import ModelDrafter
from actors.drafting.eagle_drafter import EagleDrafter
from actors.drafting.eagle_head import init_head
from policies.fixed import Fixed, TargetOnly

EAGLE_DRAFT, EAGLE_NEW = 64, 66        # the first two steps draft 64: cap = min(64, remaining − 1)
SECOND_NEW = 48


def eagle_long_draft_check(target, long_prompt) -> dict:
    """Each engine's greedy tokens with a random EAGLE head drafting up to 64 a step against eager target-only. The
    compiled engine runs on CUDA only: on the CPU it is torch.compile of 8 feature-keeping shapes, no graphs."""
    ref = SpecEngine(target).generate(long_prompt, TargetOnly(), max_new_tokens=EAGLE_NEW).token_ids
    head = init_head(target, seed=1)
    engines = ("eager", "static", "compiled") if target.device.type == "cuda" else ("eager", "static")
    out = {}
    for engine in engines:
        spec = SpecEngine(target, EagleDrafter(head, target), engine=engine, capacity=512, max_draft=EAGLE_DRAFT)
        g = spec.generate(long_prompt, Fixed(EAGLE_DRAFT), max_new_tokens=EAGLE_NEW)
        ok = g.token_ids == ref
        out[engine] = {"greedy_equals_ar": ok, "longest_draft": max(g.drafted),
                       "longest_accepted": max(g.accept_lengths), "runner": type(spec.runner).__name__}
        print(f"check {engine:9s} EAGLE γ {EAGLE_DRAFT} after a {len(long_prompt)}-token prompt, greedy == "
              f"target-only: {ok}  (longest draft {max(g.drafted)}, longest accepted step {max(g.accept_lengths)})",
              flush=True)
    return out


def second_device_reason(device: torch.device) -> str | None:
    """Why the ``cuda:1`` check cannot run here (None: it runs)."""
    if device.type != "cuda":
        return f"the bench runs on {device.type}"
    n = torch.cuda.device_count()
    return None if n >= 2 else f"{n} CUDA device{'s' if n != 1 else ''} visible, the check needs 2"


def second_device_check(target, draft, prompt) -> dict:
    """Copies of ``target``/``draft`` on cuda:1: static and compiled engines against eager target-only there, for
    target-only decoding, a model draft (γ 4), a batch of 3 rows and an EAGLE head (γ 8). ``prompt(n, seed)``:
    the bench's prompt maker."""
    reason = second_device_reason(target.device)
    if reason is not None:
        print(f"check cuda:1 skipped: {reason}", flush=True)
        return {"skipped": reason}
    dev = torch.device("cuda", 1)
    t1, d1 = copy.deepcopy(target).to(dev).eval(), copy.deepcopy(draft).to(dev).eval()
    head = init_head(t1, seed=1)
    prompts = [prompt(300, seed=5), prompt(20), prompt(7, seed=9)]
    refs = [SpecEngine(t1).generate(p, TargetOnly(), max_new_tokens=SECOND_NEW).token_ids for p in prompts]
    out = {}
    for engine in ("static", "compiled"):
        ar = SpecEngine(t1, engine=engine, capacity=512, max_draft=0)
        spec = SpecEngine(t1, ModelDrafter(d1), engine=engine, capacity=512, max_draft=8)
        eagle = SpecEngine(t1, EagleDrafter(head, t1), engine=engine, capacity=512, max_draft=8)
        r = {"ar": ar.generate(prompts[0], TargetOnly(), max_new_tokens=SECOND_NEW).token_ids == refs[0],
             "model_draft": spec.generate(prompts[0], Fixed(4), max_new_tokens=SECOND_NEW).token_ids == refs[0],
             "batch_of_3": [g.token_ids for g in spec.generate_batch(prompts, [Fixed(4) for _ in prompts],
                                                                     max_new_tokens=SECOND_NEW)] == refs,
             "eagle": eagle.generate(prompts[0], Fixed(8), max_new_tokens=SECOND_NEW).token_ids == refs[0]}
        r["greedy_equals_ar"] = all(r.values())
        r["device"] = str(spec.runner.device)
        out[engine] = r
        print(f"check {engine:9s} on {r['device']} greedy == target-only: {r['greedy_equals_ar']}  (target-only "
              f"{r['ar']}, model draft γ 4 {r['model_draft']}, batch of 3 {r['batch_of_3']}, EAGLE γ 8 {r['eagle']})",
              flush=True)
    return out
