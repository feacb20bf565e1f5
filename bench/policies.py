"""µs per policy decision (max_draft + after_draft per proposal + update), on scripted outcomes.

Goal: well under 1 % of a draft forward (< 50 µs on CPU). Prints one line per policy and
the ratio to a measured draft forward of a 4-layer SmolLM2-shaped random model.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repo root, not bench/ (bench/policies.py shadows the package)

import random
import time

from policies import GenerationContext, StepOutcome, build
from policies.costs import CostCurve

COSTS = CostCurve(t_draft=0.004, t_verify={1: 0.04, 2: 0.041, 4: 0.043, 8: 0.05, 16: 0.06, 32: 0.09, 64: 0.15})
SPECS = ["fixed", "hf-heuristic", "threshold", "threshold:adaptive=true", "gammatune", "gammatune+", "gt", "oracle",
         "goodput", "svip", "adaedl", "dv-threshold", "bandit", "ema-steps"]


def per_decision_us(spec: str, steps: int = 2000, seed: int = 0) -> float:
    rng = random.Random(seed)
    p = build(spec, 4)
    p.reset(GenerationContext(costs=COSTS, reference=list(range(100000))))
    qs = [rng.random() for _ in range(64)]
    hs = [2 * rng.random() for _ in range(64)]   # draft entropies in nats
    t = time.perf_counter()
    decisions = 0
    for s in range(steps):
        p.ctx.generated = s
        k_max = p.max_draft()
        k = 0
        for i in range(1, max(1, k_max) + 1):
            decisions += 1
            v = p.after_draft(i, s + i - 1, qs[i % 64], qs[i % 64], hs[(s + i) % 64])
            if v != "more":
                k = i if v == "stop" else i - 1
                break
            k = i
        n = rng.randint(0, k)
        p.update(StepOutcome(drafted=k, accepted=n, q_tokens=qs[:k], draft_time=0.004 * k, verify_time=0.04,
                             emitted=n + 1, max_draft=k_max))
        decisions += 2
    return (time.perf_counter() - t) / decisions * 1e6


def draft_forward_us() -> float:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from actors.kv import crop_to, new_cache

    cfg = LlamaConfig(vocab_size=8193, hidden_size=576, intermediate_size=1536, num_hidden_layers=4,
                      num_attention_heads=9, num_key_value_heads=3)
    m = LlamaForCausalLM(cfg).eval()
    cache = new_cache(m)
    with torch.no_grad():
        m(input_ids=torch.zeros(1, 128, dtype=torch.long), past_key_values=cache)
        t = time.perf_counter()
        for _ in range(20):
            m(input_ids=torch.zeros(1, 1, dtype=torch.long), past_key_values=cache, logits_to_keep=1)
            crop_to(cache, 128)
    return (time.perf_counter() - t) / 20 * 1e6


if __name__ == "__main__":
    fwd = draft_forward_us()
    print(f"draft forward (4-layer SmolLM2-shaped, CPU): {fwd:.0f} µs")
    print(f"{'policy':26s} {'µs/decision':>12s} {'% of draft fwd':>15s}")
    for spec in SPECS:
        us = per_decision_us(spec)
        print(f"{spec:26s} {us:12.2f} {100 * us / fwd:14.3f}%")
