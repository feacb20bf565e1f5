"""An EAGLE head folder (``actors/drafting/eagle_head.py``'s release layout) checked without loading a weight.

Rule: the head's ``config.json`` passes the shared size check (``actors/loading/model_files.py``: integer sizes, heads
dividing the hidden size); each tensor the safetensors header lists under a release-layout name has the shape the
config implies (``fc`` [h, 2h], ``q_proj`` [heads·head_dim, h], …); the hidden size and vocabulary match the
target's config; ``draft_vocab.json``, when present, lists token ids inside the target's vocabulary. ``specsweep
plan``, the sweep's preflight and :func:`actors.drafting.eagle_head.load_head` run it, so a head the sweep would refuse is
refused before Ray, MLflow or any weight.

EAGLE-3 heads (``actors/drafting/eagle3_head.py``) have their own rule, :func:`check_eagle3_head`: the config's sizes as above,
``target_hidden_size`` / ``vocab_size`` equal to the target's, the auxiliary layer ids (:func:`aux_layers`) inside the
target's decoder, and every tensor (:func:`eagle3_expected_shapes`: required keys present, each of the shape the head
config and the target imply) — from the safetensors header before any weight, and again on the tensors of a
weights-only ``.bin`` as it loads (:func:`check_eagle3_tensors`). Each refusal is one line naming the key, its shape
and the expected one.
"""
from __future__ import annotations

from pathlib import Path

from actors.loading.model_files import check_model_config, clip, read_json, read_kept_ids, safetensors_shapes
from policies.errors import SpecsweepError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
DRAFT_VOCAB = "draft_vocab.json"
HEAD_SIZES = ("hidden_size", "intermediate_size", "num_attention_heads")


def head_config(folder: Path) -> tuple[dict, dict[str, int]]:
    """(config.json of a head folder, its checked sizes); one line when the folder is not a head."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SpecsweepError(f"eagle head {folder} is not a folder: give a folder in the EAGLE-1/2 release layout "
                             "(config.json + model.safetensors or pytorch_model.bin)")
    if not (folder / "config.json").exists() or not any((folder / f).exists() for f in WEIGHT_FILES):
        raise SpecsweepError(f"{folder} is not an EAGLE head: it needs config.json and one of "
                             f"{', '.join(WEIGHT_FILES)}")
    config = read_json(folder / "config.json", "eagle head config")
    return config, check_model_config(config, f"eagle head {folder / 'config.json'}", HEAD_SIZES)


def expected_shapes(sizes: dict[str, int], bias: bool = True) -> dict[str, tuple[int, ...]]:
    """Shape of each release-layout tensor of a head with these sizes (``fc.bias`` only when ``bias``)."""
    h, inter, heads = sizes["hidden_size"], sizes["intermediate_size"], sizes["num_attention_heads"]
    kv = sizes.get("num_key_value_heads", heads)
    dim = sizes.get("head_dim", h // heads)
    attn, mlp = "layers.0.self_attn.", "layers.0.mlp."
    out = {"fc.weight": (h, 2 * h), f"{attn}q_proj.weight": (heads * dim, h), f"{attn}k_proj.weight": (kv * dim, h),
           f"{attn}v_proj.weight": (kv * dim, h), f"{attn}o_proj.weight": (h, heads * dim),
           f"{mlp}gate_proj.weight": (inter, h), f"{mlp}up_proj.weight": (inter, h),
           f"{mlp}down_proj.weight": (h, inter),
           "layers.0.post_attention_layernorm.weight": (h,)}
    if bias:
        out["fc.bias"] = (h,)
    return out


def check_shapes(found: dict[str, tuple], expected: dict[str, tuple], where: str) -> None:
    """Refuse the first tensor of ``found`` whose shape differs from ``expected`` (named, both shapes)."""
    for key, shape in found.items():
        want = expected.get(key)
        if want is not None and tuple(shape) != tuple(want):
            raise SpecsweepError(f"{where}: {key} has shape {list(shape)} but the head's config.json implies "
                                 f"{list(want)}; the weights do not belong to this config")


def check_head(folder, target_config: dict | None = None) -> dict:
    """The module's rule for the head in ``folder`` against the target whose parsed config.json is
    ``target_config`` (None: only the head itself); returns the head's config."""
    folder = Path(folder)
    config, sizes = head_config(folder)
    where = f"eagle head {folder}"
    found = safetensors_shapes(folder / "model.safetensors") if (folder / "model.safetensors").exists() else {}
    if found.get("fc.weight") and len(found["fc.weight"]) == 2 and found["fc.weight"][1] == 3 * sizes["hidden_size"]:
        return config                         # an EAGLE-3 head: load_head names the layout
    check_shapes(found, expected_shapes(sizes, bool(config.get("bias", True))), where)
    vocab = sizes.get("vocab_size")
    if "embed_tokens.weight" in found:
        vocab = found["embed_tokens.weight"][0]
    if target_config is not None:
        t = check_model_config(target_config, f"{where}: the target's config.json", ("hidden_size",))
        if sizes["hidden_size"] != t["hidden_size"]:
            raise SpecsweepError(f"{where} has hidden size {sizes['hidden_size']} but the target's is "
                                 f"{t['hidden_size']}: the head was trained for another target")
        if vocab and t.get("vocab_size") and vocab != t["vocab_size"]:
            raise SpecsweepError(f"{where} has a vocabulary of {vocab} tokens but the target's is {t['vocab_size']}: "
                                 "the head was trained for another tokenizer")
        vocab = t.get("vocab_size", vocab)
    if (folder / DRAFT_VOCAB).exists():
        read_kept_ids(folder / DRAFT_VOCAB, vocab or None)
    return config



