"""KV-cache helpers shared by the target and the drafters."""
from __future__ import annotations


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
