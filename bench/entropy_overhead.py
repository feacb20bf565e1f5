"""What the draft-entropy seam costs: one greedy draft step with and without H(q), side by side.

    python -m bench.entropy_overhead [--draft smollm2-135m-draft] [--context 256] [--repeats 300] [--device cpu]
                                     [--threads N] [--random]

A draft step is what ``actors/drafting/drafters.py::ModelDrafter.next`` does per proposal (one row) under
greedy decoding: one decode forward of the draft (KV cache at ``--context`` tokens, cropped
back after each run), softmax over the vocabulary, argmax, then the proposal's statistics.

* with:    ``token_stats`` — q(x), max q and H(q) in nats, one host sync;
* without: q(x) and max q only, one host sync.

The two variants alternate (ABBA order) over the same cache; the script prints the median
of each, their ratio (the overhead of the entropy), the median of the per-pair ratios, and,
as the steadiest estimate on a busy machine, the statistics alone timed on one fixed
distribution. Goal: ratio < 1.02. If the draft cannot
be loaded (``--random``, or the asset is missing) a random-weight model of the same config
is used: time does not depend on the weights' values.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from actors.drafting.drafters import token_stats
from actors.runtime.hf_api import cache_arg
from actors.runtime.kv import crop_to, new_cache
from actors.loading.models import ModelSpec, load_model, resolve_source, wrap_reduced_vocab


def stats_without_entropy(probs: torch.Tensor, token: int) -> tuple[float, float]:
    p = probs.float()
    vals = torch.stack([p[token], p.max()]).tolist()
    return vals[0], vals[1]


def load_draft(name: str, device: str, random: bool):
    if not random:
        try:
            return load_model(ModelSpec(name, device=device)), name
        except Exception as e:  # noqa: BLE001 — fall back to the same shape with random weights
            print(f"# could not load {name} ({type(e).__name__}: {e}); using random weights of its config")
    from transformers import AutoConfig, AutoModelForCausalLM  # heavy: transformers


    source, _ = resolve_source(name)
    cfg = AutoConfig.from_pretrained(source)
    cfg.quantization_config = None
    torch.manual_seed(0)
    model = wrap_reduced_vocab(AutoModelForCausalLM.from_config(cfg), source).to(device).eval()
    return model, f"{name} (random weights, same config)"


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draft", default="smollm2-135m-draft")
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--random", action="store_true", help="random weights of the draft's config")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)


    model, label = load_draft(a.draft, a.device, a.random)
    device = torch.device(a.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(0)
    ctx = torch.randint(3, vocab, (1, a.context), generator=g).to(device)
    cache = new_cache(model)
    model(input_ids=ctx, **cache_arg(cache), use_cache=True, logits_to_keep=1)
    one = ctx[:, -1:]

    def step(with_entropy: bool):
        logits = model(input_ids=one, **cache_arg(cache), use_cache=True, logits_to_keep=1).logits[0, -1]
        probs = torch.softmax(logits.float(), -1)
        token = int(probs.argmax())
        out = token_stats(probs, token) if with_entropy else stats_without_entropy(probs, token)
        crop_to(cache, a.context)
        return out

    def timed(fn):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - t

    for _ in range(10):                       # warm-up
        step(True)
        step(False)
    with_t, without_t = [], []
    for r in range(a.repeats):
        order = (True, False) if r % 2 == 0 else (False, True)
        for flag in order:
            (with_t if flag else without_t).append(timed(lambda: step(flag)))

    logits = model(input_ids=one, **cache_arg(cache), use_cache=True, logits_to_keep=1).logits[0, -1]
    crop_to(cache, a.context)
    probs = torch.softmax(logits.float(), -1)
    token = int(probs.argmax())
    n = 2000
    s_with = statistics.median(timed(lambda: token_stats(probs, token)) for _ in range(n))
    s_without = statistics.median(timed(lambda: stats_without_entropy(probs, token)) for _ in range(n))

    m_with, m_without = statistics.median(with_t), statistics.median(without_t)
    paired = statistics.median(w / wo for w, wo in zip(with_t, without_t))
    print(f"# entropy overhead {time.strftime('%Y-%m-%d %H:%M')}: {label}, output vocab {probs.numel()}, "
          f"context {a.context}, {a.repeats} alternating pairs, device {device}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, {platform.processor() or platform.machine()}")
    print(f"draft step with H(q):     {m_with * 1e3:8.3f} ms (median)")
    print(f"draft step without H(q):  {m_without * 1e3:8.3f} ms (median)")
    print(f"ratio with / without:     {m_with / m_without:8.4f}  (of medians; median of paired ratios "
          f"{paired:.4f}; goal < 1.02)")
    print(f"statistics alone: with {s_with * 1e6:.1f} µs, without {s_without * 1e6:.1f} µs → entropy adds "
          f"{(s_with - s_without) * 1e6:.1f} µs = {100 * (s_with - s_without) / m_without:.2f} % of a draft step")


if __name__ == "__main__":
    main()
