"""GPU systems benchmark on random-weight models of real shapes (timing only: never read acceptance from it).

    python -m bench.gpu check ar spec curve c      # sections; each prints ratios measured side by side
    python -m bench.gpu curve70b                   # 70B-shaped int4 target built layer by layer (needs torchao)

Sections
  check     greedy tokens of eager / static / compiled engines agree on a small CUDA model (lossless on GPU), also
            for a 1,000-token prompt on a device that lags the host and a γ = 140 verify (chunked inputs); EAGLE
            drafting γ = 64 after a 300-token prompt; a model on cuda:1 (two GPUs; else one line: skipped, and why)
  ar        Llama-2-7B shape, bf16, batch 1: eager vs static vs compiled (CUDA graphs, ± torch.compile) vs
            transformers' generate (static cache + compile) vs the HBM floor (weight bytes / copy bandwidth)
  spec      + Vicuna-68M-shaped draft, fixed γ ∈ {1, 2, 4, 8}: ours (compiled) vs transformers assisted generation
  curve     verify cost t(m)/t(1), m = 1…64, 7B shape: static engine at every m, compiled at its buckets
  c         c = draft token time / target forward time, eager vs compiled
  batch     the compiled batched engine (bench/gpu_batch.py): lossless at B ∈ {1, 3, 5} with chains and trees,
            t(B, m) for B ∈ {1, 4, 16, 32} × m ∈ {1, 2, 4, 8}, ar tokens/s at B = 16 over B = 1, B = 1 vs the floor
  curve70b  the same curve for a Llama-2-70B-shaped target, int4 weight-only (torchao), and its peak memory
  plan      peak GPU memory of reference-config pairs (Llama-3.1-8B + 3.2-1B, Vicuna-7B + 68M; random bf16,
            compiled engine, one generation) vs what `specsweep plan` predicts (actors/plan/memory_plan.py)

Writes one JSON per section under $OUT (or ./out) and prints a line per figure.

    SPECSWEEP_BENCH_DEVICE=cpu SPECSWEEP_BENCH_SHAPE=tiny python -m bench.gpu check ar spec curve c batch
                                                   # the same code on the CPU, every model at the tiny shape: a smoke
                                                   # test before device time is spent (~3 min; the slow test tier)
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.plan.memory_plan import WORKSPACE_BYTES, config_path, gpu0_bytes, model_plan
from bench.gpu_batch import section_batch
from bench.gpu_checks import eagle_long_draft_check, second_device_check
from jobs.report.derived import throughput
from policies.fixed import Fixed, TargetOnly

OUT = Path(os.environ.get("OUT", "out"))
DEV = torch.device(os.environ.get("SPECSWEEP_BENCH_DEVICE", "cuda"))   # "cpu": a smoke test of the script
TINY = os.environ.get("SPECSWEEP_BENCH_SHAPE") == "tiny"                # every random model at the tiny shape
PROMPT_LEN, NEW = 64, 128


def llama_cfg(shape: str):
    from transformers import LlamaConfig  # heavy: transformers

    dims = {"7b": (4096, 11008, 32, 32, 32), "70b": (8192, 28672, 80, 64, 8), "68m": (768, 3072, 2, 12, 12),
            "tiny": (256, 512, 2, 4, 4)}[shape]
    h, inter, layers, heads, kv = dims
    return LlamaConfig(vocab_size=32000, hidden_size=h, intermediate_size=inter, num_hidden_layers=layers,
                       num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=4096,
                       tie_word_embeddings=False, eos_token_id=None, bos_token_id=None, pad_token_id=0)


def random_model(shape: str, dtype=torch.bfloat16):
    """A random-weight Llama of ``shape`` (the tiny one under ``SPECSWEEP_BENCH_SHAPE=tiny``) on ``DEV``."""
    from transformers import LlamaForCausalLM  # heavy: transformers

    shape = "tiny" if TINY else shape
    torch.manual_seed(0)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    with torch.device(DEV):
        model = LlamaForCausalLM(llama_cfg(shape))
    torch.set_default_dtype(prev)
    model.generation_config.eos_token_id = None
    return model.eval()


def sync_time() -> float:
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def prompt(n=PROMPT_LEN, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, 32000, (n,), generator=g).tolist()


def median_time(fn, reps=3):
    ts = []
    for _ in range(reps):
        t0 = sync_time()
        fn()
        ts.append(sync_time() - t0)
    return statistics.median(ts)


def engine_tokens_per_s(engine, policy, reps=3):
    p = prompt()
    engine.generate(p, policy, max_new_tokens=NEW)      # warm-up (and compile/capture)
    gens = []

    def run():
        gens.append(engine.generate(p, policy, max_new_tokens=NEW))
    t = median_time(run, reps)
    g = gens[-1]
    decode = statistics.median([x.wall_time - x.prefill_time for x in gens])
    return {"tok_s": throughput(NEW, t), "decode_ms_per_token": 1e3 * decode / NEW, "new_tokens": g.new_tokens,
            "steps": g.decoding_steps, "tokens": g.token_ids}


def hbm_floor(model) -> dict:
    """Weight bytes / device-to-device copy bandwidth measured now (bytes read + written)."""
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    buf = torch.empty(2 * 1024 ** 3, dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(buf)
    for _ in range(3):
        dst.copy_(buf)
    t = median_time(lambda: [dst.copy_(buf) for _ in range(10)], 3) / 10
    bw = 2 * buf.numel() / t
    del buf, dst
    return {"weight_bytes": nbytes, "copy_bandwidth_GBps": bw / 1e9, "floor_ms_per_token": 1e3 * nbytes / bw}


def section_check():
    from transformers import LlamaForCausalLM  # heavy: transformers

    torch.manual_seed(0)
    target = LlamaForCausalLM(llama_cfg("tiny")).to(DEV).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(8)
    draft = LlamaForCausalLM(llama_cfg("tiny")).to(DEV).eval()
    with torch.no_grad():
        for pd, pt in zip(draft.parameters(), target.parameters()):
            pd.copy_(pt + 0.2 * pt.std() * torch.randn_like(pt))
    p = prompt(20)
    ref = SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=64).token_ids
    res = {}
    for engine in ("eager", "static", "compiled"):
        e = SpecEngine(target, ModelDrafter(draft), engine=engine, capacity=512, max_draft=8)
        ok, acc = True, []
        for g in (1, 2, 3, 4, 8):
            out = e.generate(p, Fixed(g), max_new_tokens=64)
            ok &= out.token_ids == ref
            acc.append(max(out.accept_lengths))
        ar = SpecEngine(target, engine=engine, capacity=512, max_draft=0).generate(p, TargetOnly(), max_new_tokens=64)
        res[engine] = {"greedy_equals_ar": bool(ok and ar.token_ids == ref), "max_accept_len": max(acc),
                       "runner": type(e.runner).__name__}
        print(f"check {engine:9s} greedy == target-only: {res[engine]['greedy_equals_ar']}  "
              f"(longest accepted step {max(acc)}, runner {res[engine]['runner']})", flush=True)
    res["long"] = long_inputs_check(target)
    res["eagle"] = eagle_long_draft_check(target, prompt(300, seed=5))
    res["second_device"] = second_device_check(target, draft, prompt)
    return res


def long_inputs_check(target) -> dict:
    """Inputs longer than one bucket (128) run in chunks: a 1,000-token prompt with every upload delayed on the
    device (``torch.cuda._sleep`` before each copy: the device lags the host, so a host buffer rewritten before its
    copy ran would feed a later chunk's ids for an earlier one), and a γ = 140 verify (the target as its own draft,
    every draft accepted); each engine's greedy tokens against eager target-only."""
    from actors.runtime import runners  # heavy: torch

    long_prompt = prompt(1000, seed=3)
    ref_long = SpecEngine(target).generate(long_prompt, TargetOnly(), max_new_tokens=16).token_ids
    p = prompt(20)
    ref = SpecEngine(target).generate(p, TargetOnly(), max_new_tokens=150).token_ids
    upload, out = runners.Staging.upload, {}

    def lagging(self, dst, used):
        if dst.is_cuda:
            torch.cuda._sleep(20_000_000)           # ~10 ms of device time queued before the copy
        upload(self, dst, used)

    for engine in ("static", "compiled"):
        runners.Staging.upload = lagging
        try:
            got = SpecEngine(target, engine=engine, capacity=2048).generate(long_prompt, TargetOnly(),
                                                                              max_new_tokens=16).token_ids
        finally:
            runners.Staging.upload = upload
        spec = SpecEngine(target, ModelDrafter(target), engine=engine, capacity=512, max_draft=160)
        chain = spec.generate(p, Fixed(140), max_new_tokens=150)
        out[engine] = {"long_prompt_equals_eager": got == ref_long, "gamma_140_equals_ar": chain.token_ids == ref,
                       "longest_accepted": max(chain.accept_lengths)}
        print(f"check {engine:9s} 1000-token prompt, lagging device == eager: {got == ref_long}; γ 140 == "
              f"target-only: {chain.token_ids == ref} (longest accepted step {max(chain.accept_lengths)})", flush=True)
    return out


