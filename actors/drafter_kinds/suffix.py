"""The ``suffix`` kind: suffix decoding (``actors/drafting/suffix_drafter.py``'s :class:`~actors.drafting.suffix_drafter.SuffixDrafter`).

Named ``suffix``. Model-free like ``ngram``: no weights, no files, nothing on the GPU, no draft forward to price, no
ranks. Traced for replay (:func:`suffix_rollouts`): a proposal is a function of the committed tokens and the global
cache of earlier responses, and a sweep actor holds that cache fixed for the whole of a task (every config of a
request drafts from the responses of the requests before it, ``actors/pair_actor.py``), so the rollouts recorded
along the ``ar`` run are what every live config of the task drafts. Serving: vLLM's ``suffix`` method (Arctic
Inference); SGLang and TensorRT-LLM have none.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from actors.drafter_kinds.kind import DrafterKind, Serving
from actors.tracing.traces import Rollout

NAME = "suffix"


def suffix_rollouts(drafter, target, prompt_ids: Sequence[int], reference: Sequence[int], *, max_new_tokens: int,
                    max_draft: int | None, eos_ids: Iterable[int] = ()) -> tuple[list, dict]:
    """The drafter's chain from prompt + y_<j at every reference position j (``target`` unused), up to the cap a
    live step could ask for there (``max_draft``, and ``max_new_tokens − j − 1``) and cut after an EOS proposal;
    q = max q = 1 and H = 0 (a point mass). A chain is a prefix of any longer-capped chain from the same state, so
    a live step's draft is the rollout's prefix; a rollout shorter than its cap is the drafter's whole proposal
    there (``ends_short``: replay serves nothing after it, as the live drafter does)."""
    eos = frozenset(int(t) for t in eos_ids)
    drafter.reset(1)
    seq, out = [int(t) for t in prompt_ids], []
    for j, y in enumerate(reference):
        left = max_new_tokens - j - 1
        cap = left if max_draft is None else min(max_draft, left)
        tokens = drafter.continuation(0, seq, cap) if cap > 0 else []
        cut = next((i + 1 for i, t in enumerate(tokens) if t in eos), len(tokens))
        out.append(Rollout(tokens[:cut], [1.0] * cut, [1.0] * cut, [0.0] * cut))
        seq.append(int(y))
    return out, {"method": "suffix", "ends_short": True, "cached_responses": len(drafter.responses)}


def _load(cfg, target, draft_model):
    """A suffix drafter with an empty global cache and the defaults of ``actors/drafting/suffix_drafter.py``."""
    from actors.drafting.suffix_drafter import SuffixDrafter  # heavy: torch

    return SuffixDrafter()


SERVING = Serving(NAME, {"vllm": "suffix"},
                  refusals={"sglang": "SGLang has no suffix-decoding method",
                            "trtllm": "TensorRT-LLM has no suffix-decoding method"})

KIND = DrafterKind(name=NAME, matches=lambda draft: draft == NAME, load=_load, has_weights=False, on_gpu=False,
                   record_rollouts=suffix_rollouts, serving=lambda draft: SERVING)
