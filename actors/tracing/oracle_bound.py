"""The oracle bound: the least predicted time any chain policy can reach on one recorded turn.

Over every γ schedule — at each step any cap k ∈ [0, K_j] (K_j = the proposals recorded at
reference position j, at most remaining − 1), with or without one extra proposal that is
drawn and discarded — the bound is the minimum of Σ predicted step times, under the same
cost model and the same step rule replay uses (``actors/tracing/replay.py``: ``CostClock``,
``ReferenceVerifier``). Dynamic programming over (position j, draft-cache lag ℓ):

    T(N, ℓ) = 0
    T(j, ℓ) = min over (k, p) of  s·[draft(p, ℓ·[p > 0], C_j) + verify(k + 1, C_j) + o] + T(j + e, ℓ')

with C_j = |prompt| + j the context, p ∈ {k, k + 1} the draft forwards (k + 1: the last one
discarded), n = the leading matches of the rollout's first k tokens with the reference, e = the
tokens that step emits (n + 1, cut after an EOS), ℓ' = ℓ + e without a draft forward, else
C_j + e − 1 − min(C_j + p − 1, C_j + n) (the draft cache keeps its accepted prefix; the cost
model's catch-up term reads ℓ), and the start state ℓ = |prompt| − 1 (the draft has seen nothing).
Replay predicts every chain policy's time with exactly these terms, so the bound is ≤ each of them
by construction (tests/test_oracle_bound.py checks it against brute-force enumeration through
``replay``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from actors.core.acceptance import accept_greedy
from actors.tracing.replay import check_trace, replay
from actors.tracing.traces import Trace
from actors.core.step import Generation, Row
from policies.base import DISCARD, MORE, SequencePolicy
from policies.costs import CostModel
from policies.oracle import BOUND_LABEL, BOUND_NAME

NAME, LABEL = BOUND_NAME, BOUND_LABEL                 # the policy and policy_spec columns of its rows


class ScheduleExhausted(Exception):
    """A :class:`SchedulePolicy` was asked for a step past the end of its schedule."""


class SchedulePolicy(SequencePolicy):
    """Plays a given schedule of (k, p): cap k drafts, and when p = k + 1 draw one more proposal and discard it."""

    name = "schedule"
    k_min = 0

    def __init__(self, schedule):
        self.schedule, self.i = [tuple(s) for s in schedule], 0

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.i = 0

    def max_draft(self) -> int:
        if self.i >= len(self.schedule):
            raise ScheduleExhausted(f"step {self.i + 1} asked of a {len(self.schedule)}-step schedule")
        return self.schedule[self.i][1]

    def after_draft(self, i, token, q_token, q_max, entropy=0.0):
        k, p = self.schedule[self.i]
        return DISCARD if p > k and i == p else MORE

    def update(self, step) -> None:
        self.i += 1

    def params(self) -> dict:
        return {"schedule": "/".join(f"{k}" if k == p else f"{k}+{p - k}" for k, p in self.schedule)}


@dataclass
class OracleBound:
    """``step_time``: Σ predicted step times of the best schedule (prefill excluded); ``wall_time``: the trace's
    prefill + ``step_time``, comparable with a replayed generation's ``wall_time``; ``schedule``: (k, p) per
    step; ``new_tokens``: the tokens it emits."""

    step_time: float
    wall_time: float
    schedule: list[tuple[int, int]]
    new_tokens: int

    @property
    def steps(self) -> int:
        return len(self.schedule)


def step_options(trace: Trace, reference: list[int], j: int, budget: int, max_draft: int | None) -> dict:
    """{(k, p): (n accepted, tokens emitted)} of every step a chain policy can take at reference position j —
    the acceptance rule of ``actors/core/acceptance.py`` and the emit rule of ``actors/core/step.py``, as replay applies them."""
    rollout, remaining, eos = trace.rollouts[j], budget - j, frozenset(trace.eos_ids)
    top = min(len(rollout), remaining - 1, len(rollout) if max_draft is None else max_draft)
    out = {}
    for k in range(top + 1):
        tokens = list(rollout.tokens[:k])
        if any(t in eos for t in tokens[:-1]):                       # the drafter stops right after an EOS
            break
        argmax = reference[j: j + k + 1]
        n, nxt = accept_greedy(argmax + [-1] * (k + 1 - len(argmax)), tokens)
        e = len(Row(tokens=[], budget=remaining, eos=eos).emit(tokens[:n] + [nxt]))
        out[(k, k)] = (n, e)                                         # k = 0: a plain target step
        if k + 1 <= min(len(rollout), remaining - 1) and not (tokens and tokens[-1] in eos):
            out[(k, k + 1)] = (n, e)                                 # one more proposal, drawn and discarded
    return out


def next_lag(lag, base: int, k: int, p: int, n: int, e: int):
    """The draft-cache lag after a step from context ``base`` (``actors/tracing/replay.py`` ``CostClock``'s dlen rule)."""
    if p == 0:
        return lag + e
    dlen = base + p - 1 if k == 0 else min(base + p - 1, base + n)
    return base + e - dlen - 1


@dataclass
class ValueTable:
    """The bound's dynamic programme on one trace: ``best[j, ℓ]`` the least predicted time from reference position j
    at draft-cache lag ℓ to the end, ``choice[j, ℓ]`` the (k, p) that reaches it, ``options[j]`` every step a chain
    policy can take at j (:func:`step_options`)."""

    best: np.ndarray         # [positions + 1, lags]
    choice: np.ndarray       # [positions + 1, lags, 2]
    options: list[dict]


def value_table(trace: Trace, cost_model: CostModel, *, max_new_tokens: int | None = None,
                max_draft: int | None = None, scale: float = 1.0) -> ValueTable:
    """The least predicted time from every (position, lag) of ``trace`` to its end (module docstring's programme).

    ``max_draft``: K, the largest cap a step may use (None: as many proposals as the trace recorded)."""
    budget = check_trace(trace, max_new_tokens=max_new_tokens)
    cost_model = cost_model.as_measured()                            # the measured forward times, as replay's clock
    reference = list(trace.reference[:budget])
    n_pos, plen = len(reference), len(trace.prompt_ids)
    size = plen + n_pos + 1                                          # lags 0 … |prompt| − 1 + N
    lags = np.arange(size)
    best = np.zeros((n_pos + 1, size))
    choice = np.zeros((n_pos + 1, size, 2), dtype=np.int64)
    options = [step_options(trace, reference, j, budget, max_draft) for j in range(n_pos)]
    for j in range(n_pos - 1, -1, -1):
        base = plen + j
        row = np.full(size, np.inf)
        pick = np.zeros((size, 2), dtype=np.int64)
        for (k, p), (n, e) in options[j].items():
            verify = cost_model.verify_time(k + 1, base) + cost_model.overhead
            if p == 0:
                draft, nxt = 0.0, best[j + e, np.minimum(next_lag(lags, base, k, p, n, e), size - 1)]
            else:
                draft = cost_model.draft_time(p, lags, base)         # every lag at once (policies/costs.py's rule)
                nxt = best[j + e, next_lag(None, base, k, p, n, e)]
            cand = scale * (draft + verify) + nxt
            better = cand < row
            row = np.where(better, cand, row)
            pick[better] = (k, p)
        best[j], choice[j] = row, pick
    return ValueTable(best, choice, options)


def oracle_bound(trace: Trace, cost_model: CostModel, *, max_new_tokens: int | None = None,
                 max_draft: int | None = None, scale: float = 1.0) -> OracleBound:
    """The least predicted time over every chain schedule on ``trace`` (module docstring), and that schedule.

    ``max_draft``: K, the largest cap a step may use (None: as many proposals as the trace recorded)."""
    return bound_of(trace, value_table(trace, cost_model, max_new_tokens=max_new_tokens, max_draft=max_draft,
                                       scale=scale))


def bound_of(trace: Trace, table: ValueTable) -> OracleBound:
    """The bound read off ``trace``'s programme ``table`` (:func:`value_table`): its time and the schedule that
    reaches it from the start state."""
    best, choice, options = table.best, table.choice, table.options
    n_pos, plen = best.shape[0] - 1, len(trace.prompt_ids)
    schedule, j, lag = [], 0, plen - 1
    while j < n_pos:
        k, p = (int(x) for x in choice[j, lag])
        n, e = options[j][(k, p)]
        schedule.append((k, p))
        lag = next_lag(lag, plen + j, k, p, n, e)
        j += e
    step_time = float(best[0, plen - 1])
    prefill = trace.prefill_time if plen > 1 else 0.0
    return OracleBound(step_time=step_time, wall_time=prefill + step_time, schedule=schedule, new_tokens=n_pos)


def replay_bound(trace: Trace, cost_model: CostModel, *, max_new_tokens: int | None = None,
                 max_draft: int | None = None, prefill_time: float | None = None) -> tuple[OracleBound, Generation]:
    """The bound and its schedule replayed: a :class:`~actors.core.step.Generation` with the bound's steps and time."""
    bound = oracle_bound(trace, cost_model, max_new_tokens=max_new_tokens, max_draft=max_draft)
    g = replay(trace, SchedulePolicy(bound.schedule), max_new_tokens=max_new_tokens, cost_model=cost_model,
               prefill_time=prefill_time)
    return bound, g
