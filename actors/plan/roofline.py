"""Roofline what-if costs: predicted step times of a pair on a GPU it has never run on, from config.json alone.

One forward of B = 1 row × m tokens at context C (Williams, Waterman, Patterson, "Roofline: an
insightful visual performance model", the bound is the slower of memory traffic and arithmetic):

    bytes(m, C) = weight bytes + KV bytes per position × C                (read once per forward)
    flops(m, C) = 2 · (linear + output-head params) · m + 4 · layers · heads · head_dim · m · C
    t(m, C)     = max(bytes / bandwidth, flops / peak) + OVERHEAD_PER_LAYER · layers

with the GPU's datasheet bandwidth and dense peak (``actors/plan/gpus.py``; weight-only int8/int4 still
multiply in bf16). As a :class:`~policies.costs.CostModel`: the verify table is t(m, 0) at m = 1 … 256,
the context terms are linear (v_C = 1000 · KV bytes per position / bandwidth; v_mC = 1000 · the
attention FLOPs per token and position / peak), the draft's per-proposal time is the draft's t(1, 0)
and its per-1000-positions term its KV read. A roofline is a lower bound: real decoders reach
50–80 % of the bandwidth (docs/gpu_planning.md compares it with measured GPU runs).
"""
from __future__ import annotations

from actors.drafter_kinds.registry import kind_of
from actors.plan.gpus import GPU, gpu
from actors.plan.memory_plan import ModelPlan, load_shape, model_plan
from actors.loading.placement import QUANT_BYTES, Shape
from policies.costs import DRAFT_FEATURES, CostModel
from policies.errors import SpecsweepError

OVERHEAD_PER_LAYER = 10e-6     # seconds: kernel gaps of one CUDA-graphed decoder layer (~8 kernels)
KNOTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PREFIX = "roofline:"


def label(kind: str, quantization: str | None = None) -> str:
    """How every roofline figure is labelled in the report, the log and MLflow."""
    return f"what-if (roofline {kind}{', ' + quantization + ' target' if quantization else ''})"


def parse(text: str | None) -> tuple[str, str | None] | None:
    """``roofline:GPU[:QUANT]`` → (GPU kind, target weight quantization or None); None for any other text."""
    if not isinstance(text, str) or not text.startswith(PREFIX):
        return None
    kind, _, quant = text[len(PREFIX):].partition(":")
    gpu(kind)
    if quant and quant not in QUANT_BYTES:
        raise SpecsweepError(f"{text}: quantization {quant!r} is not valid; use roofline:GPU or roofline:GPU:Q with Q "
                             f"one of {', '.join(QUANT_BYTES)}")
    return gpu(kind).key, quant or None


def _flops_per_token(plan: ModelPlan) -> float:
    p = plan.params
    return 2.0 * (p["attention"] + p["mlp"] + p.get("fusion", 0) + (p["output head"] or p["embeddings"]))


def forward_time(plan: ModelPlan, shape: Shape, g: GPU, m: int, context: int) -> float:
    """Seconds of one forward over m tokens at ``context`` cached positions (the module's rule)."""
    nbytes = plan.weight_bytes + plan.kv_bytes_per_token * context
    flops = _flops_per_token(plan) * m + 4.0 * shape.layers * shape.heads * shape.head_dim * m * context
    return max(nbytes / g.bandwidth, flops / g.peak_flops(plan.quantization)) + OVERHEAD_PER_LAYER * shape.layers


def roofline_cost_model(kind: str, target: str, draft: str | None, dtype: str = "bfloat16",
                        quantization: str | None = None, draft_quantization: str | None = None) -> CostModel:
    """The cost model of target (+ draft; None or ``ngram`` drafts for free) on GPU ``kind``."""
    g = gpu(kind)
    tplan, tshape = model_plan(target, dtype, quantization, 1), load_shape(target)[0]
    values = [forward_time(tplan, tshape, g, m, 0) for m in KNOTS]
    peak = g.peak_flops(quantization)
    table = {"knots": list(KNOTS), "values": values,
             "per_kctx": 1000.0 * tplan.kv_bytes_per_token / g.bandwidth,
             "per_token_kctx": 1000.0 * 4.0 * tshape.layers * tshape.heads * tshape.head_dim / peak}
    coeffs = dict.fromkeys(DRAFT_FEATURES, 0.0)
    if (kind := kind_of(draft)) is not None and kind.on_gpu:
        dplan, dshape = model_plan(draft, dtype, draft_quantization, 1), load_shape(draft)[0]
        coeffs["per_proposal"] = forward_time(dplan, dshape, g, 1, 0)
        coeffs["per_proposal_kctx"] = 1000.0 * dplan.kv_bytes_per_token / g.bandwidth
    return CostModel(draft=coeffs, table=table, overhead=0.0, context=0, device=f"{PREFIX}{g.key}",
                     label=label(g.key), trust={"reliable": True, "reasons": []},
                     probe={"kind": "roofline", "gpu": g.label, "bandwidth": g.bandwidth, "peak_flops": peak,
                            "overhead_per_layer": OVERHEAD_PER_LAYER, "dtype": dtype, "quantization": quantization})
