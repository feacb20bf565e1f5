"""``oracle`` (greedy only) — a reference policy that knows the answer; not a bound.

It knows the target-only greedy continuation of the same prompt (computed before
the timed generation, outside ``wall_time``) and drafts exactly the tokens the
target will accept: after each proposal it keeps drafting while the proposal
equals the reference token at that position and discards the first proposal that
differs, so n = k at every step. Time counted: every draft forward actually run —
including the one that produced the discarded proposal (the draft has to be run
to see its proposal) — plus every verification forward; the reference decode is
not counted. ``cap`` bounds one draft. It drafts k ≥ n* and pays for the discarded proposal, so
some schedules beat it; the least time any schedule reaches is ``actors/tracing/oracle_bound.py``'s bound
(``BOUND_NAME`` / ``BOUND_LABEL`` below name its rows).
"""
from __future__ import annotations

from policies.base import DISCARD, MORE, SequencePolicy

BOUND_NAME, BOUND_LABEL = "oracle-bound", "oracle (bound)"   # the policy and policy_spec of the bound's rows


class Oracle(SequencePolicy):
    """Greedy-only upper bound (ours, no paper): knowing the target's greedy continuation, draft while each proposal
    equals the reference token and discard the first that differs, so every verified draft is accepted."""

    name = "oracle"
    k_min = 0                     # nothing left to draft near the end of the reference
    needs_reference = True

    def __init__(self, gamma: int = 0, cap: int = 64):
        self.cap = cap
        self.gamma = cap

    def max_draft(self) -> int:
        ref = self.ctx.reference or []
        return min(self.cap, max(0, len(ref) - self.ctx.generated - 1))

    def after_draft(self, i, token, q_token, q_max, entropy=0.0) -> str:
        ref = self.ctx.reference or []
        pos = self.ctx.generated + i - 1
        return MORE if pos < len(ref) and ref[pos] == token else DISCARD

    def params(self) -> dict:
        return {"cap": self.cap}
