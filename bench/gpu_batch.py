"""``python -m bench.gpu batch``: the compiled batched engine on a GPU (random weights; timing only).

1. Lossless on CUDA (fp32 tiny Llama): the compiled engine at B ∈ {1, 3, 5} with rows of different lengths, chains
   (fixed γ 1/3/6 with a draft) and trees (EAGLE-2-shaped dynamic tree with the draft), every row equal to its
   target-only greedy output.
2. t(B, m): one forward of the compiled per-row static cache for B ∈ {1, 4, 16, 32} rows × m ∈ {1, 2, 4, 8}
   tokens at a 512-token context, 7B shape, bf16 — and the single-row runner's t(1, m) beside it.
3. ``ar`` decode tokens/s at B = 16 over B = 1 (both compiled, 128 new tokens after 64-token prompts), and the
   compiled B = 1 decode against the HBM floor measured in the same run (with and without Inductor), plus the
   share of the B = 1 step the GPU is busy (a profile of 32 decode steps: kernel time / wall time).

``SPECSWEEP_BENCH_SHAPE=tiny`` runs the same code on the tiny shape (a smoke test; CPU needs
``SPECSWEEP_BENCH_DEVICE=cpu``).
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time

import torch

from actors.drafting.drafters import ModelDrafter
from actors.drafting.eagle3_drafter import Eagle3Drafter
from actors.drafting.eagle3_head import random_eagle3_head
from actors.core.engine import SpecEngine
from actors.runtime.static_batch_runner import StaticBatchRunner
from policies.fixed import Fixed, TargetOnly
from policies.registry import build

SHAPE = os.environ.get("SPECSWEEP_BENCH_SHAPE", "7b")
COMPILED = os.environ.get("SPECSWEEP_BENCH_DEVICE", "cuda") == "cuda"    # the CPU smoke test runs "static"
ENGINE = "compiled" if COMPILED else "static"


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return time.perf_counter()


def check_lossless(g) -> dict:
    """Greedy rows of the compiled engine (chains and trees, B = 1, 3, 5) equal their target-only outputs."""
    from transformers import LlamaForCausalLM  # heavy: transformers

    torch.manual_seed(0)
    target = LlamaForCausalLM(g.llama_cfg("tiny")).to(g.DEV).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(8)
    draft = LlamaForCausalLM(g.llama_cfg("tiny")).to(g.DEV).eval()
    with torch.no_grad():
        for pd, pt in zip(draft.parameters(), target.parameters()):
            pd.copy_(pt + 0.2 * pt.std() * torch.randn_like(pt))
    prompts = [g.prompt(n, seed=n) for n in (20, 7, 33, 12, 3)]
    refs = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=48).token_ids for p in prompts]
    engine = SpecEngine(target, ModelDrafter(draft), engine=ENGINE, capacity=256, max_draft=15)
    res = {}
    for rows in (1, 3, 5):
        for spec in ("fixed:1", "fixed:3", "fixed:6", "eagle2:depth=4,topk=4,n=12", "ar"):
            if spec == "ar":
                pols = [TargetOnly() for _ in range(rows)]
            elif spec.startswith("fixed"):
                pols = [Fixed(int(spec.split(":")[1])) for _ in range(rows)]
            else:
                pols = [build(spec, 3) for _ in range(rows)]
            outs = engine.generate_batch(prompts[:rows], pols, max_new_tokens=48)
            ok = [o.token_ids for o in outs] == refs[:rows]
            res[f"B{rows} {spec}"] = {"greedy_equals_ar": ok, "longest_accept": max(max(o.accept_lengths) for o in outs)}
            print(f"batch check B={rows} {spec:28s} greedy == target-only: {ok}  "
                  f"(longest accepted step {res[f'B{rows} {spec}']['longest_accept']})", flush=True)
    return res


def check_eagle3(g) -> dict:
    """A random EAGLE-3 head (release layout, fp32 tiny target) on the compiled engine: its three target layers come
    through the CUDA-graphed runners; greedy rows at B = 1 and 4 (chain and EAGLE-2 tree) equal target-only."""
    from transformers import LlamaForCausalLM  # heavy: transformers

    torch.manual_seed(0)
    cfg = g.llama_cfg("tiny")
    cfg.num_hidden_layers = 6
    target = LlamaForCausalLM(cfg).to(g.DEV).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(8)
    prompts = [g.prompt(n, seed=n) for n in (20, 7, 33, 12)]
    refs = [SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=32).token_ids for p in prompts]
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        drafter = Eagle3Drafter.from_folder(random_eagle3_head(target.cpu(), tmp + "/h", scale=4.0), target.to(g.DEV))
        engine = SpecEngine(target, drafter, engine=ENGINE, capacity=256, max_draft=15)
        for rows in (1, 4):
            for spec in ("fixed:3", "eagle2:depth=3,topk=3,n=8"):
                pols = [Fixed(3) if spec == "fixed:3" else build(spec, 3) for _ in range(rows)]
                outs = engine.generate_batch(prompts[:rows], pols, max_new_tokens=32)
                ok = [o.token_ids for o in outs] == refs[:rows]
                res[f"B{rows} {spec}"] = ok
                print(f"batch eagle3 B={rows} {spec:26s} greedy == target-only: {ok}", flush=True)
    return res


def verify_costs(g, target, context=512, rows=(1, 4, 16, 32), ms=(1, 2, 4, 8), reps=10) -> dict:
    """t(B, m) of one compiled forward on the per-row static cache, and t(1, m) of the single-row runner."""
    dev = g.DEV
    runner = StaticBatchRunner(target, capacity=context + max(ms), compiled=COMPILED)
    runner.prepare(max(ms))
    runner.reset(max(rows))                      # captures every (row bucket, length bucket) once
    out = {}
    for b in rows:
        runner.reset(b)
        runner.forward([g.prompt(context, seed=s) for s in range(b)], logits=False)
        for m in ms:
            feeds = [g.prompt(m, seed=100 + s) for s in range(b)]

            def step():
                logits = runner.forward(feeds)
                torch.stack([x.argmax(-1) for x in logits]).tolist()
                for r in range(b):
                    runner.rollback(r, context)
            for _ in range(3):
                step()
            ts = []
            for _ in range(reps):
                t0 = _sync(dev)
                step()
                ts.append(_sync(dev) - t0)
            out[f"{b}x{m}"] = 1e3 * statistics.median(ts)
    del runner
    one = g.forward_curve(target, list(ms), ENGINE, reps=reps, context=context)
    single = {m: 1e3 * t for m, t in one.items()}
    base = out["1x1"]
    for b in rows:
        print(f"batch t(B,m) B={b:2d}: " + "  ".join(f"m={m} {out[f'{b}x{m}']:6.2f} ms ({out[f'{b}x{m}'] / base:.2f})"
                                                     for m in ms), flush=True)
    print("batch t(1,m) single-row runner: " + "  ".join(f"m={m} {single[m]:6.2f} ms" for m in ms), flush=True)
    return {"ms": out, "ratio_to_1x1": {k: v / base for k, v in out.items()}, "single_row_ms": single,
            "context": context}


def ar_batch(g, target, rows=16, new=128) -> dict:
    """Compiled ``ar`` tokens/s at B = ``rows`` over B = 1 (median of 3 timed generations after a warm-up)."""
    dev = g.DEV
    engine = SpecEngine(target, None, engine=ENGINE, capacity=g.PROMPT_LEN + new + 8, max_draft=0)
    engine.prepare()
    prompts = [g.prompt(seed=s) for s in range(rows)]
    res = {}
    for b in (1, rows):
        run = (lambda: engine.generate_batch(prompts[:b], [TargetOnly() for _ in range(b)], max_new_tokens=new))
        run()
        ts = []
        for _ in range(3):
            t0 = _sync(dev)
            outs = run()
            ts.append(_sync(dev) - t0)
        t = statistics.median(ts)
        res[f"B{b}"] = {"tok_s": b * new / t, "ms_per_step": 1e3 * t / new,
                        "new_tokens": sum(len(o.token_ids) for o in outs)}
    res["B16/B1_tok_s"] = res[f"B{rows}"]["tok_s"] / res["B1"]["tok_s"]
    print(f"batch ar compiled: B=1 {res['B1']['tok_s']:.1f} tok/s, B={rows} {res[f'B{rows}']['tok_s']:.1f} tok/s "
          f"= {res['B16/B1_tok_s']:.2f}x  (goal >= 8x)", flush=True)
    return res


def b1_decode(g, target, new=128) -> dict:
    """Compiled B = 1 decode ms/token (graphs; graphs + Inductor) against the HBM floor, and the GPU-busy share of a
    step from a profile of 32 steps."""
    res = {"floor": g.hbm_floor(target) if g.DEV.type == "cuda" else {"floor_ms_per_token": float("nan")}}
    floor = res["floor"]["floor_ms_per_token"]
    for name, inductor in (("compiled", False), ("compiled+inductor", True)):
        if inductor and not COMPILED:
            continue
        e = SpecEngine(target, None, engine=ENGINE, capacity=g.PROMPT_LEN + new + 8, max_draft=0,
                       inductor=inductor)
        e.prepare()
        r = g.engine_tokens_per_s(e, TargetOnly())
        r.pop("tokens", None)
        r["vs_floor"] = r["decode_ms_per_token"] / floor
        res[name] = r
        print(f"batch B=1 {name:18s} {r['decode_ms_per_token']:.2f} ms/token = {r['vs_floor']:.2f}x the HBM floor "
              f"({floor:.2f} ms)", flush=True)
        if inductor and g.DEV.type == "cuda":
            try:
                res["profile"] = _busy_share(e, g)
            except Exception as ex:  # noqa: BLE001 - the timings above stand without the profile
                res["profile"] = {"error": f"{type(ex).__name__}: {str(ex)[:200]}"}
                print(f"batch B=1 profile failed: {res['profile']['error']}", flush=True)
        del e
    return res


def _busy_share(engine, g) -> dict:
    """Kernel time / wall time over 32 decode steps, and the five costliest kernels."""
    from torch.profiler import ProfilerActivity, profile  # heavy: profiler

    p = g.prompt()
    engine.generate(p, TargetOnly(), max_new_tokens=32)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = _sync(g.DEV)
        out = engine.generate(p, TargetOnly(), max_new_tokens=32)
        wall = _sync(g.DEV) - t0
    wall -= out.prefill_time
    events = [e for e in prof.key_averages() if getattr(e, "device_type", None) is not None
              and str(e.device_type).endswith("CUDA")]
    kernel = sum(e.self_device_time_total for e in events) / 1e6
    top = sorted(events, key=lambda e: -e.self_device_time_total)[:5]
    res = {"wall_s": wall, "kernel_s": kernel, "busy_share": kernel / wall if wall > 0 else None,
           "top": [(e.key[:80], e.self_device_time_total / 1e3) for e in top]}
    print(f"batch B=1 profile: GPU busy {kernel * 1e3:.1f} ms of {wall * 1e3:.1f} ms decode wall "
          f"({res['busy_share']:.2f}); top kernels: " + "; ".join(f"{k[:40]} {t:.1f} ms" for k, t in res["top"]),
          flush=True)
    return res


def section_batch(g) -> dict:
    res = {"check": check_lossless(g)}
    try:
        res["eagle3"] = check_eagle3(g)
    except Exception as ex:  # noqa: BLE001 - the timings below stand without it
        res["eagle3"] = {"error": f"{type(ex).__name__}: {str(ex)[:300]}"}
        print(f"batch eagle3 check failed: {res['eagle3']['error']}", flush=True)
    target = g.random_model(SHAPE)
    res["t_B_m"] = verify_costs(g, target, context=512 if SHAPE != "tiny" else 64)
    res["ar"] = ar_batch(g, target)
    res["b1"] = b1_decode(g, target)
    return res
