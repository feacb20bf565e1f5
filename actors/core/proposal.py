"""A chain draft and how one is built: the proposal record, one row's chain through the drafter seam, and the
rule that records a draft token and asks the policy whether to go on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from policies.base import DISCARD, MORE, STOP


@dataclass
class Proposal:
    """A sequence draft: the tokens to verify and the draft's numbers at each of them (lists of length k)."""

    tokens: list[int] = field(default_factory=list)        # x_1 … x_k, to verify
    q_rows: list = field(default_factory=list)             # q at each position, [vocab] tensors (None = point mass / greedy)
    q_tokens: list[float] = field(default_factory=list)    # q(x_i)
    q_max: list[float] = field(default_factory=list)       # max q at each position
    entropy: list[float] = field(default_factory=list)     # H(q) in nats at each position
    proposed: int = 0                                      # proposals made, a discarded one included


def propose_chain(drafter, tokens: Sequence[int], k_max: int, ask: Callable,
                  sampled: bool = False) -> Proposal:
    """One row's chain through the seam: at most ``k_max`` drafts after ``tokens``, asking ``ask`` after each
    (what a step does for a batch of one; traces record rollouts with it, ``actors/rollouts.py``)."""
    prop = Proposal()
    if k_max <= 0:
        return prop
    drafter.begin([tokens], [k_max])
    while True:
        pick = drafter.next([0])[0]
        if pick is None or not record_proposal(ask, prop, pick[0], pick[1], pick[2], pick[4], k_max,
                                               drafter.stop_ids, sampled=sampled, entropy=pick[3]):
            return prop


def record_proposal(ask, prop: Proposal, token: int, q_tok: float, q_max: float, q_row, k_max: int, stop_ids,
                    sampled: bool = False, entropy: float = 0.0) -> bool:
    """Record proposal i and ask the policy; True = keep drafting.

    A DISCARD is honoured only for deterministic proposals (greedy or n-gram). A
    *sampled* draft token cannot be dropped because of its own probability: the
    emitted distribution at that position would then depend on q(x_i) and stop being
    p (rejection sampling sums over every x_i). Under sampling it is verified (STOP).
    """
    prop.proposed += 1
    verdict = ask(prop.proposed, token, q_tok, q_max, entropy)
    if verdict == DISCARD and sampled:
        verdict = STOP
    if verdict == DISCARD:
        return False
    prop.tokens.append(token)
    prop.q_rows.append(q_row)
    prop.q_tokens.append(q_tok)
    prop.q_max.append(q_max)
    prop.entropy.append(entropy)
    if verdict == STOP or len(prop.tokens) >= k_max or token in stop_ids:
        return False
    if verdict != MORE:
        raise ValueError(f"policy answered {verdict!r} after a draft; expected more, stop or discard")
    return True
