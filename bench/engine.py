"""Engine benchmark: `ar` vs `fixed` at several γ, and our engine vs transformers' own
assisted generation at the same γ, side by side in one run (greedy, batch 1).

    python -m bench.engine [--target smollm2-135m] [--draft smollm2-135m-draft] [--gammas 1 2 4 8] [--compiled]
    python -m bench.engine --random-shapes llama-7b/vicuna-68m   # GPU: real shapes, random weights

transformers' assistant must be a full-vocabulary HF model, so the HF comparison uses a
full-vocabulary draft: the given draft when it is one, else the target's first `--hf-layers`
layers (acceptance is then low, but identical for both engines: the comparison is of engine
overhead at equal acceptance). Prints tok/s (mean over prompts of per-prompt tok/s), mean accepted
length and ratios with 95 % paired-bootstrap intervals over prompts (``jobs/report/metrics.py``).
"""
from __future__ import annotations

import argparse
import copy
import time
from types import SimpleNamespace

import torch
from transformers import GenerationConfig

from actors.drafting.drafters import ModelDrafter
from actors.core.engine import SpecEngine
from actors.pair import Pair, PairConfig
from actors.loading.templates import default_template, render
from jobs.dataset import load_questions
from jobs.report.derived import summarize
from jobs.report.metrics import speedup
from policies.registry import build


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def truncated(target, layers: int):
    from transformers import AutoModelForCausalLM  # heavy: transformers

    cfg = copy.deepcopy(target.config)
    cfg.num_hidden_layers = layers
    if getattr(cfg, "layer_types", None):
        cfg.layer_types = cfg.layer_types[:layers]
    m = AutoModelForCausalLM.from_config(cfg).to(target.dtype)
    m.load_state_dict(target.state_dict(), strict=False)
    return m.to(target.device).eval()


def random_pair(name: str, device: str):
    from transformers import LlamaConfig, LlamaForCausalLM  # heavy: transformers

    shapes = {"llama-7b": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                               num_key_value_heads=32),
              "vicuna-68m": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=2, num_attention_heads=12,
                                 num_key_value_heads=12)}
    t, d = name.split("/")
    dt = torch.float16 if device.startswith("cuda") else torch.float32
    mk = lambda s: LlamaForCausalLM(LlamaConfig(vocab_size=32000, **shapes[s])).to(dt).to(device).eval()
    return mk(t), mk(d)


def time_ours(engine, prompts, policy_fn, max_new) -> dict:
    """``jobs.report.derived.summarize`` of one generation per prompt."""
    return summarize([engine.generate(p, policy_fn(), max_new_tokens=max_new) for p in prompts])


