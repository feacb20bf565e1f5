"""What each serving engine can express; its method name for a draft is the draft's kind's answer
(``Serving``, in the kind's module under ``actors/drafter_kinds/``).

- vLLM (``speculative_config``): one chain length K per batch-size range (``num_speculative_tokens_per_batch_size``,
  dynamic speculative decoding), K = 0 switching speculation off; methods ``draft_model``, ``ngram``, ``eagle``,
  ``eagle3`` and ``suffix``. Our ``fixed`` policy at γ = K and ``ar`` (K = 0) map onto it.
- TensorRT-LLM (``speculative_config`` of its LLM API, PyTorch backend): ``draft_len_schedule`` {batch size: K}, a
  value applying up to its key and 0 above the last key; the schedule must hold batch size 1 with K = ``max_draft_len``
  and no K above it. Decoding types ``Draft_Target``, ``NGram``, ``Eagle3``: an EAGLE-1/2 head (the layout of our
  heads) has no dynamic-draft-length path there and is refused.
- SGLang (server flags): one setting for every batch size — ``--speculative-num-steps``, ``--speculative-eagle-topk``
  and ``--speculative-num-draft-tokens`` (the tree's nodes plus its root). A chain of K is steps K, top-k 1, K + 1
  draft tokens; our ``eagle2`` tree (``depth`` levels after the root's children, ``topk``, the best ``n`` of its
  topk + depth · topk² candidates kept) is steps depth + 1, top-k ``topk``, min(n, topk + depth · topk²) + 1 draft
  tokens, and at top-k 1 (a chain of min(n, depth + 1) nodes) steps = those nodes (EAGLE heads only). Algorithms
  ``STANDALONE`` (a draft model), ``NGRAM`` (CUDA only), ``EAGLE`` and ``EAGLE3``.
"""
from __future__ import annotations

from actors.drafter_kinds.kind import Serving
from actors.drafter_kinds.registry import kind_of
from policies.errors import SpecsweepError
from policies.registry import parse, resolve

ENGINES = ("vllm", "sglang", "trtllm")
LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


def serving_of(draft: str | None) -> Serving | None:
    """How the serving engines take ``draft``: its drafter kind's answer (``actors/drafter_kinds/``: method names,
    refusals, what is loaded, lookup sizes, trees); None without a drafter."""
    kind = kind_of(draft)
    return kind.serving(draft) if kind is not None else None


def method(engine: str, serving: Serving | None, pair: str) -> str:
    """The engine's method name for the draft; one line naming what is missing when it has none."""
    if serving is None:
        raise SpecsweepError(f"pair {pair} has no drafter: there is no speculative configuration to recommend")
    name = serving.methods.get(engine)
    if name is None:
        why = serving.refusals.get(engine, f"{LABELS[engine]} has no method for a {serving.label} drafter")
        raise SpecsweepError(f"pair {pair}: {why}")
    return name


def setting(engine: str, trees: bool, policy: str, policy_spec: str, gamma: int) -> dict | None:
    """The engine's setting for one of our configs, or None when the engine cannot express it: ``{"K": k}`` for vLLM
    and TensorRT-LLM; ``{"steps", "topk", "draft_tokens"}`` for SGLang (K = 0 there is {"steps": 0}); ``trees``:
    the draft takes SGLang's tree flags (``Serving.trees``, an EAGLE head)."""
    if policy == "ar":
        return {"K": 0} if engine != "sglang" else {"steps": 0, "topk": 0, "draft_tokens": 0}
    if policy == "fixed":
        k = int(gamma)
        return {"K": k} if engine != "sglang" else {"steps": k, "topk": 1, "draft_tokens": k + 1}
    if policy == "eagle2" and engine == "sglang" and trees:
        _, p = resolve(*parse(policy_spec))
        depth, topk = int(p["depth"]), int(p["topk"])
        nodes = min(int(p["n"]), topk + depth * topk * topk)    # what the tree can hold (module docstring)
        if topk == 1:                                            # a chain: SGLang's steps are its nodes
            return {"steps": nodes, "topk": 1, "draft_tokens": nodes + 1}
        return {"steps": depth + 1, "topk": topk, "draft_tokens": nodes + 1}
    return None


def describe(engine: str, s: dict) -> str:
    """A setting in the engine's words (``K=4``, ``steps 6 · topk 10 · draft tokens 61``, ``off``)."""
    if engine != "sglang":
        return f"K={s['K']}" if s["K"] else "K=0 (off)"
    if not s["steps"]:
        return "off"
    return f"steps {s['steps']} · topk {s['topk']} · draft tokens {s['draft_tokens']}"
