"""The ``eagle`` kind: an EAGLE-1/2 feature head on the target's last hidden state (``actors/drafting/eagle_drafter.py``).

Named ``eagle:PATH`` or by a shipped head's alias (:data:`EAGLE_HEADS`, folders under ``actors/assets/``).
Loading: the head folder against the loaded target (``actors/drafting/eagle_head.py``). Files: the head's config and tensor
shapes against the target's config (``actors/drafting/head_files.py``), which the memory plan runs too. Memory plan: the
head borrows the target's embeddings and LM head, so only its layers and its feature fusion (2·hidden → hidden)
count ("EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty", §3). Rollouts: :func:`eagle_rollouts`. It reads the
target's features (``see_features``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from actors.core.proposal import propose_chain
from actors.drafter_kinds.kind import DrafterKind, Serving
from actors.drafting.head_files import check_head
from actors.tracing.traces import Rollout
from policies.base import MORE
from policies.errors import SpecsweepError

NAME = "eagle"
EAGLE_PREFIX = "eagle:"
ASSETS = Path(__file__).resolve().parents[1] / "assets"
EAGLE_HEADS = {"smollm2-135m-eagle": str(ASSETS / "smollm2-135m-eagle")}


def is_head(draft: str) -> bool:
    """Whether ``draft`` names an EAGLE head: ``eagle:PATH`` or a shipped head's alias."""
    return isinstance(draft, str) and (draft.startswith(EAGLE_PREFIX) or draft in EAGLE_HEADS)


def head_folder(draft: str) -> Path | None:
    """The folder a head name points at, unchecked (None for a name that is not a head's)."""
    if not is_head(draft):
        return None
    return Path(EAGLE_HEADS[draft]) if draft in EAGLE_HEADS else Path(draft[len(EAGLE_PREFIX):].strip()).expanduser()


def eagle_folder(draft: str | None) -> Path | None:
    """The head folder when ``draft`` names an EAGLE head (``eagle:PATH`` or a shipped head's alias), else None;
    one line when it names a head that is not there."""
    if not is_head(draft):
        return None
    if draft in EAGLE_HEADS:
        path = Path(EAGLE_HEADS[draft])
        if not (path / "config.json").exists():
            raise SpecsweepError(f"built-in eagle head {draft!r} is missing from this install ({path}): reinstall specsweep")
        return path
    rest = draft[len(EAGLE_PREFIX):].strip()
    if not rest:
        raise SpecsweepError("draft 'eagle:' names no folder: use eagle:PATH (an EAGLE-1/2 head folder) or one of "
                             + ", ".join(EAGLE_HEADS))
    path = Path(rest).expanduser()
    if not path.is_dir():
        raise SpecsweepError(f"eagle head folder {rest} does not exist (draft {draft!r})")
    return path


def _load(cfg, target, draft_model):
    from actors.drafting.eagle_drafter import EagleDrafter  # heavy: torch

    return EagleDrafter.from_folder(eagle_folder(cfg.draft), target)


def _check_files(draft: str, target_config: dict | None, tokenizer: bool = True) -> None:
    check_head(eagle_folder(draft), target_config)


def _config_file(draft: str) -> tuple[Path, str]:
    head = eagle_folder(draft)
    return head / "config.json", f"EAGLE head {head}"


def _plan_params(params: dict, shape, config: dict) -> int:
    """The embeddings and output head are the target's; the fusion fc (2h → h) is the head's own, in dtype."""
    shared = params["embeddings"] + params["output head"]
    params.update({"embeddings": 0, "output head": 0, "fusion": 2 * shape.hidden * shape.hidden})
    return params["fusion"] - shared


def eagle_rollouts(drafter, target, prompt_ids: Sequence[int], reference: Sequence[int], *, max_new_tokens: int,
                   max_draft: int | None, eos_ids: Iterable[int] = ()) -> tuple[list[Rollout], dict]:
    """Rollouts of an :class:`~actors.drafting.eagle_drafter.EagleDrafter` at every reference position: the target's
    features over prompt + reference from one forward, then at j the live drafter's own chain at one row
    (``actors/drafting/drafters.py::propose_chain``) from prompt + y_<j, asked for more until the cap or an EOS."""
    import torch  # heavy: torch

    with torch.no_grad():
        return _eagle_rollouts(drafter, target, prompt_ids, reference, max_new_tokens, max_draft, eos_ids)


def _eagle_rollouts(drafter, target, prompt_ids, reference, max_new_tokens, max_draft, eos_ids):
    from actors.runtime.runners import target_features  # heavy: torch

    seq = [int(t) for t in prompt_ids] + [int(t) for t in reference]
    P, N = len(prompt_ids), len(reference)
    drafter.reset(1, None, None, frozenset(int(t) for t in eos_ids))
    if len(seq) > 2:
        hidden = target_features(target, seq[:-2], drafter.feature_layers)
        drafter.see_features(0, 0, hidden)       # f_0 … f_{P+N−3}: every prefix the rollouts start from
    out, forwards = [], 0
    for j in range(N):
        left = max_new_tokens - j - 1
        cap = left if max_draft is None else min(max_draft, left)
        r = Rollout()
        if cap > 0:
            prop = propose_chain(drafter, seq[:P + j], cap, lambda *a: MORE)
            forwards += prop.proposed
            for x, q, m, h in zip(prop.tokens, prop.q_tokens, prop.q_max, prop.entropy):
                r.add(x, q, m, h)
        out.append(r)
    return out, {"method": drafter.name, "draft_forwards": forwards, "fresh_rollouts": N}


TRT_EAGLE12 = ("TensorRT-LLM's PyTorch backend varies the draft length (draft_len_schedule) for EAGLE-3 heads only, "
               "and this head has the EAGLE-1/2 layout: use --for vllm or sglang")


def _serving(draft: str) -> Serving:
    """``eagle3`` when the head's config.json names an EAGLE-3 architecture, else ``eagle`` (no TensorRT-LLM path)."""
    folder = head_folder(draft)
    try:
        cfg = json.loads((folder / "config.json").read_text()) if folder else {}
    except (OSError, ValueError):
        cfg = {}
    model = str(folder or draft)
    if "eagle3" in " ".join(map(str, cfg.get("architectures") or [])).lower():
        return Serving("eagle3", {"vllm": "eagle3", "sglang": "EAGLE3", "trtllm": "Eagle3"}, model=model, trees=True)
    return Serving(NAME, {"vllm": "eagle", "sglang": "EAGLE"}, {"trtllm": TRT_EAGLE12}, model=model, trees=True)


KIND = DrafterKind(name=NAME, matches=is_head, load=_load, check_name=eagle_folder, check_files=_check_files,
                   config_file=_config_file, plan_params=_plan_params,
                   plan_check=lambda draft, target_config: check_head(eagle_folder(draft), target_config),
                   record_rollouts=eagle_rollouts, reads_features=True,
                   draft_module=lambda drafter, draft_model: drafter.head,
                   rank_draft=lambda drafter, draft_model, target:
                   lambda seq: drafter.teacher_forced_logits(target, seq), serving=_serving)