def section_ar():
    target = random_model("7b")
    res = {"floor": hbm_floor(target)}
    print(f"ar HBM floor {res['floor']['floor_ms_per_token']:.2f} ms/token "
          f"({res['floor']['weight_bytes'] / 1e9:.2f} GB at {res['floor']['copy_bandwidth_GBps']:.0f} GB/s)", flush=True)
    for name, kw in (("eager", {"engine": "eager"}), ("static", {"engine": "static"}),
                     ("compiled", {"engine": "compiled"}),
                     ("compiled+inductor", {"engine": "compiled", "inductor": True})):
        t0 = time.perf_counter()
        e = SpecEngine(target, None, engine=kw["engine"], capacity=1024, max_draft=0, inductor=kw.get("inductor"))
        e.prepare()
        prep = time.perf_counter() - t0
        r = engine_tokens_per_s(e, TargetOnly())
        r["prepare_s"] = prep
        res[name] = r
        print(f"ar {name:18s} {r['decode_ms_per_token']:.2f} ms/token  {r['tok_s']:.1f} tok/s (prepare {prep:.0f} s)",
              flush=True)
        del e
    p = torch.tensor([prompt()], device=DEV)
    hf = {}
    for name, kw in (("hf_generate_dynamic", {}), ("hf_generate_static_compile", {"cache_implementation": "static"})):
        try:
            gen = lambda: target.generate(p, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, **kw)  # noqa: E731
            t0 = time.perf_counter()
            out = gen()
            gen()
            warm = time.perf_counter() - t0
            t = median_time(gen)
            hf[name] = {"tok_s": throughput(NEW, t), "ms_per_token": 1e3 * t / NEW, "warmup_s": warm,
                        "same_tokens_as_ours": out[0, PROMPT_LEN:].tolist() == res["eager"]["tokens"]}
            print(f"ar {name:26s} {1e3 * t / NEW:.2f} ms/token (prefill included)  "
                  f"same tokens: {hf[name]['same_tokens_as_ours']}", flush=True)
        except Exception as ex:  # noqa: BLE001
            hf[name] = {"error": str(ex).splitlines()[0][:200]}
            print(f"ar {name} failed: {hf[name]['error']}", flush=True)
    res.update(hf)
    e, s, c = (res[k]["decode_ms_per_token"] for k in ("eager", "static", "compiled"))
    best = min(c, res["compiled+inductor"]["decode_ms_per_token"])
    res["ratios"] = {"eager/compiled": e / c, "static/compiled": s / c, "compiled/floor": c / res["floor"]["floor_ms_per_token"],
                     "best_compiled/floor": best / res["floor"]["floor_ms_per_token"],
                     "eager/best_compiled": e / best}
    for k, v in res["ratios"].items():
        print(f"ar ratio {k:22s} {v:.2f}", flush=True)
    for v in res.values():
        if isinstance(v, dict):
            v.pop("tokens", None)
    return res


