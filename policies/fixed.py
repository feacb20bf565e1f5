"""``fixed`` — SpecDecode (Leviathan et al. 2023): draft the initial γ every step."""
from __future__ import annotations

from policies.base import SequencePolicy


class Fixed(SequencePolicy):
    """SpecDecode (Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative Decoding"):
    k_max = the initial γ at every step, no early stop."""

    name = "fixed"

    def __init__(self, gamma: int):
        self.gamma = gamma

    def max_draft(self) -> int:
        return self.gamma

    def params(self) -> dict:
        return {}


class TargetOnly(SequencePolicy):
    """``ar`` — the target alone, one token per forward: the baseline every speedup divides by."""

    name = "ar"
    needs_draft = False
    k_min = 0

    def __init__(self, gamma: int = 0):
        self.gamma = 0

    def max_draft(self) -> int:
        return 0
