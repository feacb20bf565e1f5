"""EAGLE-3 heads: the network and the release layout (Li et al. 2025, "EAGLE-3: Scaling up Inference Acceleration of
Large Language Models via Training-Time Test").

Rule (§3.2, Figure 5 of the paper). The target's hidden states at three of its layers — low, middle and high,
``a = aux_layers(config)`` (``actors/drafting/head_files.py``; default target layers 2, N//2 and N − 3) — are concatenated
into one feature F_i = [l_i; m_i; h_i] (width 3·H_t) and fused by ``fc`` (3·H_t → H, no bias). Head position i
reads that fused feature g = fc(F_i) and the embedding e of token t_{i+1} and runs one decoder layer whose
attention sees both:

    r = g                     x = [input_layernorm(e); hidden_norm(g)]          (2·H wide)
    y = r + o_proj(Attn(q, k, v from x))                                         (q/k/v_proj: 2·H → heads)
    o_i = y + MLP(post_attention_layernorm(y))                                   (SwiGLU)
    q(t_{i+2}) = softmax(lm_head(norm(o_i)))  over the draft vocabulary           (lm_head [draft_vocab, H])

With ``norm_before_residual`` (a config flag some trainers set) the residual r is hidden_norm(g) instead of g.
Training-time test (§3.3): a further draft step feeds the head's own output o_i — its hidden state before ``norm``
and ``lm_head`` — in place of the fused feature (no ``fc``: o_i is already H wide), exactly what the head saw during
training. The draft vocabulary maps to the target's (§4, "draft vocabulary"): draft id d is target id
d + d2t[d]; ``t2d`` [vocab] marks the target ids that have a draft id. The drafter scatters the draft distribution
into the target's vocabulary with zero probability elsewhere (``actors/drafting/eagle3_drafter.py``), so acceptance stays the
ordinary rule over the target's vocabulary and the output is exactly the target's.

Release layout (the EAGLE repository's EAGLE-3 heads, read by vLLM's and SGLang's ``llama_eagle3``): a folder with
``config.json`` (a Llama config with one layer, ``draft_vocab_size``, optional ``target_hidden_size``,
``norm_before_residual`` and ``eagle_aux_hidden_state_layer_ids``) and ``model.safetensors`` or a weights-only
``pytorch_model.bin`` holding ``fc.weight``, ``midlayer.{hidden_norm,input_layernorm,post_attention_layernorm}.weight``,
``midlayer.self_attn.{q,k,v,o}_proj.weight``, ``midlayer.mlp.{gate,up,down}_proj.weight``, ``norm.weight``,
``lm_head.weight``, ``d2t``, ``t2d`` and optionally ``embed_tokens.weight`` (else the target's embeddings). Shapes are
checked by ``actors/drafting/head_files.py``'s EAGLE-3 rule before the weights are used.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from actors.drafting.eagle_head import MLP, Attention, HeadShape, RMSNorm, _rotary, head_config, read_state, target_parts
from actors.drafting.head_files import aux_layers, check_eagle3_head, check_eagle3_tensors
from policies.errors import SpecsweepError

ARCHITECTURE = "LlamaForCausalLMEagle3"


class Eagle3Layer(nn.Module):
    """The head's one decoder layer (module docstring): attention over [normed embedding; normed feature], 2·H wide."""

    def __init__(self, s: HeadShape, norm_before_residual: bool = False):
        super().__init__()
        h = s.hidden_size
        self.norm_before_residual = norm_before_residual
        self.hidden_norm = RMSNorm(h, s.rms_norm_eps)
        self.input_layernorm = RMSNorm(h, s.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(h, s.rms_norm_eps)
        self.self_attn = Attention(replace(s, hidden_size=2 * h))
        self.self_attn.o_proj = nn.Linear(s.num_attention_heads * s.head_dim, h, bias=s.attention_bias)
        self.mlp = MLP(s)

    def forward(self, emb, g, cos, sin, allowed, cache):
        normed = self.hidden_norm(g)
        residual = normed if self.norm_before_residual else g
        x = torch.cat([self.input_layernorm(emb), normed], dim=-1)
        y = residual + self.self_attn(x, cos, sin, allowed, cache)
        return y + self.mlp(self.post_attention_layernorm(y))


class Eagle3Head(nn.Module):
    """The EAGLE-3 head (module docstring); parameter names follow the release layout. ``layers``: the target's
    auxiliary layer ids (``feature_layers`` of the runners: ``output_hidden_states`` indices)."""

    def __init__(self, shape: HeadShape, config: dict, target_hidden: int, draft_vocab: int, layers: tuple[int, ...],
                 with_embeddings: bool = False):
        super().__init__()
        self.shape, self.config, self.layers = shape, dict(config), tuple(layers)
        h = shape.hidden_size
        self.fused_width = len(layers) * target_hidden
        if self.fused_width == h:
            raise SpecsweepError(f"an EAGLE-3 head whose hidden size {h} equals its fused feature width "
                                 f"{len(layers)}·{target_hidden} cannot tell a target feature from its own output")
        self.fc = nn.Linear(self.fused_width, h, bias=False)
        self.midlayer = Eagle3Layer(shape, bool(config.get("norm_before_residual", False)))
        self.norm = RMSNorm(h, shape.rms_norm_eps)
        self.lm_head = nn.Linear(h, draft_vocab, bias=False)
        self.embed_tokens = nn.Embedding(shape.vocab_size, h) if with_embeddings else None
        self.register_buffer("d2t", torch.zeros(draft_vocab, dtype=torch.long))
        self.register_buffer("t2d", torch.zeros(shape.vocab_size, dtype=torch.bool))
        self.rotary = _rotary(config)

    def forward(self, feats, emb, positions, allowed, cache=None):
        """o for each input: ``feats`` [B, T, 3·H_t] target features (fused by ``fc``) or [B, T, H] the head's own
        earlier outputs (fed as they are), ``emb`` e(t_{i+1}) [B, T, H] at head ``positions`` [B, T]; ``allowed``
        [B, 1, T, len(cache) + T]. Appends to ``cache``."""
        g = self.fc(feats) if feats.shape[-1] == self.fused_width else feats
        cos, sin = self.rotary(g, positions)
        return self.midlayer(emb, g, cos.to(g.dtype), sin.to(g.dtype), allowed, cache)

    def target_ids(self) -> torch.Tensor:
        """[draft_vocab] the target id of each draft id: d + d2t[d]."""
        return torch.arange(self.d2t.shape[0], device=self.d2t.device) + self.d2t


def load_eagle3_head(folder, target) -> Eagle3Head:
    """The EAGLE-3 head in ``folder`` checked against ``target`` (``actors/drafting/head_files.py``'s EAGLE-3 rule on the
    safetensors header first, then on the tensors read; a ``.bin`` read with ``weights_only=True``) and the vocabulary
    map (every target id d + d2t[d] inside the target's vocabulary, no two draft ids on one target id, ``t2d``
    agreeing); in the target's dtype and device. Every refusal is one line."""
    folder = Path(folder)
    base, lm = target_parts(target)
    t_cfg = target.config.to_dict()
    config, sizes = check_eagle3_head(folder, t_cfg)
    where = f"eagle3 head {folder}"
    state = read_state(folder)
    check_eagle3_tensors({k: tuple(v.shape) for k, v in state.items() if hasattr(v, "shape")}, sizes, where,
                         bool(config.get("attention_bias", False)))
    if any(not isinstance(v, torch.Tensor) for v in state.values()):
        raise SpecsweepError(f"{where}: the weights file holds something other than tensors")
    t_hidden, t_vocab = lm.weight.shape[1], lm.weight.shape[0]
    if sizes["vocab"] != t_vocab or sizes["target_hidden"] != t_hidden:
        raise SpecsweepError(f"{where}: the target's LM head is [{t_vocab}, {t_hidden}], its config.json says "
                             f"[{sizes['vocab']}, {sizes['target_hidden']}]")
    shape = HeadShape.from_config(config)
    shape.vocab_size = t_vocab
    head = Eagle3Head(shape, config, t_hidden, sizes["draft_vocab"], aux_layers(config, sizes["target_layers"], where),
                      with_embeddings="embed_tokens.weight" in state)
    state = {k: v for k, v in state.items() if not k.endswith("rotary_emb.inv_freq")}
    if "d2t" not in state:                                  # the draft vocabulary is the whole vocabulary
        state["d2t"] = torch.zeros(sizes["draft_vocab"], dtype=torch.long)
    state["d2t"] = state["d2t"].to(torch.long)
    if "t2d" in state:
        state["t2d"] = state["t2d"].to(torch.bool)
    else:
        state["t2d"] = torch.zeros(t_vocab, dtype=torch.bool)
        state["t2d"][_target_ids(state["d2t"], t_vocab, where)] = True
    _check_map(state["d2t"], state["t2d"], t_vocab, where)
    missing, unexpected = head.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith("rotary.")]
    if missing or unexpected:                               # the shape check above makes this unreachable
        raise SpecsweepError(f"{where} does not match the EAGLE-3 layout: missing {missing[:3]}, "
                             f"unexpected {unexpected[:3]}")
    dtype = lm.weight.dtype if lm.weight.dtype.is_floating_point else torch.float32
    return head.to(device=lm.weight.device, dtype=dtype).eval()


