"""Exact counterfactual replay of greedy speculative decoding from a :class:`~actors.rollouts.Trace`.

Replay runs the live engine's own step (``actors/step.py``) with three seams swapped:

- **drafter** (:class:`TraceDrafter`): the rollout recorded at reference position j, served
  one proposal at a time through :func:`~actors.drafters.record_proposal` with its q(x),
  max q and H(q), so the policy's MORE / STOP / DISCARD answers, the cap and the stop at an
  EOS proposal act exactly as live;
- **verifier** (:class:`ReferenceVerifier`): under greedy decoding every emitted token equals
  the target-only output y, so a generation is always at some position j (prompt + y_<j) and
  the target's argmax after prompt + y_<j+i *is* y_{j+i}: greedy acceptance
  (``actors/acceptance.py``) against y_j, y_{j+1}, … accepts what the live forward would;
- **clock** (:class:`CostClock`): each step's draft and verify times are the cost model's
  predictions; ``wall_time`` = the trace's measured prefill + Σ predicted steps.

Nothing else in the step depends on the models, so the policy sees the same numbers and
makes the same decisions: token ids, (drafted, accepted) and k_max per step are those of
the live run (up to the floating-point caveat of ``actors/rollouts.py``).

Not replayed (refused with one line): sampling (temperature > 0: acceptance is random
and depends on the target's full distribution), tree policies (static trees are not
replayed yet; dynamic trees need the draft at every node), ``bandit`` with
``reward=clock`` (reads the measured clock), traces of another pair or tokenizer, and
budgets or draft lengths the trace did not record.
"""
from __future__ import annotations

import itertools

from actors.acceptance import accept_greedy
from actors.drafters import Drafter, Proposal, record_proposal
from actors.step import Generation, Row, chain_step, decode
from actors.rollouts import Trace
from policies.base import GenerationContext, Policy, SequencePolicy
from policies.cost_fit import turn_scale
from policies.costs import CostModel
from policies.errors import SpecsweepError


def check_replayable(policy: Policy, temperature: float = 0.0) -> None:
    """Refuse (one line) what replay cannot reproduce exactly."""
    if temperature != 0:
        raise SpecsweepError(f"replay is exact for greedy decoding only; temperature={temperature} must run live")
    if policy.replay_blocker is not None:
        raise SpecsweepError(f"policy {policy.name} cannot be replayed ({policy.replay_blocker}); run it live")
    if not isinstance(policy, SequencePolicy):
        raise SpecsweepError(f"{policy!r} is not a SequencePolicy: replay drafts chains only")


def check_trace(trace: Trace, *, pair: str | None = None, tokenizer_hash: str | None = None,
                max_new_tokens: int | None = None) -> int:
    """Validate a trace for a replay; returns the budget to replay under."""
    trace.check()
    if pair is not None and trace.pair != pair:
        raise SpecsweepError(f"trace {trace.key!r} was recorded for pair {trace.pair!r}, not {pair!r}")
    if tokenizer_hash is not None and trace.tokenizer_hash != tokenizer_hash:
        raise SpecsweepError(f"trace {trace.key!r} was recorded with tokenizer {trace.tokenizer_hash}, "
                             f"not {tokenizer_hash}: token ids are not comparable")
    budget = trace.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
    if budget < 1:
        raise SpecsweepError(f"max_new_tokens must be >= 1, got {budget}")
    if budget > trace.max_new_tokens and not trace.finished_by_eos:
        raise SpecsweepError(f"trace {trace.key!r} holds {trace.max_new_tokens} reference tokens; "
                             f"max_new_tokens={budget} needs a longer `ar` run")
    return budget


class TraceDrafter(Drafter):
    """The rollout recorded at the current reference position, proposed one token at a time like the live drafter."""

    name = "trace"

    def __init__(self, trace: Trace):
        super().__init__()
        self.trace = trace
        self.stop_ids = frozenset(trace.eos_ids)

    def propose(self, tokens, k_max, ask) -> Proposal:
        j = len(tokens) - len(self.trace.prompt_ids)
        r = self.trace.rollouts[j]
        prop = Proposal()
        for i in itertools.count():
            if i >= len(r):
                raise SpecsweepError(
                    f"trace {self.trace.key!r} recorded {len(r)} draft proposals at position {j} "
                    f"(max_draft={self.trace.max_draft}); the policy asked for more: record with a larger max_draft")
            if not record_proposal(ask, prop, r.tokens[i], r.q_tokens[i], r.q_max[i], None, k_max, self.stop_ids,
                                   sampled=False, entropy=r.entropy[i]):
                return prop


