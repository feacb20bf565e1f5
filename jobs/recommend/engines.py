"""What each serving engine can express, and its name for each of our drafter kinds.

- vLLM (``speculative_config``): one chain length K per batch-size range (``num_speculative_tokens_per_batch_size``,
  dynamic speculative decoding), K = 0 switching speculation off; methods ``draft_model``, ``ngram``, ``eagle``,
  ``eagle3`` and ``suffix``. Our ``fixed`` policy at γ = K and ``ar`` (K = 0) map onto it.
- TensorRT-LLM (``speculative_config`` of its LLM API, PyTorch backend): ``draft_len_schedule`` {batch size: K}, a
  value applying up to its key and 0 above the last key; the schedule must hold batch size 1 with K = ``max_draft_len``
  and no K above it. Decoding types ``Draft_Target``, ``NGram``, ``Eagle3``: an EAGLE-1/2 head (the layout of our
  heads) has no dynamic-draft-length path there and is refused.
- SGLang (server flags): one setting for every batch size — ``--speculative-num-steps``, ``--speculative-eagle-topk``
  and ``--speculative-num-draft-tokens`` (the tree's nodes plus its root). A chain of K is steps K, top-k 1, K + 1
  draft tokens; our ``eagle2`` tree (``depth`` levels after the root's children, ``topk``, ``n`` nodes kept) is
  steps depth + 1, top-k ``topk``, n + 1 draft tokens (EAGLE heads only). Algorithms ``STANDALONE`` (a draft model),
  ``NGRAM`` (CUDA only), ``EAGLE`` and ``EAGLE3``.
"""
from __future__ import annotations

import json

from actors.drafter_kinds.eagle import ASSETS, head_folder
from actors.drafter_kinds.registry import kind_name
from policies.errors import SpecsweepError
from policies.registry import parse, resolve

ENGINES = ("vllm", "sglang", "trtllm")
LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
# our drafter kind (actors/drafter_kinds/registry.py, EAGLE heads split by their config.json) → the engine's method name
METHODS = {
    "vllm": {"model": "draft_model", "ngram": "ngram", "eagle": "eagle", "eagle3": "eagle3", "suffix": "suffix"},
    "sglang": {"model": "STANDALONE", "ngram": "NGRAM", "eagle": "EAGLE", "eagle3": "EAGLE3"},
    "trtllm": {"model": "Draft_Target", "ngram": "NGram", "eagle3": "Eagle3"},
}
WHY_NOT = {("trtllm", "eagle"): "TensorRT-LLM's PyTorch backend varies the draft length (draft_len_schedule) for "
                                "EAGLE-3 heads only, and this head has the EAGLE-1/2 layout: use --for vllm or sglang",
           ("sglang", "suffix"): "SGLang has no suffix decoding"}
NGRAM_SIZES = (1, 3)           # our n-gram drafter's (n_min, n_max): actors/drafters.py NgramDrafter defaults


def method_kind(draft: str | None) -> str:
    """``drafter_kind`` with EAGLE heads split: ``eagle3`` when the head's config.json names an EAGLE-3 architecture."""
    kind = kind_name(draft)
    if kind != "eagle":
        return kind
    folder = head_folder(draft)
    try:
        cfg = json.loads((folder / "config.json").read_text()) if folder else {}
    except (OSError, ValueError):
        cfg = {}
    archs = " ".join(map(str, cfg.get("architectures") or [])).lower()
    return "eagle3" if "eagle3" in archs else "eagle"


def method(engine: str, kind: str, pair: str) -> str:
    """The engine's method name for drafter ``kind``; one line naming what is missing when it has none."""
    if kind == "none":
        raise SpecsweepError(f"pair {pair} has no drafter: there is no speculative configuration to recommend")
    name = METHODS[engine].get(kind)
    if name is None:
        why = WHY_NOT.get((engine, kind), f"{LABELS[engine]} has no method for a {kind} drafter")
        raise SpecsweepError(f"pair {pair}: {why}")
    return name


def model_path(draft: str, kind: str) -> str | None:
    """What the engine loads as the draft: the head's or shipped draft's folder, else the name the sweep used; None
    for the n-gram drafter."""
    if kind == "ngram":
        return None
    if kind in ("eagle", "eagle3"):
        return str(head_folder(draft) or draft)
    shipped = ASSETS / draft
    return str(shipped) if (shipped / "config.json").is_file() else draft


def setting(engine: str, kind: str, policy: str, policy_spec: str, gamma: int) -> dict | None:
    """The engine's setting for one of our configs, or None when the engine cannot express it: ``{"K": k}`` for vLLM
    and TensorRT-LLM; ``{"steps", "topk", "draft_tokens"}`` for SGLang (K = 0 there is {"steps": 0})."""
    if policy == "ar":
        return {"K": 0} if engine != "sglang" else {"steps": 0, "topk": 0, "draft_tokens": 0}
    if policy == "fixed":
        k = int(gamma)
        return {"K": k} if engine != "sglang" else {"steps": k, "topk": 1, "draft_tokens": k + 1}
    if policy == "eagle2" and engine == "sglang" and kind in ("eagle", "eagle3"):
        _, p = resolve(*parse(policy_spec))
        return {"steps": int(p["depth"]) + 1, "topk": int(p["topk"]), "draft_tokens": int(p["n"]) + 1}
    return None


def describe(engine: str, s: dict) -> str:
    """A setting in the engine's words (``K=4``, ``steps 6 · topk 10 · draft tokens 61``, ``off``)."""
    if engine != "sglang":
        return f"K={s['K']}" if s["K"] else "K=0 (off)"
    if not s["steps"]:
        return "off"
    return f"steps {s['steps']} · topk {s['topk']} · draft tokens {s['draft_tokens']}"
