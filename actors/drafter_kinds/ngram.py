"""The ``ngram`` kind: model-free prompt lookup (``actors/drafters.py``'s :class:`~actors.drafters.NgramDrafter`).

Named ``ngram``. No weights, no files, nothing on the GPU, no draft forward to price (a batch level costs 0), no
ranks, and no replay trace yet.
"""
from __future__ import annotations

from actors.drafter_kinds.kind import DrafterKind
from actors.drafters import NgramDrafter

NAME = "ngram"


def _load(cfg, target, draft_model) -> NgramDrafter:
    """Prompt lookup with the pair's longest n-gram (``PairConfig.ngram_max``)."""
    return NgramDrafter(n_max=cfg.ngram_max)


KIND = DrafterKind(name=NAME, matches=lambda draft: draft == NAME, load=_load, has_weights=False, on_gpu=False)