def section_spec():
    target, draft = random_model("7b"), random_model("68m")
    p = prompt()
    res = {}
    ours = SpecEngine(target, ModelDrafter(draft), engine="compiled", capacity=1024, max_draft=8)
    ours.prepare()
    pt = torch.tensor([p], device=DEV)
    for g in (1, 2, 4, 8):
        r = engine_tokens_per_s(ours, Fixed(g))
        gen = lambda: target.generate(pt, assistant_model=draft, max_new_tokens=NEW, min_new_tokens=NEW,  # noqa: E731
                                      do_sample=False, num_assistant_tokens=g,
                                      num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
        try:
            out = gen()
            t = median_time(gen)
            same = out[0, PROMPT_LEN:].tolist() == r["tokens"]
            hf = {"tok_s": throughput(NEW, t), "same_tokens": same}
        except Exception as ex:  # noqa: BLE001
            hf = {"error": str(ex).splitlines()[0][:200]}
        r.pop("tokens")
        res[g] = {"ours_compiled": r, "hf_assisted": hf}
        if "tok_s" in hf:
            res[g]["ours/hf"] = r["tok_s"] / hf["tok_s"]
            print(f"spec γ={g}: ours {r['tok_s']:.1f} tok/s vs transformers assisted {hf['tok_s']:.1f} tok/s "
                  f"= {res[g]['ours/hf']:.2f}x  (same tokens: {hf['same_tokens']}, {r['steps']} steps)", flush=True)
        else:
            print(f"spec γ={g}: ours {r['tok_s']:.1f} tok/s; transformers assisted failed: {hf['error']}", flush=True)
    return res


def forward_curve(model, ms, engine, reps=20, context=512):
    """Median time of one forward of m tokens at a fixed context, per m (runner API, no policy)."""
    e = SpecEngine(model, None, engine=engine, capacity=context + 256, max_draft=max(ms) - 1)
    e.prepare()
    r = e.runner
    base = prompt(context)
    r.reset()
    r.forward(base, last_only=True)
    out = {}
    for m in ms:
        ids = prompt(m, seed=m)
        for _ in range(3):
            r.forward(ids)
            r.rollback(context)
        ts = []
        for _ in range(reps):
            t0 = sync_time()
            r.forward(ids).argmax(-1).tolist()
            ts.append(sync_time() - t0)
            r.rollback(context)
        out[m] = statistics.median(ts)
    return out


def section_curve():
    target = random_model("7b")
    ms = list(range(1, 65))
    static = forward_curve(target, ms, "static")
    comp = forward_curve(target, [1, 2, 4, 8, 16, 32, 64], "compiled")
    res = {"static_ms": {m: 1e3 * t for m, t in static.items()}, "compiled_ms": {m: 1e3 * t for m, t in comp.items()},
           "static_ratio": {m: static[m] / static[1] for m in ms},
           "compiled_ratio": {m: comp[m] / comp[1] for m in comp}}
    shape = "tiny" if TINY else "7b"
    for m in (1, 2, 4, 8, 16, 32, 64):
        print(f"curve {shape} m={m:2d}: static {1e3 * static[m]:6.2f} ms (t/t1 {static[m] / static[1]:.2f})  "
              f"compiled {1e3 * comp[m]:6.2f} ms (t/t1 {comp[m] / comp[1]:.2f})", flush=True)
    return res


def section_c():
    target, draft = random_model("7b"), random_model("68m")
    res = {}
    for engine in ("eager", "compiled"):
        t = forward_curve(target, [1], engine)[1]
        d = forward_curve(draft, [1], engine, reps=50)[1]
        res[engine] = {"target_ms": 1e3 * t, "draft_token_ms": 1e3 * d, "c": d / t}
        print(f"c {engine:8s}: draft token {1e3 * d:.3f} ms / target forward {1e3 * t:.2f} ms = c {d / t:.3f}", flush=True)
    return res


def int4_llama_70b():
    """Llama-2-70B shape built one layer at a time: meta → random bf16 on the GPU → int4 weight-only (torchao)."""
    from torchao.quantization import Int4WeightOnlyConfig, quantize_  # heavy: torchao
    from transformers import LlamaForCausalLM  # heavy: transformers

    cfg = llama_cfg("70b")
    with torch.device("meta"):
        model = LlamaForCausalLM(cfg)
    # tinygemm packing runs on torch's own int4 kernel; the default "plain" packing needs the separate mslk package
    qcfg = Int4WeightOnlyConfig(group_size=128, int4_packing_format="tile_packed_to_4d")
    torch.manual_seed(0)

    def materialise(mod):
        mod.to_empty(device=DEV)
        for p in mod.parameters():
            if p.dim() >= 2:
                torch.nn.init.normal_(p, std=0.02)
            else:
                torch.nn.init.ones_(p)
        return mod

    for layer in model.model.layers:
        materialise(layer.to(torch.bfloat16))
        quantize_(layer, qcfg)
        torch.cuda.empty_cache()
    for mod in (model.model.embed_tokens, model.model.norm, model.lm_head):
        materialise(mod.to(torch.bfloat16))
    # rotary buffers are computed, not loaded: build them again on the device rather than copy from meta
    model.model.rotary_emb = type(model.model.rotary_emb)(cfg).to(DEV)
    return model.eval()


def section_curve70b():
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    model = int4_llama_70b()
    built = time.perf_counter() - t0
    weights = torch.cuda.max_memory_allocated()
    ms = [1, 2, 4, 8, 16, 32, 64]
    res = {"build_s": built, "peak_after_build_GB": weights / 1e9}
    print(f"curve70b built in {built:.0f} s, peak {weights / 1e9:.1f} GB", flush=True)
    for engine in ("static", "compiled"):
        try:
            curve = forward_curve(model, ms, engine, reps=10)
            res[engine + "_ms"] = {m: 1e3 * t for m, t in curve.items()}
            for m in ms:
                print(f"curve70b-int4 {engine:8s} m={m:2d}: {1e3 * curve[m]:7.2f} ms (t/t1 {curve[m] / curve[1]:.2f})",
                      flush=True)
        except Exception as ex:  # noqa: BLE001
            res[engine + "_error"] = str(ex).splitlines()[0][:300]
            print(f"curve70b {engine} failed: {res[engine + '_error']}", flush=True)
    res["peak_GB"] = torch.cuda.max_memory_allocated() / 1e9
    print(f"curve70b peak GPU memory {res['peak_GB']:.1f} GB", flush=True)
    return res


def reference_model(name: str):
    """A random bf16 model on the GPU from a reference config (actors/assets/reference), built off meta."""
    from transformers import LlamaConfig, LlamaForCausalLM  # heavy: transformers

    d = json.loads(config_path(name)[0].read_text())
    d.pop("_specsweep_reference", None)
    cfg = LlamaConfig(**d)
    cfg.eos_token_id = cfg.bos_token_id = None
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)          # built in bf16 as from_pretrained loads it: no fp32 copy
    with torch.device("meta"):
        model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(prev)
    model.to_empty(device=DEV)
    torch.manual_seed(0)
    with torch.no_grad():
        for prm in model.parameters():
            torch.nn.init.normal_(prm, std=0.02) if prm.dim() >= 2 else torch.nn.init.ones_(prm)
    model.to(torch.bfloat16)
    model.model.rotary_emb = type(model.model.rotary_emb)(cfg).to(DEV)
    model.generation_config.eos_token_id = None
    return model.eval()


