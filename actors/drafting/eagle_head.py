"""EAGLE feature heads: the network, its KV cache, and the EAGLE-1/2 release layout.

Rule (Li et al. 2024, "EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty", §4.1;
docs/definitions.md, EAGLE feature heads). At position i the head reads the target's final hidden state f_i (after the target's
final norm, as its base model returns it) and the embedding of token t_{i+1}:

    g_i = Layer(fc([e(t_{i+1}); f_i]))        g_i predicts f_{i+1}
    q(t_{i+2}) = softmax(W_lm · g_i)          the target's LM head, no extra norm

``Layer`` is one Llama decoder layer whose first input norm is omitted (attention with rotary
positions and grouped-query heads, residual, post-attention RMSNorm, SwiGLU MLP, residual).
Drafting a second token feeds the predicted g_i in place of f_{i+1}.

Release layout (the EAGLE repository's, read by vLLM and SGLang): a folder with ``config.json``
(a Llama config with one hidden layer and a ``bias`` flag for ``fc``) and ``model.safetensors`` or
``pytorch_model.bin`` holding ``fc.weight`` [h, 2h] (+ ``fc.bias``), ``layers.0.self_attn.{q,k,v,o}_proj.*``,
``layers.0.mlp.{gate,up,down}_proj.weight``, ``layers.0.post_attention_layernorm.weight`` and optionally
``embed_tokens.weight`` (the target's embeddings are used when absent). specsweep adds an optional
``draft_vocab.json`` ({"kept_ids": [...]}): the head drafts over those tokens only (FR-Spec's
frequent-token subset), the target still verifies over the full vocabulary.
"""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from actors.drafting.head_files import DRAFT_VOCAB, WEIGHT_FILES, check_head
from actors.loading.model_files import read_kept_ids
from policies.errors import SpecsweepError


@dataclass
class HeadShape:
    """The sizes a head is built from (read from its ``config.json``)."""

    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    attention_bias: bool = False
    bias: bool = True                     # fc has a bias
    vocab_size: int = 0

    @classmethod
    def from_config(cls, cfg: dict) -> "HeadShape":
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        return cls(hidden_size=hidden, intermediate_size=int(cfg["intermediate_size"]), num_attention_heads=heads,
                   num_key_value_heads=int(cfg.get("num_key_value_heads") or heads),
                   head_dim=int(cfg.get("head_dim") or hidden // heads), rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
                   attention_bias=bool(cfg.get("attention_bias", False)), bias=bool(cfg.get("bias", True)),
                   vocab_size=int(cfg.get("vocab_size", 0)))


class RMSNorm(nn.Module):
    """Root-mean-square layer norm (Zhang & Sennrich 2019, eq. 4): x / sqrt(mean(x²) + eps) · weight."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


class HeadCache:
    """The head's own KV cache: keys and values [batch, kv_heads, positions, head_dim]."""

    def __init__(self):
        self.k = self.v = None

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k, v):
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def crop(self, n: int) -> None:
        """Keep the first ``n`` positions."""
        if self.k is not None and n < len(self):
            self.k, self.v = self.k[..., :n, :], self.v[..., :n, :]


class Attention(nn.Module):
    """Grouped-query self-attention with rotary positions; keys and values appended to a :class:`HeadCache`."""

    def __init__(self, s: HeadShape):
        super().__init__()
        self.s = s
        self.q_proj = nn.Linear(s.hidden_size, s.num_attention_heads * s.head_dim, bias=s.attention_bias)
        self.k_proj = nn.Linear(s.hidden_size, s.num_key_value_heads * s.head_dim, bias=s.attention_bias)
        self.v_proj = nn.Linear(s.hidden_size, s.num_key_value_heads * s.head_dim, bias=s.attention_bias)
        self.o_proj = nn.Linear(s.num_attention_heads * s.head_dim, s.hidden_size, bias=s.attention_bias)

    def forward(self, x, cos, sin, allowed, cache: HeadCache | None):
        # x [B, T, h]; cos/sin [B, T, d]; allowed [B, 1, T, cached + T] bool
        B, T, _ = x.shape
        s = self.s
        q = self.q_proj(x).view(B, T, s.num_attention_heads, s.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, s.num_key_value_heads, s.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, s.num_key_value_heads, s.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if cache is not None:
            k, v = cache.append(k, v)
        rep = s.num_attention_heads // s.num_key_value_heads
        if rep > 1:
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, -1))


