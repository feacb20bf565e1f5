"""The ``model`` kind: an independent causal LM that shares the target's tokenizer (``actors/drafting/drafters.py``'s
:class:`~actors.drafting.drafters.ModelDrafter`). Any draft name no other kind claims is one (a hub id, a folder, an alias).

Loading: its own :class:`~actors.loading.models.ModelSpec` beside the target, its tokenizer checked against the target's.
Files: a local folder by ``actors/loading/model_files.py``'s rules. Memory plan: a plain decoder on GPU 0. Rollouts: the module
docstring of :func:`compute_rollouts`, the draft's own runner fed one token per forward.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from actors.drafter_kinds.kind import DrafterKind, Serving
from actors.loading.model_files import check_model_folder
from actors.tracing.traces import Rollout

NAME = "model"
ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _load(cfg, target, draft_model):
    from actors.drafting.drafters import ModelDrafter  # heavy: torch

    return ModelDrafter(draft_model)


def _check_files(draft: str, target_config: dict | None, tokenizer: bool = True) -> None:
    """A local draft folder's files (config sizes, weights headers, tokenizer files unless ``tokenizer`` is False)."""
    from actors.loading.models import local_folder  # heavy: torch

    folder = local_folder(draft)
    if folder is not None:
        check_model_folder(folder, f"model {draft}", tokenizer)


def compute_rollouts(drafter, target, prompt_ids: Sequence[int], reference: Sequence[int], *, max_new_tokens: int,
                     max_draft: int | None, eos_ids: Iterable[int] = ()) -> tuple[list[Rollout], dict]:
    """Rollouts at every reference position, computed incrementally on the drafter's own runner (``target`` unused).

    Exactly the way the live drafter computes proposals: the prompt fed in one forward, then one token per
    forward on the draft's KV cache. When the first proposal at j equals y_j, the rollout at j + 1 is the
    rollout at j without its first token plus one new proposal (the same forwards on the same cache); only
    positions whose first proposal is wrong start afresh (``actors/rollouts.py``'s docstring). The drafter's
    runner is reset and used here; the engine resets it again at its next generation. Returns the rollouts and
    counters (draft forwards run, fresh rollouts started).
    """
    import torch  # heavy: torch

    with torch.no_grad():
        return _rollouts(drafter, prompt_ids, reference, max_new_tokens, max_draft, eos_ids)


def _rollouts(drafter, prompt_ids, reference, max_new_tokens, max_draft, eos_ids) -> tuple[list[Rollout], dict]:
    from actors.drafting.drafters import pick_draft_token  # heavy: torch

    eos = frozenset(int(t) for t in eos_ids)
    drafter.reset(1)                 # the chain runner live chains draft with (a tree task may have left the eager one)
    runner = drafter.runner
    P, N = len(prompt_ids), len(reference)
    ref = [int(t) for t in reference]

    def cap(j: int) -> int:
        left = max_new_tokens - j - 1
        return left if max_draft is None else min(max_draft, left)

    def done(r: Rollout, j: int) -> bool:
        return len(r) >= cap(j) or (len(r) > 0 and r.tokens[-1] in eos)

    forwards = fresh = 0
    runner.reset()

    def step(ids: list[int]) -> tuple:
        nonlocal forwards
        forwards += 1
        return pick_draft_token(runner.forward(ids, last_only=True)[-1], None, None)[:4]

    # Invariant while at position j: the cache holds prompt + y_<j + cur.tokens[:fed], and
    # cur.tokens[fed] is the draft's pick after exactly that (so len(cur) == fed + 1).
    cur = Rollout()
    cur.add(*step(list(prompt_ids)))
    fed = 0
    out: list[Rollout] = []
    for j in range(N):
        c = cap(j)
        while not done(cur, j):                          # extend to the cap or an EOS proposal
            cur.add(*step([cur.tokens[fed]]))
            fed += 1
        out.append(cur if len(cur) <= max(c, 0) else
                   Rollout(cur.tokens[:max(c, 0)], cur.q_tokens[:max(c, 0)], cur.q_max[:max(c, 0)],
                           cur.entropy[:max(c, 0)]))
        if j == N - 1:
            break
        if cur.tokens[0] == ref[j] and fed >= 1:         # prompt + y_<j + x_1 is prompt + y_<=j: share
            cur, fed = cur.tail(), fed - 1
        else:                                            # start afresh from prompt + y_<=j
            runner.rollback(P + j)
            fresh += cur.tokens[0] != ref[j]
            cur, fed = Rollout(), 0
            cur.add(*step([ref[j]]))
    return out, {"method": "incremental", "draft_forwards": forwards, "fresh_rollouts": fresh}


def _serving(draft: str) -> Serving:
    """A shipped draft is loaded from its folder; any other by the name the sweep used."""
    shipped = ASSETS / draft
    return Serving(NAME, {"vllm": "draft_model", "sglang": "STANDALONE", "trtllm": "Draft_Target"},
                   model=str(shipped) if (shipped / "config.json").is_file() else draft)


KIND = DrafterKind(name=NAME, matches=lambda draft: True, load=_load, loads_model=True, check_files=_check_files,
                   record_rollouts=compute_rollouts,
                   draft_module=lambda drafter, draft_model: draft_model,
                   rank_draft=lambda drafter, draft_model, target: draft_model, serving=_serving)
