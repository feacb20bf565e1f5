"""The ``suffix`` kind: suffix decoding (``actors/suffix_drafter.py``'s :class:`~actors.suffix_drafter.SuffixDrafter`).

Named ``suffix``. Model-free like ``ngram``: no weights, no files, nothing on the GPU, no draft forward to price, no
ranks. Not traced for replay: its global cache of earlier responses makes a generation's drafts depend on the
generations that finished before it on the same drafter, so its rows are live-only (``record_rollouts`` None).
Serving: vLLM's ``suffix`` method (Arctic Inference); SGLang and TensorRT-LLM have none.
"""
from __future__ import annotations

from actors.drafter_kinds.kind import DrafterKind, Serving

NAME = "suffix"


def _load(cfg, target, draft_model):
    """A suffix drafter with an empty global cache and the defaults of ``actors/suffix_drafter.py``."""
    from actors.suffix_drafter import SuffixDrafter  # heavy: torch

    return SuffixDrafter()


SERVING = Serving(NAME, {"vllm": "suffix"},
                  refusals={"sglang": "SGLang has no suffix-decoding method",
                            "trtllm": "TensorRT-LLM has no suffix-decoding method"})

KIND = DrafterKind(name=NAME, matches=lambda draft: draft == NAME, load=_load, has_weights=False, on_gpu=False,
                   serving=lambda draft: SERVING)