def _rotate(x, cos, sin):
    """Rotary position embedding (Su et al. 2021, "RoFormer", eq. 34) in the half-split layout Llama uses."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class MLP(nn.Module):
    """SwiGLU feed-forward (Shazeer 2020, eq. 6): down(silu(gate(x)) · up(x))."""

    def __init__(self, s: HeadShape):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.up_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.down_proj = nn.Linear(s.intermediate_size, s.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class HeadLayer(nn.Module):
    """One Llama decoder layer without its input norm (EAGLE's layer 0)."""

    def __init__(self, s: HeadShape):
        super().__init__()
        self.self_attn = Attention(s)
        self.mlp = MLP(s)
        self.post_attention_layernorm = RMSNorm(s.hidden_size, s.rms_norm_eps)

    def forward(self, x, cos, sin, allowed, cache):
        x = x + self.self_attn(x, cos, sin, allowed, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class EagleHead(nn.Module):
    """The EAGLE-1/2 head (module docstring). Parameter names follow the release layout."""

    def __init__(self, shape: HeadShape, config: dict, with_embeddings: bool = False):
        super().__init__()
        self.shape, self.config = shape, dict(config)
        h = shape.hidden_size
        self.fc = nn.Linear(2 * h, h, bias=shape.bias)
        self.layers = nn.ModuleList([HeadLayer(shape)])
        self.embed_tokens = nn.Embedding(shape.vocab_size, h) if with_embeddings else None
        self.rotary = _rotary(config)

    def forward(self, feats, emb, positions, allowed, cache: HeadCache | None = None):
        """g for each input: ``feats`` f_i and ``emb`` e(t_{i+1}) [B, T, h] at head ``positions`` [B, T];
        ``allowed`` [B, 1, T, len(cache) + T] says which keys each query sees. Appends to ``cache``."""
        x = self.fc(torch.cat([emb, feats], dim=-1))
        cos, sin = self.rotary(x, positions)
        return self.layers[0](x, cos.to(x.dtype), sin.to(x.dtype), allowed, cache)


def _rotary(config: dict):
    """transformers' Llama rotary embedding for the head's config (any rope scaling it names)."""
    from transformers import LlamaConfig  # heavy: transformers
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding  # heavy: transformers

    keep = {k: v for k, v in config.items() if k not in ("architectures", "model_type", "torch_dtype", "dtype")}
    return LlamaRotaryEmbedding(LlamaConfig(**keep))


def causal_allowed(T: int, cached: int, device=None) -> torch.Tensor:
    """[1, 1, T, cached + T] bool: query t sees every cached key and the new keys up to itself."""
    allowed = torch.ones(T, cached + T, dtype=torch.bool, device=device)
    allowed[:, cached:] = torch.tril(torch.ones(T, T, dtype=torch.bool, device=device))
    return allowed[None, None]


# ---------------------------------------------------------------- layout: read, check, write
def head_config(target_config, intermediate_size: int | None = None) -> dict:
    """A release ``config.json`` for a new head on a target: the target's Llama sizes with one layer and ``bias``."""
    t = target_config.to_dict() if hasattr(target_config, "to_dict") else dict(target_config)
    for key in ("hidden_size", "num_attention_heads", "num_key_value_heads", "vocab_size", "intermediate_size"):
        if getattr(target_config, key, None) is not None:       # attribute maps (n_embd, n_head, …)
            t[key] = getattr(target_config, key)
    heads = int(t["num_attention_heads"])
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 1, "bias": True,
           "hidden_size": int(t["hidden_size"]), "num_attention_heads": heads,
           "num_key_value_heads": int(t.get("num_key_value_heads") or heads),
           "head_dim": int(t.get("head_dim") or int(t["hidden_size"]) // heads),
           "intermediate_size": int(intermediate_size or t.get("intermediate_size") or 4 * int(t["hidden_size"])),
           "rms_norm_eps": float(t.get("rms_norm_eps", 1e-6)), "vocab_size": int(t["vocab_size"]),
           "max_position_embeddings": int(t.get("max_position_embeddings", 2048)), "attention_bias": False,
           "hidden_act": "silu"}
    for key in ("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor"):
        if t.get(key) is not None:
            cfg[key] = t[key]
    return cfg


def read_state(folder: Path) -> dict:
    """The weights of a head folder (safetensors preferred; ``.bin`` read with ``weights_only=True``)."""
    if (folder / "model.safetensors").exists():
        from safetensors.torch import load_file  # heavy: safetensors

        try:
            return load_file(str(folder / "model.safetensors"))
        except Exception as e:  # noqa: BLE001 - a truncated or foreign file: one line
            raise SpecsweepError(f"{folder}/model.safetensors cannot be read ({str(e)[:120]})") from None
    try:
        return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - a pickle with code objects or a broken file: one line
        raise SpecsweepError(f"{folder}/pytorch_model.bin cannot be read as plain tensors (weights_only=True): "
                             f"{str(e).splitlines()[0][:120]}") from None


def layout_of(state: dict, hidden: int | None) -> str:
    """``eagle`` (EAGLE-1/2), ``eagle3`` or ``unknown``, from the weight names and fc's shape."""
    fc = state.get("fc.weight")
    if "d2t" in state or "t2d" in state or any(k.startswith("midlayer.") for k in state) or (
            fc is not None and hidden and fc.shape[1] == 3 * hidden):
        return "eagle3"
    if fc is not None and any(k.startswith("layers.0.self_attn.") for k in state):
        return "eagle"
    return "unknown"


def load_head(folder, target) -> tuple[EagleHead, list[int] | None]:
    """The head in ``folder`` checked against ``target``; returns it (in the target's dtype and device) and the
    drafting vocabulary subset (None = full). Every refusal is one line naming what is wrong."""
    folder = Path(folder)
    config = check_head(folder, target.config.to_dict() if hasattr(target, "config") else None)   # files, shapes
    weights = next(folder / f for f in WEIGHT_FILES if (folder / f).exists())
    try:
        shape = HeadShape.from_config(config)
    except (ValueError, KeyError, TypeError) as e:
        raise SpecsweepError(f"{folder}/config.json is not a Llama head config ({type(e).__name__}: {e})") from None
    state = read_state(folder)
    layout = layout_of(state, shape.hidden_size)
    if layout == "eagle3":
        raise SpecsweepError(f"{folder} is an EAGLE-3 head (fused low/mid/high features, fc 3h -> h, d2t/t2d maps) "
                             f"whose config.json does not say so: name it eagle3:{folder}")
    if layout != "eagle":
        raise SpecsweepError(f"{folder} is in neither EAGLE layout: EAGLE-1/2 needs fc.weight [h, 2h] and layers.0.* "
                             f"(found {', '.join(sorted(state)[:4]) or 'no tensors'})")
    base, lm = target_parts(target)
    t_hidden = lm.weight.shape[1]
    t_vocab = lm.weight.shape[0]
    if shape.hidden_size != t_hidden or tuple(state["fc.weight"].shape) != (t_hidden, 2 * t_hidden):
        raise SpecsweepError(f"eagle head {folder} has hidden size {shape.hidden_size} (fc {tuple(state['fc.weight'].shape)}) "
                             f"but the target's is {t_hidden}: the head was trained for another target")
    emb = state.get("embed_tokens.weight")
    head_vocab = emb.shape[0] if emb is not None else shape.vocab_size
    if head_vocab and head_vocab != t_vocab:
        raise SpecsweepError(f"eagle head {folder} has a vocabulary of {head_vocab} tokens but the target's is {t_vocab}: "
                             "the head was trained for another tokenizer")
    shape.vocab_size = t_vocab
    head = EagleHead(shape, config, with_embeddings=emb is not None)
    state = {k: v for k, v in state.items() if not k.startswith("layers.0.input_layernorm")}
    try:
        missing, unexpected = head.load_state_dict(state, strict=False)
    except RuntimeError as e:       # a tensor of another shape (a .bin head: its shapes are read only here)
        detail = next((ln.strip() for ln in str(e).splitlines() if "size mismatch" in ln), str(e).splitlines()[0])
        raise SpecsweepError(f"eagle head {weights} does not fit its config.json: {detail[:200]}") from None
    missing = [k for k in missing if not k.startswith("rotary.")]
    if missing or unexpected:
        raise SpecsweepError(f"eagle head {folder} does not match the EAGLE-1/2 layout: "
                             f"missing {missing[:3]}, unexpected {unexpected[:3]}")
    dtype = lm.weight.dtype if lm.weight.dtype.is_floating_point else torch.float32
    head.to(device=lm.weight.device, dtype=dtype).eval()
    kept = None
    if (folder / DRAFT_VOCAB).exists():
        kept = read_kept_ids(folder / DRAFT_VOCAB, t_vocab)
    return head, kept


def target_parts(target):
    """(base model, LM head) of a target the head can read features from; one line otherwise."""
    base = getattr(target, "base_model", None)
    lm = target.get_output_embeddings() if hasattr(target, "get_output_embeddings") else None
    if base is None or base is target or lm is None or not hasattr(lm, "weight"):
        raise SpecsweepError(f"the eagle drafter reads the target's final hidden states from a transformers causal LM "
                             f"with a base model and an LM head (Llama family); {type(target).__name__} has none")
    return base, lm


def save_head(head: EagleHead, folder, kept: list[int] | None = None, extra: dict | None = None) -> Path:
    """Write ``head`` in the release layout (fp16 ``model.safetensors`` + ``config.json``; ``draft_vocab.json`` when
    drafting over a subset), replacing the folder atomically."""
    from safetensors.torch import save_file  # heavy: safetensors

    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in head.state_dict().items()
             if not k.startswith("rotary.")}
    save_file(state, str(tmp / "model.safetensors"))
    (tmp / "config.json").write_text(json.dumps({**head.config, "torch_dtype": "float16"}, indent=1))
    if kept is not None:
        (tmp / DRAFT_VOCAB).write_text(json.dumps({"kept_ids": [int(t) for t in kept]}))
    for name, text in (extra or {}).items():
        (tmp / name).write_text(text)
    if folder.exists():
        shutil.rmtree(folder)
    tmp.replace(folder)
    return folder


def init_head(target, intermediate_size: int | None = None, seed: int = 0) -> EagleHead:
    """A new head for ``target`` (random layer; fc initialised so g ≈ f at the start, which speeds training)."""
    _, lm = target_parts(target)
    cfg = head_config(target.config, intermediate_size)
    torch.manual_seed(seed)
    head = EagleHead(HeadShape.from_config(cfg), cfg)
    h = cfg["hidden_size"]
    with torch.no_grad():
        head.fc.weight.mul_(0.5 / math.sqrt(2))
        head.fc.weight[:, h:] += torch.eye(h)          # pass f through: the residual stream starts at f_i
        head.fc.bias.zero_()
        for lin in (head.layers[0].self_attn.o_proj, head.layers[0].mlp.down_proj):
            lin.weight.mul_(0.1)
    return head.to(lm.weight.device)