# ---------------------------------------------------------------- EAGLE-3 (actors/drafting/eagle3_head.py)
EAGLE3_OPTIONAL = ("d2t", "t2d", "embed_tokens.weight")
IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)     # a buffer some .bin files carry; recomputed from the config


def aux_layers(config: dict, target_layers: int, where: str) -> tuple[int, ...]:
    """The target layers an EAGLE-3 head reads: ``eagle_aux_hidden_state_layer_ids`` (top level, as vLLM reads it, or
    under ``eagle_config``), default (2, N // 2, N − 3) for a target of N decoder layers ("EAGLE-3", Li et al. 2025,
    §3.2: low, middle and high features). Id L is the hidden state *entering* decoder layer L — transformers'
    ``output_hidden_states[L]`` (entry 0 the embedding output) — so 0 ≤ L < N; anything else is one line."""
    ids = config.get("eagle_aux_hidden_state_layer_ids")
    if ids is None and isinstance(config.get("eagle_config"), dict):
        ids = config["eagle_config"].get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        ids = [2, target_layers // 2, target_layers - 3]
        if min(ids) < 0 or max(ids) >= target_layers:
            raise SpecsweepError(f"{where}: the default EAGLE-3 layers [2, N//2, N-3] need a target of at least 4 "
                                 f"decoder layers (it has {target_layers}); name eagle_aux_hidden_state_layer_ids")
        return tuple(ids)
    if not isinstance(ids, list) or not ids or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise SpecsweepError(f"{where}: eagle_aux_hidden_state_layer_ids is {clip(ids)}; give a list of target layer "
                             "indices (integers)")
    bad = [i for i in ids if not 0 <= i < target_layers]
    if bad:
        raise SpecsweepError(f"{where}: eagle_aux_hidden_state_layer_ids {ids} names layer {bad[0]}, outside the "
                             f"target's decoder layers 0 … {target_layers - 1}")
    return tuple(ids)


def eagle3_sizes(config: dict, target: dict[str, int], where: str) -> dict[str, int]:
    """An EAGLE-3 head's sizes (its config's, checked) with the target's: ``target_hidden``, ``vocab``, ``draft_vocab``,
    ``layers`` (how many target layers are fused) and ``target_layers``."""
    sizes = check_model_config(config, f"{where}/config.json", HEAD_SIZES)
    t_hidden, t_vocab = target["hidden_size"], target.get("vocab_size")
    own = config.get("target_hidden_size") or t_hidden
    if own != t_hidden:
        raise SpecsweepError(f"{where}: config.json has target_hidden_size {clip(own)} but the target's hidden size "
                             f"is {t_hidden}: the head was trained for another target")
    vocab = sizes.get("vocab_size") or t_vocab
    if t_vocab and vocab != t_vocab:
        raise SpecsweepError(f"{where}: config.json has vocab_size {vocab} but the target's vocabulary is {t_vocab} "
                             "tokens: the head was trained for another tokenizer")
    draft = config.get("draft_vocab_size") or vocab
    if isinstance(draft, bool) or not isinstance(draft, int) or not 1 <= draft <= (vocab or draft):
        raise SpecsweepError(f"{where}: config.json has draft_vocab_size {clip(draft)}; it is an integer between 1 "
                             f"and the vocabulary size {vocab}")
    layers = aux_layers(config, target["num_hidden_layers"], where)
    return {**sizes, "target_hidden": t_hidden, "vocab": vocab, "draft_vocab": draft, "layers": len(layers),
            "target_layers": target["num_hidden_layers"]}


def eagle3_expected_shapes(sizes: dict[str, int], attention_bias: bool = False) -> dict[str, tuple[int, ...]]:
    """Shape of each EAGLE-3 release tensor (``actors/drafting/eagle3_head.py``'s docstring) for these sizes (:func:`eagle3_sizes`):
    ``fc`` [h, layers·h_target] without bias, attention over 2h inputs, ``lm_head`` [draft_vocab, h], ``d2t``
    [draft_vocab], ``t2d`` [vocab], optional ``embed_tokens`` [vocab, h]."""
    h, inter, heads = sizes["hidden_size"], sizes["intermediate_size"], sizes["num_attention_heads"]
    kv = sizes.get("num_key_value_heads", heads)
    dim = sizes.get("head_dim", h // heads)
    attn, mlp = "midlayer.self_attn.", "midlayer.mlp."
    out = {"fc.weight": (h, sizes["layers"] * sizes["target_hidden"]),
           "midlayer.hidden_norm.weight": (h,), "midlayer.input_layernorm.weight": (h,),
           "midlayer.post_attention_layernorm.weight": (h,),
           f"{attn}q_proj.weight": (heads * dim, 2 * h), f"{attn}k_proj.weight": (kv * dim, 2 * h),
           f"{attn}v_proj.weight": (kv * dim, 2 * h), f"{attn}o_proj.weight": (h, heads * dim),
           f"{mlp}gate_proj.weight": (inter, h), f"{mlp}up_proj.weight": (inter, h), f"{mlp}down_proj.weight": (h, inter),
           "norm.weight": (h,), "lm_head.weight": (sizes["draft_vocab"], h),
           "d2t": (sizes["draft_vocab"],), "t2d": (sizes["vocab"],), "embed_tokens.weight": (sizes["vocab"], h)}
    if attention_bias:
        out.update({f"{attn}{p}_proj.bias": (n * dim,) for p, n in (("q", heads), ("k", kv), ("v", kv))})
        out[f"{attn}o_proj.bias"] = (h,)
    return out


def check_eagle3_tensors(found: dict[str, tuple], sizes: dict[str, int], where: str, attention_bias: bool = False) -> None:
    """The EAGLE-3 rule on tensor name → shape: every required key present, none unknown, each of its expected shape
    (the message names the key, its shape and the expected one); ``d2t`` may be left out only when the draft vocabulary
    is the whole vocabulary, ``embed_tokens`` only when the head's hidden size is the target's (it borrows the
    target's embeddings then)."""
    expected = eagle3_expected_shapes(sizes, attention_bias)
    found = {k: tuple(v) for k, v in found.items() if not k.endswith(IGNORED_SUFFIXES)}
    optional = set(EAGLE3_OPTIONAL)
    if sizes["draft_vocab"] != sizes["vocab"]:
        optional.discard("d2t")
    if sizes["hidden_size"] != sizes["target_hidden"]:
        optional.discard("embed_tokens.weight")
    missing = [k for k in expected if k not in found and k not in optional]
    if missing:
        raise SpecsweepError(f"{where}: {missing[0]} is missing (expected shape {list(expected[missing[0]])}); an "
                             "EAGLE-3 head holds fc, midlayer.*, norm, lm_head and d2t")
    unknown = sorted(k for k in found if k not in expected)
    if unknown:
        raise SpecsweepError(f"{where}: {unknown[0]} is not an EAGLE-3 tensor (shape {list(found[unknown[0]])}); "
                             "expected only fc, midlayer.*, norm, lm_head, d2t, t2d and embed_tokens")
    for key, shape in found.items():
        if shape != expected[key]:
            raise SpecsweepError(f"{where}: {key} has shape {list(shape)} but this target and the head's config.json "
                                 f"expect {list(expected[key])}")


def check_eagle3_head(folder, target_config: dict | None) -> tuple[dict, dict[str, int] | None]:
    """:func:`check_eagle3_tensors` on the safetensors header of the EAGLE-3 head in ``folder`` (nothing read beyond
    it; a ``.bin`` is checked as it loads) against the target's parsed config.json; returns (the head's config, its
    sizes — None without a target config, when only the head's own config is checked)."""
    folder = Path(folder)
    config, sizes = head_config(folder)
    where = f"eagle3 head {folder}"
    if target_config is None:
        return config, None
    target = check_model_config(target_config, f"{where}: the target's config.json", ("hidden_size", "num_hidden_layers"))
    sizes = eagle3_sizes(config, target, where)
    if (folder / "model.safetensors").exists():
        check_eagle3_tensors(safetensors_shapes(folder / "model.safetensors"), sizes, where,
                             bool(config.get("attention_bias", False)))
    return config, sizes