def _target_ids(d2t: torch.Tensor, vocab: int, where: str) -> torch.Tensor:
    ids = torch.arange(d2t.shape[0]) + d2t.cpu()
    bad = ((ids < 0) | (ids >= vocab)).nonzero()
    if len(bad):
        d = int(bad[0])
        raise SpecsweepError(f"{where}: d2t maps draft id {d} to target id {int(ids[d])}, outside the target's "
                             f"vocabulary of {vocab} tokens")
    return ids


def _check_map(d2t: torch.Tensor, t2d: torch.Tensor, vocab: int, where: str) -> None:
    """Draft ids map into the vocabulary one-to-one and ``t2d`` marks exactly their target ids (a non-injective map
    would make the scattered draft distribution lose mass: sampling would no longer be the target's)."""
    ids = _target_ids(d2t, vocab, where)
    if len(torch.unique(ids)) != len(ids):
        raise SpecsweepError(f"{where}: d2t maps two draft ids to the same target id; draft id d is target id "
                             "d + d2t[d], one-to-one")
    marked = torch.zeros(vocab, dtype=torch.bool)
    marked[ids] = True
    if not torch.equal(marked, t2d.cpu()):
        raise SpecsweepError(f"{where}: t2d marks {int(t2d.sum())} target ids but d2t maps {len(ids)} draft ids, "
                             "not the same set")


