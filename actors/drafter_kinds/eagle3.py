"""The ``eagle3`` kind: an EAGLE-3 head on three of the target's layers (``actors/drafting/eagle3_drafter.py``).

Named ``eagle3:PATH``, a shipped head's alias (:data:`EAGLE3_HEADS`), or ``eagle:PATH`` when the folder's
``config.json`` marks an EAGLE-3 head (:func:`marks_eagle3`: an architecture name containing "eagle3" — the EAGLE
repository's ``LlamaForCausalLMEagle3`` —, a ``draft_vocab_size`` or ``eagle_aux_hidden_state_layer_ids``); this
kind is asked before ``eagle``. Files: the head's config, its auxiliary layers and every tensor's shape against the
target's config (``actors/drafting/head_files.py``'s EAGLE-3 rule), which the memory plan runs too. Memory plan: the
head borrows the target's embeddings; its own parameters beyond a plain one-layer decoder are the fusion ``fc``
(3·hidden → hidden), attention over 2·hidden inputs (q, k, v twice as wide) and ``hidden_norm``; its own LM head is
draft vocabulary · hidden (the config's ``draft_vocab_size``, else its ``vocab_size``: :func:`draft_vocab`)
("EAGLE-3", Li et al. 2025, §3.2). Rollouts: the ``eagle`` kind's (the live drafter's chain at every reference
position), which read the drafter's ``feature_width`` and ``feature_layers``. Serving: vLLM ``eagle3``, SGLang
``EAGLE3``, TensorRT-LLM ``Eagle3``.
"""
from __future__ import annotations

import json
from pathlib import Path

from actors.drafter_kinds import eagle
from actors.drafter_kinds.kind import DrafterKind, Serving
from actors.drafting.head_files import check_eagle3_head
from policies.errors import SpecsweepError

NAME = "eagle3"
EAGLE3_PREFIX = "eagle3:"
EAGLE3_HEADS = {"smollm2-135m-eagle3": str(eagle.ASSETS / "smollm2-135m-eagle3")}


def marks_eagle3(config: dict) -> bool:
    """Whether a head's parsed config.json says EAGLE-3 (module docstring)."""
    if not isinstance(config, dict):
        return False
    archs = " ".join(map(str, config.get("architectures") or [])).lower()
    nested = config.get("eagle_config") if isinstance(config.get("eagle_config"), dict) else {}
    return "eagle3" in archs or "draft_vocab_size" in config or "eagle_aux_hidden_state_layer_ids" in config \
        or "eagle_aux_hidden_state_layer_ids" in nested


def _marked(folder: Path | None) -> bool:
    try:
        return folder is not None and marks_eagle3(json.loads((folder / "config.json").read_text()))
    except (OSError, ValueError):
        return False


def is_eagle3(draft: str) -> bool:
    """``eagle3:PATH``, or ``eagle:PATH`` whose config.json marks an EAGLE-3 head."""
    if not isinstance(draft, str):
        return False
    return draft.startswith(EAGLE3_PREFIX) or draft in EAGLE3_HEADS \
        or (draft.startswith(eagle.EAGLE_PREFIX) and _marked(eagle.head_folder(draft)))


def eagle3_folder(draft: str) -> Path:
    """The head folder a name points at; one line when it is not there."""
    if draft in EAGLE3_HEADS:
        path = Path(EAGLE3_HEADS[draft])
        if not (path / "config.json").exists():
            raise SpecsweepError(f"built-in eagle3 head {draft!r} is missing from this install ({path}): reinstall "
                                 "specsweep")
        return path
    if not draft.startswith(EAGLE3_PREFIX):
        return eagle.eagle_folder(draft)
    rest = draft[len(EAGLE3_PREFIX):].strip()
    if not rest:
        raise SpecsweepError("draft 'eagle3:' names no folder: use eagle3:PATH (an EAGLE-3 head folder)")
    path = Path(rest).expanduser()
    if not path.is_dir():
        raise SpecsweepError(f"eagle3 head folder {rest} does not exist (draft {draft!r})")
    return path


def _load(cfg, target, draft_model):
    from actors.drafting.eagle3_drafter import Eagle3Drafter  # heavy: torch

    return Eagle3Drafter.from_folder(eagle3_folder(cfg.draft), target)


def _check(draft: str, target_config: dict | None, tokenizer: bool = True) -> None:
    check_eagle3_head(eagle3_folder(draft), target_config)


def draft_vocab(config: dict) -> int:
    """The rows of a head's own LM head: its config's ``draft_vocab_size`` when that is a positive integer, else its
    ``vocab_size`` (the target's vocabulary)."""
    n = config.get("draft_vocab_size")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else int(config["vocab_size"])


def _config_file(draft: str) -> tuple[Path, str]:
    head = eagle3_folder(draft)
    return head / "config.json", f"EAGLE-3 head {head}"


def _plan_params(params: dict, shape, config: dict) -> int:
    """Embeddings borrowed from the target; fusion fc (3h → h), the wider attention inputs and an LM head over the
    draft vocabulary (draft_vocab · h, never tied) are the head's own. Returns the parameters beyond the ones
    ``weight_bytes`` counted (it counted embeddings and output head at the full vocabulary)."""
    h, q, kv = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    wider = h * q + 2 * h * kv                       # q, k, v read 2h inputs: one more h·(q + 2·kv)
    head = draft_vocab(config) * h
    params.update({"embeddings": 0, "output head": head, "attention": params["attention"] + wider,
                   "fusion": 3 * h * h, "norms": params["norms"] + h})      # hidden_norm beside a decoder's norms
    return 3 * h * h + wider + h + head - shape.embedding_params()


def head_path(draft: str) -> Path | None:
    """The folder an EAGLE-3 head's name points at, unchecked (a shipped head's alias, ``eagle3:PATH`` or
    ``eagle:PATH``); None for a name that is not a head's."""
    if draft in EAGLE3_HEADS:
        return Path(EAGLE3_HEADS[draft])
    if draft.startswith(EAGLE3_PREFIX):
        return Path(draft[len(EAGLE3_PREFIX):].strip()).expanduser()
    return eagle.head_folder(draft)


def _serving(draft: str) -> Serving:
    folder = head_path(draft)
    if folder is None:
        raise SpecsweepError(f"draft {draft!r} names no EAGLE-3 head folder")
    return Serving(NAME, {"vllm": "eagle3", "sglang": "EAGLE3", "trtllm": "Eagle3"}, model=str(folder), trees=True)


KIND = DrafterKind(name=NAME, matches=is_eagle3, load=_load, check_name=eagle3_folder, check_files=_check,
                   config_file=_config_file, plan_params=_plan_params,
                   plan_check=lambda draft, target_config: check_eagle3_head(eagle3_folder(draft), target_config),
                   record_rollouts=eagle.eagle_rollouts, reads_features=True,
                   draft_module=lambda drafter, draft_model: drafter.head,
                   rank_draft=lambda drafter, draft_model, target:
                   lambda seq: drafter.teacher_forced_logits(target, seq), serving=_serving)