def time_hf(target, prompts, max_new, assistant=None, gamma=None, eos=None) -> dict:
    """``jobs.report.derived.summarize`` of transformers' ``generate`` per prompt (tokens and time only:
    it records no steps, so its step metrics are NaN)."""

    runs = []
    for p in prompts:
        ids = torch.tensor([p], device=target.device)
        # one GenerationConfig and no generation kwargs beside it (transformers deprecates mixing the two)
        settings = dict(max_new_tokens=max_new, do_sample=False, eos_token_id=eos, pad_token_id=eos)
        kw = {}
        if assistant is not None:
            kw["assistant_model"] = assistant
            settings.update(num_assistant_tokens=gamma, num_assistant_tokens_schedule="constant",
                            assistant_confidence_threshold=0.0)
            assistant.generation_config.num_assistant_tokens = gamma
            assistant.generation_config.num_assistant_tokens_schedule = "constant"
            assistant.generation_config.assistant_confidence_threshold = 0.0
        _sync(target.device)
        t = time.perf_counter()
        out = target.generate(ids, generation_config=GenerationConfig(**settings), **kw)
        _sync(target.device)
        runs.append(SimpleNamespace(new_tokens=out.shape[1] - len(p), wall_time=time.perf_counter() - t,
                                    accept_lengths=[], accepted=[], drafted=[], k_max=[]))
    return summarize(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--gammas", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--hf-layers", type=int, default=4)
    ap.add_argument("--random-shapes", default=None, help="e.g. llama-7b/vicuna-68m (random weights)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--compiled", action="store_true",
                    help="also time the compiled engine (torch.compile; CUDA graphs on GPU) against eager, side by side")
    a = ap.parse_args()


    torch.manual_seed(0)
    if a.random_shapes:
        dev = "cuda" if a.device == "auto" and torch.cuda.is_available() else ("cpu" if a.device == "auto" else a.device)
        target, draft = random_pair(a.random_shapes, dev)
        g = torch.Generator().manual_seed(0)
        prompts = [torch.randint(0, 32000, (128,), generator=g).tolist() for _ in range(a.questions)]
        eos = None
        hf_draft = draft
        label = f"{a.random_shapes} (random weights) on {dev}"
    else:
        pair = Pair(PairConfig(target=a.target, draft=a.draft, device=a.device))
        target, draft = pair.target, pair.draft_model
        tmpl = default_template(a.target, pair.tokenizer)
        qs = load_questions("sample", categories=["writing", "coding", "summarization", "math_reasoning", "qa", "rag"])
        prompts = [render(tmpl, pair.tokenizer, [{"role": "user", "content": q.turns[0]}]) for q in qs[: a.questions]]
        eos = pair.eos_ids[0] if pair.eos_ids else None
        full_vocab = draft is not None and not hasattr(draft, "kept_ids")
        hf_draft = draft if full_vocab else truncated(target, a.hf_layers)
        label = f"{a.target} + {a.draft} on {target.device}"
    eos_ids = [eos] if eos is not None else []
    ours = SpecEngine(target, ModelDrafter(draft) if draft is not None else None, eos_ids)
    ours_hfdraft = SpecEngine(target, ModelDrafter(hf_draft), eos_ids)
    # warm-up
    ours.generate(prompts[0], build("ar"), max_new_tokens=8)
    time_hf(target, prompts[:1], 8, eos=eos)
    print(f"# engine benchmark: {label}; {len(prompts)} prompts, max_new_tokens={a.max_new_tokens}, greedy, "
          f"{torch.get_num_threads()} threads, {time.strftime('%Y-%m-%d %H:%M')}")
    ar = time_ours(ours, prompts, lambda: build("ar"), a.max_new_tokens)
    hf_ar = time_hf(target, prompts, a.max_new_tokens, eos=eos)
    cell = lambda r: f"{r[0]:7.3f} [{r[1]:.3f}, {r[2]:.3f}]"                  # noqa: E731 — ratio, 95 % interval
    print(f"{'config':34s} {'tok/s':>8s} {'MAL':>6s} {'vs ar [95 % interval]':>24s}")
    print(f"{'ar (ours)':34s} {ar['throughput']:8.2f} {ar['mean_accepted_length']:6.2f} {1.0:7.3f}")
    print(f"{'target-only generate (HF)':34s} {hf_ar['throughput']:8.2f} {1.0:6.2f} {cell(speedup(hf_ar, ar))}")
    if draft is not None:
        for gm in a.gammas:
            m = time_ours(ours, prompts, lambda: build("fixed", gm), a.max_new_tokens)
            print(f"{f'fixed γ={gm} (ours, draft)':34s} {m['throughput']:8.2f} {m['mean_accepted_length']:6.2f} "
                  f"{cell(speedup(m, ar))}")
    if a.compiled:
        compiled_vs_eager(target, draft, eos_ids, prompts, a)
    print(f"\n# same full-vocabulary draft in both engines ({'given draft' if hf_draft is draft else f'target first {a.hf_layers} layers'})")
    print(f"{'γ':>3s} {'ours tok/s':>11s} {'HF tok/s':>9s} {'ours/HF [95 % interval]':>24s} {'MAL':>6s}")
    for gm in a.gammas:
        m = time_ours(ours_hfdraft, prompts, lambda: build("fixed", gm), a.max_new_tokens)
        hf = time_hf(target, prompts, a.max_new_tokens, assistant=hf_draft, gamma=gm, eos=eos)
        print(f"{gm:3d} {m['throughput']:11.2f} {hf['throughput']:9.2f} {cell(speedup(m, hf)):>24s} "
              f"{m['mean_accepted_length']:6.2f}")


def compiled_vs_eager(target, draft, eos_ids, prompts, a) -> None:
    """ar and fixed γ on the compiled engine vs the eager one, each config's two engines back to back."""
    drafter = ModelDrafter(draft) if draft is not None else None
    t0 = time.perf_counter()
    comp = SpecEngine(target, drafter, eos_ids, engine="compiled", capacity=1024, max_draft=max(a.gammas))
    comp.prepare(max(a.gammas))
    print(f"\n# compiled engine ({'CUDA graphs' if target.device.type == 'cuda' else 'torch.compile, no CUDA graphs'}) "
          f"vs eager; prepared in {time.perf_counter() - t0:.0f} s")
    eager = SpecEngine(target, ModelDrafter(draft) if draft is not None else None, eos_ids)
    cell = lambda r: f"{r[0]:7.3f} [{r[1]:.3f}, {r[2]:.3f}]"                  # noqa: E731
    print(f"{'config':18s} {'eager tok/s':>11s} {'compiled tok/s':>14s} {'compiled/eager [95 %]':>24s}  same tokens")
    for name, gm in [("ar", 0)] + ([("fixed", g) for g in a.gammas] if draft is not None else []):
        make = (lambda: build("ar")) if name == "ar" else (lambda g=gm: build("fixed", g))
        e_gens = [eager.generate(p, make(), max_new_tokens=a.max_new_tokens) for p in prompts]
        c_gens = [comp.generate(p, make(), max_new_tokens=a.max_new_tokens) for p in prompts]
        e, c = summarize(e_gens), summarize(c_gens)
        same = all(x.token_ids == y.token_ids for x, y in zip(e_gens, c_gens))
        label = "ar" if name == "ar" else f"fixed γ={gm}"
        print(f"{label:18s} {e['throughput']:11.2f} {c['throughput']:14.2f} {cell(speedup(c, e)):>24s}  {same}")


if __name__ == "__main__":
    main()