class ReferenceVerifier:
    """The target's greedy answer read from the recorded target-only output instead of a forward."""

    forward_time = 0.0

    def __init__(self, trace: Trace, reference):
        self.prompt_len = len(trace.prompt_ids)
        self.reference = reference

    def check(self, row: Row, drafted, q_rows) -> tuple[int, int]:
        j = len(row.tokens) - self.prompt_len
        argmax = list(self.reference[j: j + len(drafted) + 1])
        argmax += [-1] * (len(drafted) + 1 - len(argmax))   # beyond the reference only after an EOS: cut by emit
        return accept_greedy(argmax, drafted)

    def keep(self, row: Row) -> None:
        if row.out.token_ids and row.out.token_ids[-1] < 0:
            raise AssertionError("replay emitted past the reference")


class CostClock:
    """Step times predicted by a :class:`~policies.costs.CostModel`, times ``scale``; 0 without a model.

    Tracks the draft's cache length as the live drafter's would be, since a draft forward's cost depends on
    the committed tokens it must catch up on.
    """

    def __init__(self, model: CostModel | None, scale: float = 1.0):
        self.model, self.scale = model, scale
        self.dlen = 0
        self.wall = 0.0          # Σ predicted step times, overhead included

    def start(self) -> None:
        pass

    def drafted(self, base: int, proposed: int) -> float:
        if self.model is None:
            return 0.0
        catchup = max(base - self.dlen - 1, 0) if proposed else 0
        d = self.scale * self.model.draft_time(proposed, catchup, base)
        self.wall += d
        return d

    def verified(self, base: int, drafted: int, accepted: int, proposed: int) -> float:
        if proposed:
            self.dlen = base + proposed - 1
            if drafted:
                self.dlen = min(self.dlen, base + accepted)
        if self.model is None:
            return 0.0
        v = self.scale * self.model.verify_time(drafted + 1, base)
        self.wall += v + self.scale * self.model.overhead
        return v


def replay(trace: Trace, policy: Policy, *, max_new_tokens: int | None = None, costs=None,
           cost_model: CostModel | None = None, temperature: float = 0.0, pair: str | None = None,
           tokenizer_hash: str | None = None, rank_acceptance=None, calibrate: bool = False,
           prefill_time: float | None = None) -> Generation:
    """Replay ``policy`` on ``trace``: the :class:`~actors.step.Generation` the live engine would produce.

    ``costs``: the actor's measured :class:`~policies.costs.CostModel` — the same object live runs hand
    to policies through :class:`~policies.base.GenerationContext` (``gt``, ``goodput``,
    ``bandit`` read it). ``cost_model``: the fitted one, predicts each step's draft and verify times
    (0 without one); ``wall_time`` = the trace's measured prefill + Σ predicted steps.
    ``pair`` / ``tokenizer_hash``: when given, the trace must match them. ``calibrate``:
    scale predicted step times by the trace's own ``ar`` run (:func:`~policies.cost_fit.turn_scale`);
    off by default: one ``ar`` run is a noisy gauge of the machine's speed (docs/replay.md, "Time").
    ``prefill_time``: a predicted prefill in place of the trace's measured one (what-if costs of another device).
    """
    check_replayable(policy, temperature)
    budget = check_trace(trace, pair=pair, tokenizer_hash=tokenizer_hash, max_new_tokens=max_new_tokens)
    reference = trace.reference[:budget]
    ctx = GenerationContext(costs=costs, reference=reference if policy.needs_reference else None,
                            greedy=True, rank_acceptance=rank_acceptance)
    policy.reset(ctx)

    row = Row(tokens=list(trace.prompt_ids), budget=budget, eos=frozenset(trace.eos_ids),
              out=Generation(token_ids=[], prefill_time=(trace.prefill_time if prefill_time is None else prefill_time)
                             if len(trace.prompt_ids) > 1 else 0.0))
    scale = (turn_scale(cost_model, len(row.tokens), trace.ar_step_times)
             if cost_model is not None and calibrate else 1.0)
    drafter, verifier, clock = TraceDrafter(trace), ReferenceVerifier(trace, reference), CostClock(cost_model, scale)
    out = decode(row, policy, ctx, lambda r: chain_step(r, policy, drafter, verifier, clock))
    out.wall_time = out.prefill_time + clock.wall
    return out

