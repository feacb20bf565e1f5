"""The ``ngram`` kind: model-free prompt lookup (``actors/drafting/drafters.py``'s :class:`~actors.drafting.drafters.NgramDrafter`).

Named ``ngram``. No weights, no files, nothing on the GPU, no draft forward to price (a batch level costs 0), no
ranks, and no replay trace yet.
"""
from __future__ import annotations

from actors.drafter_kinds.kind import DrafterKind, Serving

NAME = "ngram"
LOOKUP_SIZES = (1, 3)        # (n_min, n_max) of NgramDrafter by default: what a serving engine is told


def _load(cfg, target, draft_model):
    """Prompt lookup with the pair's longest n-gram (``PairConfig.ngram_max``)."""
    from actors.drafting.drafters import NgramDrafter  # heavy: torch

    return NgramDrafter(n_max=cfg.ngram_max)


SERVING = Serving(NAME, {"vllm": "ngram", "sglang": "NGRAM", "trtllm": "NGram"}, lookup=LOOKUP_SIZES)

KIND = DrafterKind(name=NAME, matches=lambda draft: draft == NAME, load=_load, has_weights=False, on_gpu=False,
                   serving=lambda draft: SERVING)