def section_plan():
    res = {}
    for target, draft, positions in (("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", 4096),
                                     ("lmsys/vicuna-7b-v1.3", "double7/vicuna-68m", 2048)):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        t, d = reference_model(target), reference_model(draft)
        e = SpecEngine(t, ModelDrafter(d), engine="compiled", capacity=positions, max_draft=63)
        e.prepare()
        e.generate(prompt(), Fixed(4), max_new_tokens=64)
        e.runner.forward(prompt(64, seed=7))            # the plan's largest forward: 64 verified tokens
        peak = torch.cuda.max_memory_allocated()
        tp = model_plan(target, "bfloat16", None, positions)
        dp = model_plan(draft, "bfloat16", None, positions, tokens=1)
        planned = gpu0_bytes(tp, dp, 1) - WORKSPACE_BYTES     # the allocator does not see the CUDA context
        res[target] = {"peak_bytes": peak, "planned_bytes_without_workspace": planned, "peak/planned": peak / planned,
                       "positions": positions, "workspace_bytes": WORKSPACE_BYTES}
        print(f"plan {target.split('/')[-1]} + {draft.split('/')[-1]} ({positions} positions): peak allocated "
              f"{peak / 1e9:.2f} GB vs planned {planned / 1e9:.2f} GB (+{WORKSPACE_BYTES / 1e9:.0f} GB workspace) "
              f"= {peak / planned:.3f}", flush=True)
        del e, t, d
    return res


