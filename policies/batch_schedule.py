"""``batch-schedule``: the draft length as a function of the batch size, in either engine's own form.

Two sources, each with its own semantics (B = rows running in the step):

``draft_len_schedule=4:4/8:2/32:1`` — TensorRT-LLM's ``draft_len_schedule`` ({batch size: draft length}; its
    ``get_draft_len_for_batch_size`` in ``tensorrt_llm/_torch/speculative``): a value applies to every batch
    size up to its key — B ≤ 4 → 4, 5–8 → 2, 9–32 → 1 — and above the last key speculation is off (0). Keys
    >= 1, values >= 0; its config validator makes the smallest key's value the engine's ``max_draft_len``, so
    the schedule alone sets γ (the initial γ is not read).
``num_speculative_tokens_per_batch_size=1-4:4/5-16:2`` (+ ``disable_by_batch_size=N``) — vLLM's
    ``num_speculative_tokens_per_batch_size`` [[start_bs, end_bs, K], …] (inclusive ranges, written
    ``start-end:K``; ``build_dynamic_sd_schedule_lookup`` in ``vllm/v1/spec_decode/dynamic/utils.py``): ranges
    sorted and disjoint, the first starting at 1; a B in a gap or past the last range takes the K of the range
    before it; every K is clamped to ``num_speculative_tokens`` — the initial γ here. vLLM's
    ``disable_by_batch_size``: no speculation once more than N requests run (B > N); 0 = not set.

Exactly one form is given (neither: TensorRT-LLM's form ``3:4/15:3/32:2``, what the old default did). The form
this policy used to take (``schedule=1:4/4:3/16:2``, the γ of the largest listed size ≤ B, with ``off_above``) is
neither engine's rule and is refused (``policies/registry.py``).
"""
from __future__ import annotations

import bisect
from typing import Sequence

from policies.base import BatchPolicy
from policies.errors import SpecsweepError

TRTLLM, VLLM = "draft_len_schedule", "num_speculative_tokens_per_batch_size"
DEFAULT = "3:4/15:3/32:2"
OLD_FORM = (f"batch-schedule: schedule=/off_above= (the γ of the largest listed size ≤ B) follows neither engine; "
            f"give TensorRT-LLM's {TRTLLM}=4:4/8:2/32:1 (a value applies up to its key, 0 above the last) or vLLM's "
            f"{VLLM}=1-4:4/5-32:2 ([start_bs, end_bs, K] ranges) with disable_by_batch_size=N")


def parse_trtllm(text: str) -> dict[int, int] | None:
    """``"4:4/8:2/32:1"`` → {4: 4, 8: 2, 32: 1} (keys >= 1 distinct, values >= 0), or None when malformed."""
    out: dict[int, int] = {}
    try:
        for item in str(text).split("/"):
            b, sep, g = item.partition(":")
            b, g = int(b), int(g)
            if not sep or b < 1 or g < 0 or b in out:
                return None
            out[b] = g
    except ValueError:
        return None
    return dict(sorted(out.items())) or None


def parse_vllm(text: str) -> list[tuple[int, int, int]] | None:
    """``"1-4:4/5-16:2"`` → [(1, 4, 4), (5, 16, 2)]: inclusive ranges, sorted, disjoint, the first from 1, K >= 0
    (vLLM's validation); None when malformed."""
    out = []
    try:
        for item in str(text).split("/"):
            span, sep, k = item.partition(":")
            lo, dash, hi = span.partition("-")
            lo, hi, k = int(lo), int(hi), int(k)
            if not sep or not dash or lo < 1 or hi < lo or k < 0:
                return None
            out.append((lo, hi, k))
    except ValueError:
        return None
    out.sort()
    if not out or out[0][0] != 1 or any(b[0] <= a[1] for a, b in zip(out, out[1:])):
        return None
    return out


class BatchSchedule(BatchPolicy):
    """γ(B) from TensorRT-LLM's ``draft_len_schedule`` or vLLM's ``num_speculative_tokens_per_batch_size`` (module
    docstring)."""

    name = "batch-schedule"

    def __init__(self, gamma: int = 4, draft_len_schedule: str = "", num_speculative_tokens_per_batch_size: str = "",
                 disable_by_batch_size: int = 0):
        if not draft_len_schedule and not num_speculative_tokens_per_batch_size:
            draft_len_schedule = DEFAULT
        if draft_len_schedule and num_speculative_tokens_per_batch_size:
            raise SpecsweepError(f"batch-schedule: give exactly one of {TRTLLM}=4:4/8:2/32:1 (TensorRT-LLM) or "
                                 f"{VLLM}=1-4:4/5-32:2 (vLLM)")
        if draft_len_schedule and disable_by_batch_size:
            raise SpecsweepError(f"batch-schedule: disable_by_batch_size is vLLM's; TensorRT-LLM's {TRTLLM} turns "
                                 "speculation off above its last key")
        self.gamma, self.disable = int(gamma), int(disable_by_batch_size)
        self.trt_text, self.vllm_text = draft_len_schedule, num_speculative_tokens_per_batch_size
        self.trt = parse_trtllm(draft_len_schedule) if draft_len_schedule else None
        self.ranges = parse_vllm(num_speculative_tokens_per_batch_size) if num_speculative_tokens_per_batch_size else None
        if draft_len_schedule and self.trt is None:
            raise SpecsweepError(f"batch-schedule: {TRTLLM}={draft_len_schedule!r} is not like 4:4/8:2/32:1 "
                                 "(batch size >= 1 : draft length >= 0)")
        if num_speculative_tokens_per_batch_size and self.ranges is None:
            raise SpecsweepError(f"batch-schedule: {VLLM}={num_speculative_tokens_per_batch_size!r} is not like "
                                 "1-4:4/5-32:2 (sorted disjoint inclusive ranges from 1, K >= 0)")

    def gamma_for(self, rows: int) -> int:
        """γ at ``rows`` rows by the given engine's rule (module docstring)."""
        if self.trt is not None:                  # TensorRT-LLM: the first key >= B; 0 past the last key
            keys = list(self.trt)
            i = bisect.bisect_left(keys, rows)
            return self.trt[keys[i]] if i < len(keys) else 0
        if self.disable and rows > self.disable:  # vLLM's disable_by_batch_size
            return 0
        k = self.ranges[0][2]
        for lo, _, kk in self.ranges:             # the range holding B, or the last one before it (gaps, tail)
            if lo > rows:
                break
            k = kk
        return min(k, self.gamma)                 # vLLM clamps K to num_speculative_tokens

    def caps(self, caps: Sequence[int]) -> list[int]:
        g = self.gamma_for(len(caps))
        return [min(c, g) for c in caps]

    def params(self) -> dict:
        if self.trt is not None:
            return {TRTLLM: self.trt_text}
        return {VLLM: self.vllm_text, "disable_by_batch_size": self.disable}
