"""An EAGLE head folder (``actors/eagle_head.py``'s release layout) checked without loading a weight.

Rule: the head's ``config.json`` passes the shared size check (``actors/model_files.py``: integer sizes, heads
dividing the hidden size); each tensor the safetensors header lists under a release-layout name has the shape the
config implies (``fc`` [h, 2h], ``q_proj`` [heads·head_dim, h], …); the hidden size and vocabulary match the
target's config; ``draft_vocab.json``, when present, lists token ids inside the target's vocabulary. ``specsweep
plan``, the sweep's preflight and :func:`actors.eagle_head.load_head` run it, so a head the sweep would refuse is
refused before Ray, MLflow or any weight.
"""
from __future__ import annotations

from pathlib import Path

from actors.model_files import check_model_config, read_json, read_kept_ids, safetensors_shapes
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