SECTIONS = {"check": section_check, "ar": section_ar, "spec": section_spec, "curve": section_curve, "c": section_c,
            "batch": lambda: section_batch(sys.modules[__name__]), "curve70b": section_curve70b, "plan": section_plan}


def main(argv):
    names = argv or ["check", "ar", "spec", "curve", "c"]
    bad = [n for n in names if n not in SECTIONS]
    if bad:
        raise SystemExit(f"unknown section(s) {', '.join(bad)}: valid are {', '.join(SECTIONS)}")
    if DEV.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench.gpu needs a CUDA GPU (SPECSWEEP_BENCH_DEVICE=cpu SPECSWEEP_BENCH_SHAPE=tiny: a smoke test)")
    OUT.mkdir(parents=True, exist_ok=True)
    import transformers  # heavy: transformers

    meta = {"device": torch.cuda.get_device_name() if DEV.type == "cuda" else "cpu", "torch": torch.__version__, "transformers": transformers.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps(meta), flush=True)
    for n in names:
        t0 = time.perf_counter()
        try:
            res = SECTIONS[n]()
        except Exception as ex:  # noqa: BLE001 - keep the other sections' results

            traceback.print_exc()
            res = {"error": f"{type(ex).__name__}: {str(ex).splitlines()[0][:300] if str(ex) else ''}"}
        res["meta"] = meta
        res["section_s"] = time.perf_counter() - t0
        (OUT / f"gpu_{n}.json").write_text(json.dumps(res, indent=1, default=str))
        print(f"[{n} done in {res['section_s']:.0f} s]", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
