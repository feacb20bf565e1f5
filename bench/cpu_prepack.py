"""Does prepacking the target's linear weights for oneDNN make a CPU verify forward over m tokens cheaper?

On some CPUs one forward of SmolLM2-135M over m = 2 tokens costs 1.6 × m = 1 and m = 3 costs more than m = 4
(``docs/replay.md``, "Time"): for m ≥ 2 the dense fp32 matmul repacks every weight matrix on each call, m = 1 takes
the matrix-vector path, and a weight packed once into oneDNN's blocked layout is read as it lies; on others the packed
call is slower at every width (``actors/runtime/cpu_pack.py``, which packs a pair's layer shapes where its probe
finds them faster). This script measures the whole model with every layer packed, in one process and interleaved
(dense, packed, dense, packed … so drift hits both alike), T(m) = one forward of m new tokens after a
``--context``-token prefill, for each m, on a dense copy, a copy with every layer packed and the copy a pair runs by
default (``auto``: the layer shapes its probe finds faster packed); prints the medians, T(m)/T(1), packed/dense and
auto/dense per m with 95 % bootstrap intervals over the repeats, how many layers ``auto`` packed, and whether the
packed copy's greedy token at every position equals the dense copy's (the kernels differ, so logits may differ in
the last bits).

    python -m bench.cpu_prepack [--target smollm2-135m] [--context 128] [--repeats 12] [--widths 1 2 3 4 5 8]
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import torch

from actors.loading.models import ModelSpec, load_model
from actors.runtime.cpu_pack import pack_linears, packing_pays


def packed_copy(model: torch.nn.Module, where=None) -> tuple[torch.nn.Module, int]:
    """A copy of ``model`` with its linear layers packed where ``where`` holds (every one when None), and how many."""
    out = copy.deepcopy(model)
    return out, pack_linears(out, where)


@torch.no_grad()
def forward_seconds(model, prompt: torch.Tensor, width: int, gen: torch.Generator) -> tuple[float, torch.Tensor]:
    """Seconds of one forward of ``width`` random tokens after ``prompt`` (its prefill untimed), and its logits."""
    from transformers import DynamicCache  # heavy: transformers

    cache = DynamicCache()
    model(input_ids=prompt, past_key_values=cache, use_cache=True)
    new = torch.randint(0, 1000, (1, width), generator=gen)
    t = time.perf_counter()
    logits = model(input_ids=new, past_key_values=cache, use_cache=True).logits
    return time.perf_counter() - t, logits


def interval(ratios: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval of the mean of ``ratios``."""
    r = np.array(ratios)
    idx = np.random.default_rng(seed).integers(0, len(r), (resamples, len(r)))
    means = r[idx].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.cpu_prepack", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="smollm2-135m")
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=12)
    ap.add_argument("--widths", type=int, nargs="+", default=[1, 2, 3, 4, 5, 8])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    a = ap.parse_args(argv)
    if a.repeats < 2 or a.context < 1 or min(a.widths) < 1:
        raise SystemExit("bench.cpu_prepack: --repeats >= 2, --context >= 1 and widths >= 1")
    a.widths = sorted(set(a.widths) | {1})          # T(1) is the ratios' base
    torch.set_num_threads(a.threads)
    dense = load_model(ModelSpec(a.target, device="cpu"))
    if next(dense.parameters()).dtype != torch.float32:
        raise SystemExit(f"bench.cpu_prepack: {a.target} loads as {next(dense.parameters()).dtype}; oneDNN packing "
                         "here is for float32 weights")
    packed, n_all = packed_copy(dense)
    auto, n_auto = packed_copy(dense, packing_pays)
    forms = {"dense": dense, "packed": packed, "auto": auto}
    prompt = torch.randint(0, 1000, (1, a.context), generator=torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(2)
    times = {w: {k: [] for k in forms} for w in a.widths}
    same, positions, worst = 0, 0, 0.0
    for r in range(a.repeats + 2):                     # the first two rounds warm every copy up: discarded
        for w in a.widths:
            state = gen.get_state()
            logits = {}
            for k, model in forms.items():
                gen.set_state(state)                   # the same new tokens for every copy
                t, logits[k] = forward_seconds(model, prompt, w, gen)
                if r >= 2:
                    times[w][k].append(t)
            if r >= 2:
                same += int((logits["dense"].argmax(-1) == logits["packed"].argmax(-1)).sum())
                positions += w
                worst = max(worst, float((logits["dense"] - logits["packed"]).abs().max()))
    print(f"# bench.cpu_prepack {time.strftime('%Y-%m-%d %H:%M')}: {a.target}, context {a.context}, "
          f"{a.repeats} interleaved repeats, {a.threads} torch thread(s), float32; auto packed {n_auto} of {n_all} "
          "linear layers")
    print(f"{'m':>3s} {'dense ms':>9s} {'packed ms':>10s} {'auto ms':>8s} {'dense T(m)/T(1)':>16s} "
          f"{'packed T(m)/T(1)':>17s} {'packed/dense [95 %]':>24s} {'auto/dense [95 %]':>24s}")
    one = {k: statistics.median(times[a.widths[0]][k]) for k in forms}
    for w in a.widths:
        med = {k: statistics.median(times[w][k]) for k in forms}
        cells = []
        for k in ("packed", "auto"):
            ratios = [y / x for x, y in zip(times[w]["dense"], times[w][k])]
            lo, hi = interval(ratios)
            cells.append(f"{statistics.mean(ratios):8.3f} [{lo:.3f}, {hi:.3f}]")
        print(f"{w:3d} {med['dense'] * 1e3:9.1f} {med['packed'] * 1e3:10.1f} {med['auto'] * 1e3:8.1f} "
              f"{med['dense'] / one['dense']:16.2f} {med['packed'] / one['packed']:17.2f} {cells[0]:>24s} "
              f"{cells[1]:>24s}")
    print(f"greedy token equal at {same} of {positions} positions; largest |logit difference| {worst:.2e}")


if __name__ == "__main__":
    main()
