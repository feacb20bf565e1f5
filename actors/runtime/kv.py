"""KV-cache helpers shared by the target and the drafters: lengths, crops, kept positions and the additive tree mask."""
from __future__ import annotations

import torch


def new_cache(model):
    """An empty transformers ``DynamicCache`` for ``model`` (built from its config where the version allows)."""
    from transformers import DynamicCache  # heavy: transformers

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers
        return DynamicCache()


def cached_length(cache) -> int:
    """Number of positions held in ``cache`` (0 for None)."""
    return int(cache.get_seq_length()) if cache is not None else 0


def crop_to(cache, length: int) -> None:
    """Keep the first ``length`` positions (rolling back rejected drafts)."""
    extra = cached_length(cache) - length
    if extra > 0:
        cache.crop(-extra)  # negative = tokens to remove, in every transformers version


def tree_mask(prefix: int, parents: list[int], extra_prefix_nodes: dict | None, dtype, device, fed_before: int = 0):
    """Additive 4-D mask [1, 1, n, prefix + fed_before + n] for n new tree nodes.

    ``parents`` index into the list of nodes being fed now (-1 = root); ``extra_prefix_nodes``
    maps a new node to the cache positions (beyond ``prefix``) of its ancestors fed earlier.
    """
    n = len(parents)
    total = prefix + fed_before + n
    allowed = torch.zeros(n, total, dtype=torch.bool)
    allowed[:, :prefix] = True
    for i in range(n):
        for pos in (extra_prefix_nodes or {}).get(i, ()):
            allowed[i, pos] = True
        j = i
        while j >= 0:
            allowed[i, prefix + fed_before + j] = True
            j = parents[j]
    mask = torch.zeros(1, 1, n, total, dtype=dtype)
    mask[0, 0][~allowed] = torch.finfo(dtype).min
    return mask.to(device)


def keep_positions(cache, keep: list[int]) -> None:
    """Keep only cache positions ``keep`` (in that order) in every layer."""
    for layer in cache.layers:
        if getattr(layer, "keys", None) is None or layer.keys is None or layer.keys.numel() == 0:
            continue
        idx = torch.as_tensor(keep, device=layer.keys.device)
        layer.keys = layer.keys.index_select(-2, idx)
        layer.values = layer.values.index_select(-2, idx)
