"""Each written config checked against its engine's documented schema, from the text itself (parsed back).

Every check fails with one line (:class:`~policies.errors.SpecsweepError`) naming the field and the rule.

- vLLM ``speculative_config`` (JSON): an object with known keys only, or ``null`` (no speculation); ``method`` one of
  draft_model, ngram, eagle, eagle3, suffix; ``model`` a non-empty string for the model-based methods and absent for
  ngram and suffix; ``num_speculative_tokens`` an integer > 0; ``num_speculative_tokens_per_batch_size`` a list of
  ``[start, end, K]`` integer triples, 1 ≤ start ≤ end, 0 ≤ K ≤ num_speculative_tokens, ascending, disjoint and
  contiguous from 1 (covering 1 … the last end); ``prompt_lookup_min`` ≤ ``prompt_lookup_max``, integers ≥ 1.
- SGLang flags: known flags only, each once with a value; ``--speculative-algorithm`` one of EAGLE, EAGLE3,
  STANDALONE, NGRAM; the draft model path for all but NGRAM (none for NGRAM); steps, top-k and draft tokens integers
  ≥ 1; top-k 1 ⇒ draft tokens = steps + 1; draft tokens − 1 ≤ top-k + (steps − 1)·top-k² (the candidates a tree of
  that many steps and top-k offers); NGRAM takes only the number of draft tokens (≥ 2). No flag line = speculation off.
- TensorRT-LLM ``speculative_config`` (YAML): a mapping with known keys, or null; ``decoding_type`` one of
  Draft_Target, NGram, Eagle3; ``max_draft_len`` an integer > 0; ``speculative_model`` for Draft_Target and Eagle3,
  none for NGram; ``draft_len_schedule`` {batch size ≥ 1: K ≥ 0}, keys ascending, holding batch size 1 with
  K = max_draft_len, no K above max_draft_len; ``max_matching_ngram_size`` an integer > 0 (NGram only).
"""
from __future__ import annotations

import json
import shlex

import yaml

from policies.errors import SpecsweepError

VLLM_KEYS = ("method", "model", "num_speculative_tokens", "num_speculative_tokens_per_batch_size",
             "prompt_lookup_min", "prompt_lookup_max")
VLLM_METHODS = ("draft_model", "ngram", "eagle", "eagle3", "suffix")
SGLANG_ALGORITHMS = ("EAGLE", "EAGLE3", "STANDALONE", "NGRAM")
SGLANG_FLAGS = ("--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
                "--speculative-eagle-topk", "--speculative-num-draft-tokens")
TRT_KEYS = ("decoding_type", "max_draft_len", "speculative_model", "draft_len_schedule", "max_matching_ngram_size")
TRT_TYPES = ("Draft_Target", "NGram", "Eagle3")


def _bad(engine: str, what: str) -> SpecsweepError:
    return SpecsweepError(f"invalid {engine} config: {what}")


