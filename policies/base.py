"""The one interface every speculation policy implements.

A policy sees numbers only — never a model, a tensor or Ray. Per speculative step:

1. ``max_draft()`` — how many tokens at most to draft now (``k_max >= 0``; 0 means a
   plain target step). The engine may lower it (e.g. near ``max_new_tokens``).
2. ``after_draft(i, token, q_token, q_max, entropy)`` — called after the draft proposed
   its i-th token (1-based) with draft probability ``q_token`` (``q_max`` = the draft's
   largest probability at that position, ``entropy`` = H(q) in nats of the draft
   distribution there; 0 for a point-mass drafter such as n-gram). Returns :data:`MORE` to keep drafting,
   :data:`STOP` to stop and verify the i tokens, or :data:`DISCARD` to stop and verify
   only the first i - 1 (the GT rule: the token that fails the test is not verified).
3. ``update(outcome)`` — the step's :class:`StepOutcome`.

``reset(ctx)`` starts each generation; :class:`GenerationContext` carries what some
policies need (the actor's cost curve for ``gt``/``goodput``, the target-only output
for ``oracle``). A policy's ``params()`` are logged with every run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

MORE, STOP, DISCARD = "more", "stop", "discard"


@dataclass
class StepOutcome:
    """What happened in one speculative step."""

    drafted: int                    # k: tokens sent to verification
    accepted: int                   # n: drafted tokens the target accepted (0 <= n <= k)
    q_tokens: Sequence[float]       # draft probability of each verified token
    draft_time: float               # seconds spent drafting (discarded proposals included)
    verify_time: float              # seconds of the target forward and acceptance
    emitted: int = 0                # tokens appended this step (n + 1 unless EOS/max cut it)
    max_draft: int = 0              # the k_max the policy asked for
    q_max: Sequence[float] = ()     # the draft's top probability at each verified position
    entropy: Sequence[float] = ()   # H(q) in nats at each verified position


@dataclass
class GenerationContext:
    """Per-generation facts a policy may use."""

    costs: object | None = None             # actors.calibrate.CostCurve, when the actor measured one
    reference: Sequence[int] | None = None  # target-only continuation (oracle)
    greedy: bool = True
    generated: int = 0                      # tokens emitted so far in this generation (kept current by the engine)
    extras: dict = field(default_factory=dict)


class Policy:
    """Base class; subclasses override what they need."""

    name = "policy"
    needs_draft = True      # False only for ``ar``
    may_ask_zero = False    # True for policies allowed to return k_max = 0 (ar, oracle, gt)
    needs_costs = False     # True when the policy reads the actor's cost curve
    needs_reference = False # True when the policy reads the target-only output (oracle)

    def reset(self, ctx: GenerationContext) -> None:
        self.ctx = ctx

    def max_draft(self) -> int:
        raise NotImplementedError

    def after_draft(self, i: int, token: int, q_token: float, q_max: float, entropy: float = 0.0) -> str:
        return MORE

    def update(self, outcome: StepOutcome) -> None:
        pass

    def params(self) -> dict:
        return {}

    def __repr__(self) -> str:
        p = ",".join(f"{k}={v}" for k, v in self.params().items())
        return f"{self.name}:{p}" if p else self.name
