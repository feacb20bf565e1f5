"""Exact counterfactual replay of greedy speculative decoding from a :class:`~actors.rollouts.Trace`.

Rule. Under greedy decoding every emitted token equals the target-only output y, so a
live generation is always at some reference position j (prompt + y_<j generated). There
a step:

1. asks the policy for k_max and cuts it to ``min(k_max, remaining − 1)`` (0 for a
   policy that needs no draft), remaining = max_new_tokens − j;
2. shows the policy the draft's proposals one at a time — in replay, the rollout at j,
   x_1, x_2, … with their q(x), max q and H(q) — through the drafter's own
   :func:`~actors.drafters.record_proposal` (MORE / STOP / DISCARD, the cap, the stop at an
   EOS proposal); k = proposals kept;
3. accepts n = the number of leading proposals equal to y_j, y_{j+1}, … (n ≤ k) — what
   the target's argmax check accepts, because the target's argmax after prompt + y_<j+i
   *is* y_{j+i};
4. emits x_1 … x_n and the target's next token y_{j+n}, cut after the first EOS and at
   max_new_tokens (:func:`actors.engine.emit`, the engine's own helper);
5. tells the policy the :class:`~policies.base.Step` (same fields as live; the
   times are the cost model's predictions).

Nothing else in the engine's loop depends on the models, so the policy sees the same
numbers and makes the same decisions: token ids, (drafted, accepted) and k_max per step
are those of the live run (up to the floating-point caveat of ``actors/rollouts.py``).

Not replayed (refused with one line): sampling (temperature > 0: acceptance is random
and depends on the target's full distribution), tree policies (static trees are not
replayed yet; dynamic trees need the draft at every node), ``bandit`` with
``reward=clock`` (reads the measured clock), traces of another pair or tokenizer, and
budgets or draft lengths the trace did not record.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from actors.cost_model import CostModel, turn_scale
from actors.drafters import Proposal, record_proposal
from actors.engine import Generation, emit
from actors.rollouts import Trace
from policies.base import GenerationContext, Policy, SequencePolicy, Step
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


def _accepted(proposals: Sequence[int], reference: Sequence[int], j: int) -> int:
    n = 0
    while n < len(proposals) and j + n < len(reference) and proposals[n] == reference[j + n]:
        n += 1
    return n


@dataclass
class _RolloutDraft:
    """The rollout at one position, served one proposal at a time like the live drafter."""

    trace: Trace
    j: int

    def proposals(self):
        r = self.trace.rollouts[self.j]
        i = 0
        while True:
            if i >= len(r):
                raise SpecsweepError(
                    f"trace {self.trace.key!r} recorded {len(r)} draft proposals at position {self.j} "
                    f"(max_draft={self.trace.max_draft}); the policy asked for more: record with a larger max_draft")
            yield r.tokens[i], r.q_tokens[i], r.q_max[i], r.entropy[i]
            i += 1


def replay(trace: Trace, policy: Policy, *, max_new_tokens: int | None = None, costs=None,
           cost_model: CostModel | None = None, temperature: float = 0.0, pair: str | None = None,
           tokenizer_hash: str | None = None, rank_acceptance=None, calibrate: bool = False) -> Generation:
    """Replay ``policy`` on ``trace``: the :class:`~actors.engine.Generation` the live engine would produce.

    ``costs``: the actor's :class:`~policies.costs.CostCurve` — the same object live runs hand
    to policies through :class:`~policies.base.GenerationContext` (``gt``, ``goodput``,
    ``bandit`` read it). ``cost_model``: predicts each step's draft and verify times
    (0 without one); ``wall_time`` = the trace's measured prefill + Σ predicted steps.
    ``pair`` / ``tokenizer_hash``: when given, the trace must match them. ``calibrate``:
    scale predicted step times by the trace's own ``ar`` run (:func:`~actors.cost_model.turn_scale`);
    off by default: one ``ar`` run is a noisy gauge of the machine's speed (docs/replay.md, "Time").
    """
    check_replayable(policy, temperature)
    budget = check_trace(trace, pair=pair, tokenizer_hash=tokenizer_hash, max_new_tokens=max_new_tokens)
    reference = trace.reference[:budget]
    eos = frozenset(trace.eos_ids)
    ctx = GenerationContext(costs=costs, reference=reference if policy.needs_reference else None,
                            greedy=True, rank_acceptance=rank_acceptance)
    policy.reset(ctx)

    tokens = list(trace.prompt_ids)          # the loop's state: prompt + y_<j
    out = Generation(token_ids=[], prefill_time=trace.prefill_time if len(tokens) > 1 else 0.0)
    dlen = 0                                 # the draft's cache length, as the live drafter's (for the cost model)
    wall = out.prefill_time
    scale = (turn_scale(cost_model, len(tokens), trace.ar_step_times)
             if cost_model is not None and calibrate else 1.0)
    while len(out.token_ids) < budget and not out.finished_by_eos:
        j = len(out.token_ids)
        ctx.generated = j
        remaining = budget - j
        k_max = int(policy.max_draft())
        if k_max < 0:
            raise RuntimeError(f"policy {policy!r} asked for {k_max} drafts; must be >= 0")
        cap = min(k_max, remaining - 1) if policy.needs_draft else 0
        prop = Proposal()
        if cap > 0:
            for x, q, qmax, h in _RolloutDraft(trace, j).proposals():
                if not record_proposal(policy.after_draft, prop, x, q, qmax, None, cap, eos, sampled=False, entropy=h):
                    break
        k = len(prop.tokens)
        n = _accepted(prop.tokens, reference, j)
        nxt = reference[j + n] if j + n < len(reference) else -1     # beyond the reference only after an EOS: cut
        base = len(tokens)
        new = emit(prop.tokens[:n] + [nxt], tokens, out, remaining, eos)
        if nxt < 0 and -1 in new:
            raise AssertionError("replay emitted past the reference")
        d_time = v_time = 0.0
        if cost_model is not None:
            catchup = max(base - dlen - 1, 0) if prop.proposed else 0
            d_time = scale * cost_model.draft_time(prop.proposed, catchup, base)
            v_time = scale * cost_model.verify_time(k + 1, base)
            wall += d_time + v_time + scale * cost_model.overhead
        if prop.proposed:
            dlen = base + prop.proposed - 1
            if k:
                dlen = min(dlen, base + n)
        step = Step(k_max=k_max, drafted=k, accepted=n, emitted=len(new), q_tokens=prop.q_tokens, q_max=prop.q_max,
                    entropy=prop.entropy, draft_time=d_time, verify_time=v_time, proposed=prop.proposed)
        out.steps.append(step)
        policy.update(step)
    out.wall_time = wall
    return out

