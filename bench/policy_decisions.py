"""µs per policy decision for every registered sequence policy, on scripted outcomes.

    python -m bench.policy_decisions [--steps 2000] [--repeats 3] [--threads 1]

A decision is one call of ``max_draft``, ``after_draft`` (once per proposal) or ``update``;
µs per decision = time of ``--steps`` scripted steps / decisions made, the median of
``--repeats`` runs (min–max printed beside it). Target: < 50 µs per decision, well under 1 %
of a draft forward, which is measured in the same run (a 4-layer SmolLM2-shaped random model
at context 128; median of 20 forwards).

Every name in the policy registry is measured except ``ar`` (never drafts) and the tree
policies (tree policies: their per-step work is building a token tree, not a length decision;
it is inside the tree benchmark's wall times, ``python -m bench.trees``). Extra variants with a
costlier rule are listed in ``VARIANTS``.
"""
from __future__ import annotations

import argparse
import platform
import random
import statistics
import time

from actors.runtime.hf_api import cache_arg
from actors.runtime.kv import crop_to, new_cache
from policies import GenerationContext, SequencePolicy, Step, build
from policies.costs import CostModel
from policies.registry import REGISTRY

COSTS = CostModel.measured(t_draft=0.004, t_verify={1: 0.04, 2: 0.041, 4: 0.043, 8: 0.05, 16: 0.06, 32: 0.09, 64: 0.15})
VARIANTS = ["threshold:adaptive=true"]
TARGET_US = 50.0


def sequence_policies() -> list[str]:
    """Every registered policy that decides a draft length (not ``ar``, not a tree), then VARIANTS."""
    names = [n for n in REGISTRY if n != "ar" and isinstance(build(n, 4), SequencePolicy)]
    return names + VARIANTS


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
        p.update(Step(k_max=k_max, drafted=k, accepted=n, emitted=n + 1, q_tokens=qs[:k], draft_time=0.004 * k,
                      verify_time=0.04))
        decisions += 2
    return (time.perf_counter() - t) / decisions * 1e6


def draft_forward_us() -> float:
    import torch  # heavy: torch
    from transformers import LlamaConfig, LlamaForCausalLM  # heavy: transformers


    cfg = LlamaConfig(vocab_size=8193, hidden_size=576, intermediate_size=1536, num_hidden_layers=4,
                      num_attention_heads=9, num_key_value_heads=3)
    m = LlamaForCausalLM(cfg).eval()
    cache = new_cache(m)
    with torch.no_grad():
        m(input_ids=torch.zeros(1, 128, dtype=torch.long), **cache_arg(cache))
        ts = []
        for _ in range(20):
            t = time.perf_counter()
            m(input_ids=torch.zeros(1, 1, dtype=torch.long), **cache_arg(cache), logits_to_keep=1)
            crop_to(cache, 128)
            ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="scripted steps per run")
    ap.add_argument("--repeats", type=int, default=3, help="runs per policy (the median is reported)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads for the draft forward (0 = default)")
    a = ap.parse_args(argv)

    import torch  # heavy: torch

    if a.threads:
        torch.set_num_threads(a.threads)
    fwd = draft_forward_us()
    print(f"# policy decision cost {time.strftime('%Y-%m-%d %H:%M')}: {a.steps} scripted steps × {a.repeats} runs, "
          f"python {platform.python_version()}, {platform.processor() or platform.machine()}, "
          f"torch {torch.get_num_threads()} threads")
    print(f"draft forward (4-layer SmolLM2-shaped, CPU): {fwd:.0f} µs; target < {TARGET_US:.0f} µs per decision")
    print(f"{'policy':26s} {'µs/decision':>12s} {'min–max':>15s} {'% of draft fwd':>15s}  < {TARGET_US:.0f} µs")
    for spec in sequence_policies():
        runs = [per_decision_us(spec, a.steps, seed=r) for r in range(a.repeats)]
        us = statistics.median(runs)
        print(f"{spec:26s} {us:12.2f} {f'{min(runs):.2f}–{max(runs):.2f}':>15s} {100 * us / fwd:14.3f}%  "
              f"{'yes' if us < TARGET_US else 'NO'}")


if __name__ == "__main__":
    main()