def _int(engine: str, name: str, v, least: int) -> int:
    """``v`` when it is an integer (not a bool) ≥ ``least``."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(engine, f"{name} must be an integer, got {v!r}")
    if v < least:
        raise _bad(engine, f"{name} must be >= {least}, got {v}")
    return v


def check_vllm(text: str) -> dict | None:
    """The parsed ``speculative_config`` when ``text`` is valid (None: no speculation)."""
    try:
        cfg = json.loads(text)
    except ValueError as e:
        raise _bad("vLLM", f"not JSON ({e})") from None
    if cfg is None:
        return None
    if not isinstance(cfg, dict):
        raise _bad("vLLM", "speculative_config must be a JSON object or null")
    unknown = sorted(set(cfg) - set(VLLM_KEYS))
    if unknown:
        raise _bad("vLLM", f"unknown field {unknown[0]!r}")
    m = cfg.get("method")
    if m not in VLLM_METHODS:
        raise _bad("vLLM", f"method must be one of {', '.join(VLLM_METHODS)}, got {m!r}")
    if m in ("ngram", "suffix"):
        if "model" in cfg:
            raise _bad("vLLM", f"method {m} takes no model")
    elif not isinstance(cfg.get("model"), str) or not cfg["model"].strip():
        raise _bad("vLLM", f"method {m} needs model (a path or hub id)")
    top = _int("vLLM", "num_speculative_tokens", cfg.get("num_speculative_tokens"), 1)
    sched = cfg.get("num_speculative_tokens_per_batch_size")
    if sched is not None:
        if not isinstance(sched, list) or not sched:
            raise _bad("vLLM", "num_speculative_tokens_per_batch_size must be a non-empty list of [start, end, K]")
        nxt = 1
        for entry in sched:
            if not isinstance(entry, list) or len(entry) != 3:
                raise _bad("vLLM", f"each range must be [start, end, K], got {entry!r}")
            lo, hi, k = (_int("vLLM", f"range {entry} {n}", v, 0) for n, v in zip(("start", "end", "K"), entry))
            if lo != nxt:
                raise _bad("vLLM", f"ranges must be ascending, disjoint and cover every batch size from 1: range "
                                   f"{entry} starts at {lo}, expected {nxt}")
            if hi < lo:
                raise _bad("vLLM", f"range {entry} ends before it starts")
            if k > top:
                raise _bad("vLLM", f"range {entry}: K={k} exceeds num_speculative_tokens={top}")
            nxt = hi + 1
    if ("prompt_lookup_min" in cfg or "prompt_lookup_max" in cfg) and m != "ngram":
        raise _bad("vLLM", "prompt_lookup_min/max belong to method ngram")
    if m == "ngram" and "prompt_lookup_max" in cfg:
        lo = _int("vLLM", "prompt_lookup_min", cfg.get("prompt_lookup_min", 1), 1)
        if lo > _int("vLLM", "prompt_lookup_max", cfg["prompt_lookup_max"], 1):
            raise _bad("vLLM", "prompt_lookup_min exceeds prompt_lookup_max")
    return cfg


def check_sglang(text: str) -> dict | None:
    """The flags of ``text`` (comment lines left out) as {flag: value} when valid; None when none (speculation off)."""
    body = " ".join(ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#"))
    try:
        words = shlex.split(body)
    except ValueError as e:
        raise _bad("SGLang", f"flags do not parse ({e})") from None
    if not words:
        return None
    flags: dict = {}
    for i in range(0, len(words), 2):
        f = words[i]
        if f not in SGLANG_FLAGS:
            raise _bad("SGLang", f"unknown flag {f!r}")
        if f in flags:
            raise _bad("SGLang", f"{f} given twice")
        if i + 1 >= len(words) or words[i + 1].startswith("--"):
            raise _bad("SGLang", f"{f} has no value")
        flags[f] = words[i + 1]
    algo = flags.get("--speculative-algorithm")
    if algo not in SGLANG_ALGORITHMS:
        raise _bad("SGLang", f"--speculative-algorithm must be one of {', '.join(SGLANG_ALGORITHMS)}, got {algo!r}")

    def num(flag: str, least: int = 1) -> int:
        v = flags.get(flag)
        if v is None or not v.isdigit():
            raise _bad("SGLang", f"{flag} must be an integer, got {v!r}")
        return _int("SGLang", flag, int(v), least)

    tokens = num("--speculative-num-draft-tokens", 2 if algo == "NGRAM" else 1)
    if algo == "NGRAM":
        extra = sorted(set(flags) - {"--speculative-algorithm", "--speculative-num-draft-tokens"})
        if extra:
            raise _bad("SGLang", f"NGRAM takes only --speculative-num-draft-tokens, not {extra[0]}")
        return flags
    if not flags.get("--speculative-draft-model-path", "").strip():
        raise _bad("SGLang", f"{algo} needs --speculative-draft-model-path")
    steps, topk = num("--speculative-num-steps"), num("--speculative-eagle-topk")
    if topk == 1 and tokens != steps + 1:
        raise _bad("SGLang", f"with --speculative-eagle-topk 1 the draft tokens must be steps + 1 = {steps + 1}, got "
                             f"{tokens}")
    pool = topk + (steps - 1) * topk * topk
    if tokens - 1 > pool:
        raise _bad("SGLang", f"--speculative-num-draft-tokens {tokens}: a tree of {steps} steps and top-k {topk} "
                             f"offers {pool} candidates, fewer than {tokens - 1}")
    return flags


def check_trtllm(text: str) -> dict | None:
    """The parsed ``speculative_config`` when ``text`` is valid (None: no speculation)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise _bad("TensorRT-LLM", f"not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict) or set(doc) != {"speculative_config"}:
        raise _bad("TensorRT-LLM", "the file must hold one mapping: speculative_config")
    cfg = doc["speculative_config"]
    if cfg is None:
        return None
    if not isinstance(cfg, dict):
        raise _bad("TensorRT-LLM", "speculative_config must be a mapping or null")
    unknown = sorted(set(cfg) - set(TRT_KEYS))
    if unknown:
        raise _bad("TensorRT-LLM", f"unknown field {unknown[0]!r}")
    kind = cfg.get("decoding_type")
    if kind not in TRT_TYPES:
        raise _bad("TensorRT-LLM", f"decoding_type must be one of {', '.join(TRT_TYPES)}, got {kind!r}")
    top = _int("TensorRT-LLM", "max_draft_len", cfg.get("max_draft_len"), 1)
    model = cfg.get("speculative_model")
    if kind == "NGram":
        if model is not None:
            raise _bad("TensorRT-LLM", "NGram takes no speculative_model")
        _int("TensorRT-LLM", "max_matching_ngram_size", cfg.get("max_matching_ngram_size", 2), 1)
    else:
        if not isinstance(model, str) or not model.strip():
            raise _bad("TensorRT-LLM", f"{kind} needs speculative_model (a path or hub id)")
        if "max_matching_ngram_size" in cfg:
            raise _bad("TensorRT-LLM", "max_matching_ngram_size belongs to NGram")
    sched = cfg.get("draft_len_schedule")
    if sched is not None:
        if not isinstance(sched, dict) or not sched:
            raise _bad("TensorRT-LLM", "draft_len_schedule must be a non-empty mapping {batch size: K}")
        keys = [_int("TensorRT-LLM", "draft_len_schedule batch size", b, 1) for b in sched]
        if keys != sorted(keys):
            raise _bad("TensorRT-LLM", "draft_len_schedule batch sizes must be ascending")
        if 1 not in sched:
            raise _bad("TensorRT-LLM", "draft_len_schedule must hold batch size 1")
        for b, k in sched.items():
            if _int("TensorRT-LLM", f"draft_len_schedule[{b}]", k, 0) > top:
                raise _bad("TensorRT-LLM", f"draft_len_schedule[{b}] = {k} exceeds max_draft_len {top}")
        if sched[1] != top:
            raise _bad("TensorRT-LLM", f"draft_len_schedule[1] must equal max_draft_len {top}, got {sched[1]}")
    return cfg


CHECKS = {"vllm": check_vllm, "sglang": check_sglang, "trtllm": check_trtllm}