# ---------------------------------------------------------------- a random head in the release layout (tests, docs)
def eagle3_config(target_config, draft_vocab: int | None = None, layers: list[int] | None = None,
                  intermediate_size: int | None = None) -> dict:
    """A release ``config.json`` for a new EAGLE-3 head on a target: the target's Llama sizes, one layer."""
    cfg = head_config(target_config, intermediate_size)
    cfg.pop("bias", None)
    cfg.update({"architectures": [ARCHITECTURE], "draft_vocab_size": int(draft_vocab or cfg["vocab_size"]),
                "target_hidden_size": cfg["hidden_size"], "norm_before_residual": False})
    if layers is not None:
        cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [int(i) for i in layers]}
    return cfg


def random_eagle3_head(target, folder, draft_vocab: int | None = None, layers: list[int] | None = None,
                       seed: int = 0, scale: float = 1.0, bin_file: bool = False) -> Path:
    """Write a random EAGLE-3 head for ``target`` into ``folder`` (release layout, fp32): the draft vocabulary is a
    random ``draft_vocab`` target ids (all when None), ``layers`` the auxiliary layer ids (default: the paper's);
    ``scale`` multiplies ``lm_head`` (peaked drafts). ``bin_file``: ``pytorch_model.bin`` instead of safetensors."""
    _, lm = target_parts(target)
    vocab = lm.weight.shape[0]
    cfg = eagle3_config(target.config, draft_vocab, layers)
    n_layers = int(target.config.num_hidden_layers)
    gen = torch.Generator().manual_seed(seed)
    shape = HeadShape.from_config(cfg)
    ids = aux_layers(cfg, n_layers, "random head")
    torch.manual_seed(seed)
    head = Eagle3Head(shape, cfg, cfg["target_hidden_size"], cfg["draft_vocab_size"], ids)
    kept = torch.sort(torch.randperm(vocab, generator=gen)[:cfg["draft_vocab_size"]]).values
    with torch.no_grad():
        for norm in (head.midlayer.hidden_norm, head.midlayer.input_layernorm, head.midlayer.post_attention_layernorm,
                     head.norm):
            norm.weight.add_(0.1 * torch.randn(norm.weight.shape, generator=gen))
        head.lm_head.weight.mul_(scale)
        head.d2t.copy_(kept - torch.arange(len(kept)))
        head.t2d.zero_()
        head.t2d[kept] = True
    state = {k: v.detach().contiguous() for k, v in head.state_dict().items() if not k.startswith("rotary.")}
    return write_head_folder(folder, cfg, state, bin_file)


def write_head_folder(folder, config: dict, state: dict, bin_file: bool = False) -> Path:
    """``config.json`` and the tensors of ``state`` (``model.safetensors``, or ``pytorch_model.bin`` when
    ``bin_file``) into ``folder``, replacing it."""
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    if bin_file:
        torch.save(state, folder / "pytorch_model.bin")
    else:
        from safetensors.torch import save_file  # heavy: safetensors

        save_file(state, str(folder / "model.safetensors"))
    return folder
