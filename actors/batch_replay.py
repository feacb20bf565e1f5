"""Exact replay of a greedy *batch* from per-row traces (docs/replay.md, Batches; the single-row rule is ``actors/replay.py``).

A batch run's rows interact only through what a batch policy reads (each row's draft
probabilities) and through the step times; under greedy decoding each row's tokens and drafts
depend on its own committed prefix alone. So the batch is replayed by running the live batch
step (``actors/step.py::batch_chain_step``) on one trace per row with three seams swapped:

- **drafter** (:class:`TraceBatchDrafter`): row b's rollout recorded at its reference position,
  one level at a time — the tokens, q(x), max q and H(q) the live batch drafter computes;
- **verifier** (:class:`ReferenceBatchVerifier`): each row's greedy acceptance against its own
  reference (the target-only output);
- **clock** (:class:`BatchCostClock`): the cost model's batch surface — a level of drafting costs
  ``batch_draft(B)``, the target forward ``batch_verify(B, width)`` + the per-step overhead.

Per-row policies and batch policies (``tetris``, ``gt-batch``, ``batch-schedule``) then make the
live run's decisions, and finished rows leave the replayed batch when they left the live one, so
each row's token ids and (k_max, drafted, accepted) per step equal the live batch's (up to the
floating-point caveat of ``actors/rollouts.py``: live drafts come from padded batch forwards).
A row's ``wall_time`` is the batch's prefill (the longest of its traces' measured prefills) plus
the predicted steps until it finished.
"""
from __future__ import annotations

from typing import Sequence

from actors.acceptance import accept_greedy
from actors.replay import check_replayable, check_trace
from actors.rollouts import Trace
from actors.step import Generation, Row, batch_chain_step, decode_batch
from policies.base import BatchPolicy, GenerationContext, Policy
from policies.costs import CostModel
from policies.errors import SpecsweepError


class TraceBatchDrafter:
    """Each drafting row's recorded rollout at its current reference position, a level at a time."""

    name = "trace"

    def __init__(self, traces: Sequence[Trace]):
        self.traces = list(traces)

    def begin(self, seqs: Sequence[Sequence[int]], caps: Sequence[int]) -> None:
        """The rollouts at each row's reference position."""
        self.level = 0
        self.rollouts = [t.rollouts[len(s) - len(t.prompt_ids)] if c > 0 else None
                         for t, s, c in zip(self.traces, seqs, caps)]

    def next(self, active: Sequence[int]) -> dict[int, tuple]:
        """Proposal ``level`` of each active row's rollout (x, q(x), max q, H(q), None)."""
        picks = {}
        for b in active:
            r = self.rollouts[b]
            if self.level >= len(r):
                raise SpecsweepError(f"trace {self.traces[b].key!r} recorded {len(r)} draft proposals here "
                                     f"(max_draft={self.traces[b].max_draft}); the policy asked for more: record "
                                     "with a larger max_draft")
            picks[b] = (r.tokens[self.level], r.q_tokens[self.level], r.q_max[self.level], r.entropy[self.level], None)
        self.level += 1
        return picks

    def rollback(self, row: int, valid: int) -> None:
        """Nothing cached."""

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Finished rows leave."""
        self.traces = [self.traces[r] for r in rows]


class ReferenceBatchVerifier:
    """Each row's greedy answer read from its own reference."""

    forward_time = 0.0

    def __init__(self, traces: Sequence[Trace], references: Sequence[Sequence[int]]):
        self.prompt_lens = [len(t.prompt_ids) for t in traces]
        self.references = [list(r) for r in references]

    def check_batch(self, rows: Sequence[Row], drafts, q_rows) -> list[tuple[int, int]]:
        """(n accepted, next token) per row."""
        out = []
        for row, d, plen, ref in zip(rows, drafts, self.prompt_lens, self.references):
            j = len(row.tokens) - plen
            argmax = ref[j: j + len(d) + 1]
            out.append(accept_greedy(argmax + [-1] * (len(d) + 1 - len(argmax)), d))
        return out

    def keep_batch(self, rows: Sequence[Row]) -> None:
        """Nothing cached; a row never emits past its reference."""

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Finished rows leave."""
        self.prompt_lens = [self.prompt_lens[r] for r in rows]
        self.references = [self.references[r] for r in rows]


class BatchCostClock:
    """Batch step times from a :class:`~policies.costs.CostModel`'s batch surface (0 without a model)."""

    def __init__(self, model: CostModel | None):
        self.model = model
        self.wall = 0.0

    def start(self) -> None:
        """Nothing to read."""

    def drafted_batch(self, levels: int, rows: int) -> float:
        """``levels`` batched draft forwards over ``rows`` rows."""
        t = levels * self.model.batch_draft(rows) if self.model is not None and levels else 0.0
        self.wall += t
        return t

    def verified_batch(self, rows: int, width: int) -> float:
        """One target forward over ``rows`` × ``width`` tokens, plus the per-step overhead."""
        if self.model is None:
            return 0.0
        t = self.model.batch_verify(rows, width)
        self.wall += t + self.model.overhead
        return t


