"""``fixed`` — SpecDecode (Leviathan et al. 2023): draft the initial γ every step."""
from __future__ import annotations

from policies.base import Policy


class Fixed(Policy):
    name = "fixed"

    def __init__(self, gamma: int):
        self.gamma = gamma

    def max_draft(self) -> int:
        return self.gamma

    def params(self) -> dict:
        return {}


class TargetOnly(Policy):
    """``ar`` — the target alone, one token per forward: the baseline every speedup divides by."""

    name = "ar"
    needs_draft = False
    may_ask_zero = True

    def __init__(self, gamma: int = 0):
        self.gamma = 0

    def max_draft(self) -> int:
        return 0
