"""A pair's GPU memory from its ``config.json`` alone (no weights): what ``specsweep plan`` prints and preflight checks.

Rule, per model (sizes from ``actors/loading/placement.py``'s :class:`Shape`):

    weights  = linear params × bytes per quantized weight + (embeddings, output head, norms) × dtype bytes
               (attention: q and o heads · head_dim wide, k and v kv_heads · head_dim; head_dim from the config,
               else hidden // heads)
    KV cache = 2 · layers · kv_heads · head_dim · dtype bytes per position × positions × batch
    activations (one forward of B rows × m tokens at context C)
             = B·m·vocab·4 (fp32 logits) + B·m·(4·hidden + 2·intermediate)·dtype bytes
               + B·heads·m·C·dtype bytes (attention scores, when not fused)

A pair on N GPUs: the target's weights and KV cache split evenly over the N GPUs (layers are
spread by ``device_map="auto"``), the draft and its cache on GPU 0 with the target's share, the
activations and :data:`WORKSPACE_BYTES` (CUDA context, cuBLAS workspace, allocator slack) on every
GPU. GPU 0 holds the most, so the pair fits a GPU kind when GPU 0's sum is at most that kind's memory.
A sweep is planned at its largest batch size (:func:`plan_batch`): a batch's static cache holds
rows × positions for the target and the draft alike.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

from huggingface_hub import try_to_load_from_cache

from actors.drafter_kinds.registry import kind_of
from actors.plan.gpus import GB, GPUS
from actors.loading.model_files import check_model_config, read_json
from actors.loading.placement import DTYPE_BYTES, QUANT_BYTES, Shape, kv_bytes, weight_bytes
from policies.errors import SpecsweepError

WORKSPACE_BYTES = 1 * GB
VERIFY_TOKENS = 64          # m of the largest forward a sweep runs (a 60-node tree plus its root, rounded up)
REFERENCE = Path(__file__).resolve().parents[1] / "assets" / "reference"


def _reference_index() -> dict[str, Path]:
    index = {}
    for cfg in sorted(REFERENCE.glob("*/config.json")):
        hub = json.loads(cfg.read_text()).get("_specsweep_reference", {}).get("hub_id")
        index[cfg.parent.name] = cfg
        if hub:
            index[hub] = cfg
    return index


def config_path(name: str) -> tuple[Path, str]:
    """(config.json, where it came from) for a model name, without loading weights.

    Order: built-in alias or EAGLE head, a local folder, the Hugging Face cache, then the
    config-only reference folders shipped in ``actors/assets/reference`` (by folder name or hub id).
    """
    from actors.loading.models import ALIASES  # heavy: torch

    refs = _reference_index()
    if name == "smollm2-135m":
        return refs["smollm2-135m-instruct"], "reference config (the GGUF alias's architecture)"
    kind = kind_of(name)
    own = kind.config_file(name) if kind is not None else None
    if own is not None:                               # a kind that keeps its config elsewhere (an EAGLE head)
        return own
    if name in ALIASES:
        return Path(ALIASES[name]) / "config.json", "built-in model"
    local = Path(name).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise SpecsweepError(f"model folder {name} has no config.json")
        return local / "config.json", "local folder"
    if "/" in name:
        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            return Path(cached), "Hugging Face cache"
    if name in refs:
        return refs[name], "reference config shipped with specsweep, no weights"
    raise SpecsweepError(f"no config.json for model {name!r}: give a local folder, a hub id whose config is in the "
                         f"Hugging Face cache, or one of the reference configs: {', '.join(sorted(refs))}")


PLAN_SIZES = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


def load_config_dict(name: str) -> tuple[dict, str, Path]:
    """(the parsed config.json of ``name``, where it came from, its path); its sizes checked by the shared rule
    (``actors/loading/model_files.py``) before anything is sized from them."""
    path, source = config_path(name)
    d = read_json(path, f"model config of {name!r}")
    check_model_config(d, f"model config {path} of {name!r}", PLAN_SIZES)
    return d, source, path


def load_shape(name: str) -> tuple[Shape, str]:
    """(the decoder's sizes, where its config came from) for ``name``; a multimodal config's ``text_config``."""
    shape, source, _ = load_shape_config(name)
    return shape, source


def load_shape_config(name: str) -> tuple[Shape, str, dict]:
    """:func:`load_shape`'s answer and the config it read (the decoder's part)."""
    d, source, path = load_config_dict(name)
    try:
        d = d.get("text_config", d)
        return Shape.of(SimpleNamespace(**d)), source, d
    except (OSError, ValueError, TypeError, AttributeError) as e:
        raise SpecsweepError(f"cannot read the model config {path} of {name!r} ({type(e).__name__}: {e})") from None


def params_by_component(s: Shape) -> dict[str, int]:
    """Parameters of a Llama-style decoder: embeddings, output head (0 when tied), attention, MLP, norms."""
    return {"embeddings": s.vocab * s.hidden, "output head": 0 if s.tied else s.vocab * s.hidden,
            "attention": s.layers * s.attention_params_per_layer(),
            "mlp": s.layers * 3 * s.hidden * s.intermediate, "norms": (2 * s.layers + 1) * s.hidden}


def activation_bytes(s: Shape, batch: int, tokens: int, context: int, dtype: str) -> int:
    """Peak activations of one forward (the module's rule): fp32 logits, hidden working set, attention scores."""
    rows = batch * tokens
    return int(rows * s.vocab * 4 + rows * (4 * s.hidden + 2 * s.intermediate) * DTYPE_BYTES[dtype]
               + batch * s.heads * tokens * context * DTYPE_BYTES[dtype])


@dataclass
class ModelPlan:
    """One model's sizes (bytes) under a dtype and weight quantization."""

    name: str
    source: str
    dtype: str
    quantization: str | None
    params: dict[str, int]
    weight_bytes: int
    kv_bytes_per_token: int
    kv_bytes: int
    activation_bytes: int

    @property
    def total_params(self) -> int:
        return sum(self.params.values())


def model_plan(name: str, dtype: str, quantization: str | None, positions: int, batch: int = 1,
               tokens: int = VERIFY_TOKENS) -> ModelPlan:
    """Sizes of ``name``, its parameters as its drafter kind counts them (``plan_params``: an EAGLE head reads the
    target's embeddings and output head, so only its layers and its feature fusion count,
    ``actors/drafter_kinds/eagle.py``)."""
    shape, source, config = load_shape_config(name)
    if dtype not in DTYPE_BYTES:
        raise SpecsweepError(f"dtype {dtype!r} is not valid: use one of {', '.join(DTYPE_BYTES)}")
    if quantization not in (None, *QUANT_BYTES):
        raise SpecsweepError(f"quantization {quantization!r} is not valid: use one of {', '.join(QUANT_BYTES)} or none")
    per_token = kv_bytes(shape, 1, dtype)
    params, weights = params_by_component(shape), weight_bytes(shape, dtype, quantization)
    weights += int(kind_of(name).plan_params(params, shape, config) * DTYPE_BYTES[dtype])   # the kind's entry (an EAGLE head's)
    return ModelPlan(name, source, dtype, quantization, params, weights, per_token, per_token * positions * batch,
                     activation_bytes(shape, batch, tokens, positions, dtype))


@dataclass
class PairPlan:
    """A pair placed on ``num_gpus`` GPUs: bytes on GPU 0 (the fullest) and the GPU kinds it fits."""

    label: str
    num_gpus: int
    target: ModelPlan
    draft: ModelPlan | None
    per_gpu_bytes: int
    fits: dict[str, bool] = field(default_factory=dict)          # GPU kind -> fits at num_gpus
    min_gpus: dict[str, int | None] = field(default_factory=dict)  # GPU kind -> fewest GPUs that fit (≤ 64)
    batch: int = 1                                                 # rows decoded together, each with its own cache

    def to_dict(self) -> dict:
        return asdict(self)


def gpu0_bytes(target: ModelPlan, draft: ModelPlan | None, n: int) -> int:
    """GPU 0's share: the target's weights and cache / n, the whole draft, activations, workspace."""
    own = (target.weight_bytes + target.kv_bytes) / n
    extra = (draft.weight_bytes + draft.kv_bytes + draft.activation_bytes) if draft else 0
    return int(own + extra + target.activation_bytes + WORKSPACE_BYTES)


def plan_batch(cfg) -> int:
    """The batch a sweep config's pairs are planned at: the largest of its ``batch_sizes`` (1 without any)."""
    return max(getattr(cfg, "batch_sizes", None) or [1])


def pair_plan(pair, batch: int = 1) -> PairPlan:
    """The plan of one config pair (``jobs/config/__init__.py``'s ``PairEntry``) at ``batch`` rows: dtype,
    quantization, positions, GPUs."""
    target = model_plan(pair.target, pair.dtype, pair.quantization, pair.max_context, batch)
    draft = None
    kind = kind_of(pair.draft)
    if kind is not None:                              # the kind's own check (an EAGLE head's shapes)
        kind.plan_check(pair.draft, load_config_dict(pair.target)[0])
    if kind is not None and kind.on_gpu:
        draft = model_plan(pair.draft, pair.dtype, pair.draft_quantization, pair.max_context, batch, tokens=1)
    n = max(1, int(pair.num_gpus))
    plan = PairPlan(pair.label, n, target, draft, gpu0_bytes(target, draft, n), batch=batch)
    for key, g in GPUS.items():
        plan.fits[key] = plan.per_gpu_bytes <= g.memory
        plan.min_gpus[key] = next((k for k in range(1, 65) if gpu0_bytes(target, draft, k) <= g.memory), None)
    return plan


def check_fits(plan: PairPlan, where: str) -> None:
    """Refuse a pair on GPUs that fits no listed GPU kind at its ``num_gpus`` and batch (one line, the fix named)."""
    if any(plan.fits.values()):
        return
    need = ", ".join(f"{GPUS[k].label}: {n}" for k, n in plan.min_gpus.items() if n) or "more than 64 of any"
    largest = max(g.memory for g in GPUS.values())
    smaller = ", or lower batch_sizes" if plan.batch > 1 else ""
    raise SpecsweepError(
        f"{where}: pair {plan.label} needs {plan.per_gpu_bytes / GB:.1f} GB on GPU 0 with num_gpus "
        f"{plan.num_gpus} at batch {plan.batch}, more than any listed GPU holds (largest {largest / GB:.0f} GB); "
        f"GPUs needed — {need}; or quantize the target (int8, int4){smaller}")