def check_batch_replayable(policy: Policy, temperature: float = 0.0) -> None:
    """Refuse (one line) what a sweep cannot replay exactly: a batch policy replays through :func:`replay_batch`
    (at batch size 1 too) when it has no blocker of its own and its rows' policy passes
    :func:`actors.replay.check_replayable`; any other policy by that rule alone."""
    if isinstance(policy, BatchPolicy):
        if policy.replay_blocker is not None:
            raise SpecsweepError(f"policy {policy.name} cannot be replayed ({policy.replay_blocker}); run it live")
        policy = policy.row_policy()
    check_replayable(policy, temperature)


def replay_batch(traces: Sequence[Trace], policy: BatchPolicy | Sequence[Policy], *, max_new_tokens: int | None = None,
                 costs=None, cost_model: CostModel | None = None) -> list[Generation]:
    """Replay a greedy batch of ``len(traces)`` rows: one :class:`Generation` per trace, as the live batch engine
    gives them. ``policy``: a batch policy, or one fresh per-row policy per trace; ``costs``: the pair's cost model
    policies read; ``cost_model``: predicts the step times (module docstring)."""
    batch_policy = policy if isinstance(policy, BatchPolicy) else None
    policies = [batch_policy.row_policy() for _ in traces] if batch_policy else list(policy)
    if len(policies) != len(traces):
        raise SpecsweepError(f"{len(policies)} policies for {len(traces)} traces: give one per trace")
    for p in policies:
        check_replayable(p)
    if batch_policy is not None:
        check_batch_replayable(batch_policy)
    budgets = [check_trace(t, max_new_tokens=max_new_tokens) for t in traces]
    refs = [t.reference[:n] for t, n in zip(traces, budgets)]
    ctxs = [GenerationContext(costs=costs, reference=r if p.needs_reference else None, greedy=True)
            for p, r in zip(policies, refs)]
    for p, c in zip(policies, ctxs):
        p.reset(c)
    if batch_policy is not None:
        batch_policy.reset(GenerationContext(costs=costs, greedy=True))
    prefill = max(t.prefill_time for t in traces)
    rows = [Row(tokens=list(t.prompt_ids), budget=n, eos=frozenset(t.eos_ids),
                out=Generation(token_ids=[], prefill_time=prefill)) for t, n in zip(traces, budgets)]
    drafter, verifier, clock = TraceBatchDrafter(traces), ReferenceBatchVerifier(traces, refs), BatchCostClock(cost_model)

    def leave(kept):
        """Finished rows leave the drafter and the verifier."""
        drafter.keep_rows(kept)
        verifier.keep_rows(kept)

    def done(i):
        """Row i's latency: prefill + the predicted steps so far."""
        rows[i].out.wall_time = prefill + clock.wall

    decode_batch(rows, policies, ctxs,
                 lambda rs, ps: batch_chain_step(rs, ps, drafter, verifier, clock, batch_policy, sampled=False),
                 leave, done, batch_policy)
    return [r.out for r in rows]
