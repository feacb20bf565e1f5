"""Where a target's weights go: sizes from a config, per-GPU memory limits for sharding (pure functions).

A target too large for one GPU is spread over the actor's N GPUs by transformers'
``device_map="auto"`` under explicit per-GPU ``max_memory`` caps. The caps leave, on
every GPU, a reserve for activations and the CUDA context, that GPU's share of the
target's KV cache (layers are split evenly), and — on the draft's GPU — the draft and
its KV cache. Sizes are estimated from the model config before anything is loaded, so
a plan that cannot fit is refused with one line instead of an out-of-memory error
halfway through loading.
"""
from __future__ import annotations

from dataclasses import dataclass

from policies.errors import SpecsweepError

GB = 10 ** 9
DTYPE_BYTES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0}
# weight-only quantization: bytes per linear weight, group scales and zero points included
# (int4: 0.5 B + one bf16 scale and one bf16 zero per group of 128 = 0.53125 B)
QUANT_BYTES = {"int8": 1.0 + 2 / 4096, "int4": 0.5 + 4 / 128, "fp8": 1.0 + 2 / 4096}


@dataclass(frozen=True)
class Shape:
    """The sizes that decide a decoder's memory (Llama-style: gated MLP, grouped-query attention).

    ``head_dim`` is the config's ``head_dim`` when it names one (Qwen3: 128 at hidden 1024 and 16 heads), else
    hidden // heads — the rule ``actors/drafting/head_files.py`` checks head tensors by. The query and output
    projections are heads · head_dim wide, the key and value projections kv_heads · head_dim.
    """

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool = False
    head_dim: int = 0            # 0: hidden // heads

    def __post_init__(self):
        if not self.head_dim:
            object.__setattr__(self, "head_dim", self.hidden // self.heads)

    @classmethod
    def of(cls, config) -> "Shape":
        heads = config.num_attention_heads
        return cls(config.hidden_size, config.intermediate_size, config.num_hidden_layers, heads,
                   getattr(config, "num_key_value_heads", None) or heads, config.vocab_size,
                   bool(getattr(config, "tie_word_embeddings", False)),
                   getattr(config, "head_dim", None) or config.hidden_size // heads)

    def attention_params_per_layer(self) -> int:
        """q [heads·head_dim, hidden], k and v [kv_heads·head_dim, hidden], o [hidden, heads·head_dim]."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return 2 * self.hidden * q + 2 * self.hidden * kv

    def linear_params_per_layer(self) -> int:
        return self.attention_params_per_layer() + 3 * self.hidden * self.intermediate      # + gate, up, down

    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied else 2)                 # embeddings + output head


def weight_bytes(shape: Shape, dtype: str = "bfloat16", quantization: str | None = None) -> int:
    """Bytes of the weights: linear layers at the quantized width, embeddings and norms at ``dtype``."""
    full = DTYPE_BYTES[dtype]
    per_linear = QUANT_BYTES[quantization] if quantization else full
    linear = shape.layers * shape.linear_params_per_layer() * per_linear
    rest = (shape.embedding_params() + (2 * shape.layers + 1) * shape.hidden) * full
    return int(linear + rest)


def kv_bytes(shape: Shape, tokens: int, dtype: str = "bfloat16") -> int:
    """KV cache of ``tokens`` positions: 2 (K and V) × layers × kv_heads × head_dim × tokens × element size."""
    return int(2 * shape.layers * shape.kv_heads * shape.head_dim * tokens * DTYPE_BYTES[dtype])


def plan_max_memory(target_bytes: int, n_gpus: int, gpu_bytes: int, target_kv_bytes: int = 0,
                    draft_bytes: int = 0, draft_gpu: int = 0, reserve: float = 0.05) -> dict[int, int]:
    """Per-GPU caps (bytes) for the target's weights on ``n_gpus`` GPUs of ``gpu_bytes`` each.

    cap_i = gpu_bytes·(1 − reserve) − target_kv_bytes / n − (draft_bytes if i = draft_gpu).
    Refused when Σ cap_i < target_bytes.
    """
    if n_gpus < 1:
        raise SpecsweepError(f"num_gpus must be >= 1, got {n_gpus}")
    if not 0 <= draft_gpu < n_gpus:
        raise SpecsweepError(f"draft_gpu {draft_gpu} is not one of the pair's GPUs 0..{n_gpus - 1}")
    caps = {}
    for i in range(n_gpus):
        cap = gpu_bytes * (1 - reserve) - target_kv_bytes / n_gpus - (draft_bytes if i == draft_gpu else 0)
        caps[i] = max(0, int(cap))
    if sum(caps.values()) < target_bytes:
        need = target_bytes + target_kv_bytes + draft_bytes
        raise SpecsweepError(
            f"the target needs {target_bytes / GB:.1f} GB of weights ({need / GB:.1f} GB with KV cache and draft) but "
            f"{n_gpus} GPU(s) of {gpu_bytes / GB:.0f} GB leave {sum(caps.values()) / GB:.1f} GB for it: raise num_gpus "
            "or quantize the target (int8, int4)")
    return caps


def max_memory_arg(caps: dict[int, int]) -> dict[int, str]:
    """``max_memory`` as transformers' ``from_pretrained`` takes it."""
    return {i: f"{max(1, cap // 2 ** 20)}MiB" for i, cap in caps.items()}
