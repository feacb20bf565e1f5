"""Exact counterfactual replay of greedy speculative decoding from :class:`~actors.rollouts.Trace` s, one per row.

Replay runs the live engine's own step (``actors/core/step.py``'s ``chain_step``, the same for one row and for a
batch) with three seams swapped:

- **drafter** (:class:`TraceDrafter`): each drafting row's rollout recorded at its reference position j,
  served one level at a time with its q(x), max q and H(q), so the policy's MORE / STOP / DISCARD answers
  (:func:`~actors.drafting.drafters.record_proposal`), the cap and the stop at an EOS proposal act exactly as live;
- **verifier** (:class:`ReferenceVerifier`): under greedy decoding every emitted token equals the
  target-only output y, so a row is always at some position j (prompt + y_<j) and the target's argmax
  after prompt + y_<j+i *is* y_{j+i}: greedy acceptance (``actors/core/acceptance.py``) against y_j, y_{j+1}, …
  accepts what the live forward would;
- **clock**: the cost model's predictions, read from its measured forward times (``CostModel.as_measured``: the
  raw T(m) per knot, not the non-decreasing fit the policies see). One row under a per-row policy
  (:class:`CostClock`): draft time with its catch-up term and verify time at the row's context. A batch, or a
  batch policy (``tetris``, ``gt-batch``, ``batch-schedule``), at any B (:class:`BatchCostClock`): a draft phase
  of L levels costs ``batch_draft(B, L)``, the target forward ``batch_verify(B, width)``, plus the B-row step's
  overhead ``batch_overhead(B)``.

Nothing else in the step depends on the models, so the policies see the same numbers and make the same
decisions: token ids, (drafted, accepted) and k_max per step are those of the live run, and finished rows
leave the replayed batch when they left the live one (up to the floating-point caveat of
``actors/rollouts.py``: live batch drafts come from padded batch forwards). A row's ``wall_time`` is its
prefill (a batch: the longest of its traces' measured prefills) plus the predicted steps until it finished.

Not replayed (refused with one line): sampling (temperature > 0: acceptance is random
and depends on the target's full distribution), tree policies (static trees are not
replayed yet; dynamic trees need the draft at every node), ``bandit`` with
``reward=clock`` (reads the measured clock), traces of another pair or tokenizer, and
budgets or draft lengths the trace did not record. A batch policy is replayed only as a batch
(:func:`replay_batch`, which a sweep's replay tasks call); :func:`replay` and ``specsweep replay`` /
``specsweep tune`` (one row per trace, :func:`check_replayable`) refuse it.
"""
from __future__ import annotations

from typing import Sequence

from actors.core.acceptance import accept_greedy
from actors.drafting.drafters import Drafter
from actors.tracing.traces import Trace
from actors.core.step import Generation, Row, chain_step, decode
from policies.base import BatchPolicy, GenerationContext, Policy, SequencePolicy, TreePolicy
from policies.cost_fit import turn_scale
from policies.costs import CostModel
from policies.errors import SpecsweepError
from policies.registry import REGISTRY, names


def chain_policy_names() -> list[str]:
    """The registered policies a one-row replay takes (``policies/registry.py`` order): every per-sequence chain
    policy without a replay blocker of its class, ``ar`` left out (every replay adds it as the baseline)."""
    return [n for n in names() if n != "ar" and issubclass(REGISTRY[n][0], SequencePolicy)
            and REGISTRY[n][0].replay_blocker is None]


def check_replayable(policy: Policy, temperature: float = 0.0, spec: str | None = None) -> None:
    """Refuse (one line) what a one-row replay cannot reproduce exactly: sampling, a policy with a replay blocker,
    and any policy that is not a per-sequence chain policy — a batch policy (replayed only as a batch, inside a sweep:
    :func:`check_batch_replayable`) or a tree. ``spec``: the policy as the user wrote it (default: its name); the
    line names it, its kind and the chain policies that are valid."""
    label = spec or policy.name
    if temperature != 0:
        raise SpecsweepError(f"replay is exact for greedy decoding only; temperature={temperature} must run live")
    if policy.replay_blocker is not None:
        raise SpecsweepError(f"policy {label} cannot be replayed ({policy.replay_blocker}); run it live")
    if not isinstance(policy, SequencePolicy):
        kind = ("a batch policy" if isinstance(policy, BatchPolicy) else
                "a tree policy" if isinstance(policy, TreePolicy) else "not a per-sequence chain policy")
        where = (" (a sweep with mode: replay or both replays batch policies, as a batch)"
                 if isinstance(policy, BatchPolicy) else "")
        raise SpecsweepError(f"policy {label} is {kind}: `specsweep replay` and `tune` replay per-sequence chain "
                             f"policies on the stored traces{where}; valid: {', '.join(chain_policy_names())}")


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
    """Each drafting row's recorded rollout at its current reference position, a level at a time."""

    name = "trace"

    def __init__(self, traces: Sequence[Trace]):
        self.traces = list(traces)

    def begin(self, seqs, caps) -> None:
        """The rollouts at each row's reference position."""
        self.level = 0
        self.positions = [len(s) - len(t.prompt_ids) for t, s in zip(self.traces, seqs)]
        self.rollouts = [t.rollouts[j] if c > 0 else None for t, j, c in zip(self.traces, self.positions, caps)]

    def next(self, active) -> dict[int, tuple]:
        """Proposal ``level`` of each active row's rollout (x, q(x), max q, H(q), None)."""
        picks = {}
        for b in active:
            r = self.rollouts[b]
            if self.level >= len(r) and self._ends_short(b, r):
                picks[b] = None              # the drafter had nothing more to propose there (a model-free chain)
                continue
            if self.level >= len(r):
                raise SpecsweepError(f"trace {self.traces[b].key!r} recorded {len(r)} draft proposals at position "
                                     f"{self.positions[b]} (max_draft={self.traces[b].max_draft}); the policy asked "
                                     "for more: record with a larger max_draft")
            picks[b] = (r.tokens[self.level], r.q_tokens[self.level], r.q_max[self.level], r.entropy[self.level], None)
        self.level += 1
        return picks

    def _ends_short(self, b: int, rollout) -> bool:
        """Whether row b's rollout stopped before its cap because the drafter proposed nothing more (a trace whose
        ``meta`` says ``ends_short``: ``actors/drafter_kinds/suffix.py``); else a short rollout was cut by the cap."""
        trace = self.traces[b]
        left = trace.max_new_tokens - self.positions[b] - 1
        cap = left if trace.max_draft is None else min(trace.max_draft, left)
        return bool(trace.meta.get("ends_short")) and len(rollout) < cap
    def keep_rows(self, rows) -> None:
        """Finished rows leave."""
        self.traces = [self.traces[r] for r in rows]


class ReferenceVerifier:
    """Each row's greedy answer read from its own recorded target-only output instead of a forward."""

    forward_time = 0.0

    def __init__(self, traces: Sequence[Trace], references: Sequence[Sequence[int]]):
        self.prompt_lens = [len(t.prompt_ids) for t in traces]
        self.references = [list(r) for r in references]

    def check(self, rows: Sequence[Row], drafts, q_rows) -> list[tuple[int, int]]:
        """(n accepted, next token) per row."""
        out = []
        for row, d, plen, ref in zip(rows, drafts, self.prompt_lens, self.references):
            j = len(row.tokens) - plen
            argmax = ref[j: j + len(d) + 1]
            argmax += [-1] * (len(d) + 1 - len(argmax))     # beyond the reference only after an EOS: cut by emit
            out.append(accept_greedy(argmax, d))
        return out

    def keep(self, rows: Sequence[Row]) -> None:
        """Nothing cached; a row never emits past its reference."""
        for row in rows:
            if row.out.token_ids and row.out.token_ids[-1] < 0:
                raise AssertionError("replay emitted past the reference")

    def keep_rows(self, rows) -> None:
        """Finished rows leave."""
        self.prompt_lens = [self.prompt_lens[r] for r in rows]
        self.references = [self.references[r] for r in rows]


class CostClock:
    """One row's step times predicted by a :class:`~policies.costs.CostModel`, times ``scale``; 0 without a model.

    Tracks the draft's cache length as the live drafter's would be, since a draft forward's cost depends on
    the committed tokens it must catch up on.
    """

    def __init__(self, model: CostModel | None, scale: float = 1.0):
        self.model = model.as_measured() if model is not None else None     # measured forward times
        self.scale = scale
        self.dlen = 0
        self.wall = 0.0          # Σ predicted step times, overhead included

    def start(self) -> None:
        pass

    def drafted(self, bases, proposed, levels: int) -> float:
        if self.model is None:
            return 0.0
        (base,), (p,) = bases, proposed
        catchup = max(base - self.dlen - 1, 0) if p else 0
        d = self.scale * self.model.draft_time(p, catchup, base)
        self.wall += d
        return d

    def verified(self, bases, drafted, accepted, proposed, width: int) -> float:
        (base,), (k,), (n,), (p,) = bases, drafted, accepted, proposed
        if p:
            self.dlen = base + p - 1
            if k:
                self.dlen = min(self.dlen, base + n)
        if self.model is None:
            return 0.0
        v = self.scale * self.model.verify_time(k + 1, base)
        self.wall += v + self.scale * self.model.overhead
        return v


class BatchCostClock:
    """Batch step times from a :class:`~policies.costs.CostModel`'s batch surface (0 without a model)."""

    def __init__(self, model: CostModel | None):
        self.model = model.as_measured() if model is not None else None     # measured forward times
        self.wall = 0.0

    def start(self) -> None:
        """Nothing to read."""

    def drafted(self, bases, proposed, levels: int) -> float:
        """A draft phase of ``levels`` batched draft forwards over the rows (``CostModel.batch_draft``)."""
        t = self.model.batch_draft(len(bases), levels) if self.model is not None and levels else 0.0
        self.wall += t
        return t

    def verified(self, bases, drafted, accepted, proposed, width: int) -> float:
        """One target forward over the rows × ``width`` tokens, plus the rows' per-step overhead."""
        if self.model is None:
            return 0.0
        t = self.model.batch_verify(len(bases), width)
        self.wall += t + self.model.batch_overhead(len(bases))
        return t


def check_batch_replayable(policy: Policy, temperature: float = 0.0) -> None:
    """Refuse (one line) what a sweep cannot replay exactly: a batch policy when it has a blocker of its own or its
    rows' policy fails :func:`check_replayable`; any other policy by that rule alone."""
    if isinstance(policy, BatchPolicy):
        if policy.replay_blocker is not None:
            raise SpecsweepError(f"policy {policy.name} cannot be replayed ({policy.replay_blocker}); run it live")
        policy = policy.row_policy()
    check_replayable(policy, temperature)


def replay(trace: Trace, policy: Policy, *, max_new_tokens: int | None = None, costs=None,
           cost_model: CostModel | None = None, temperature: float = 0.0, pair: str | None = None,
           tokenizer_hash: str | None = None, rank_acceptance=None, calibrate: bool = False,
           prefill_time: float | None = None) -> Generation:
    """Replay ``policy`` on ``trace``: the :class:`~actors.core.step.Generation` the live engine would produce — a
    batch of one row (:func:`replay_batch`)."""
    check_replayable(policy, temperature)
    return replay_batch([trace], [policy], max_new_tokens=max_new_tokens,
                        costs=costs, cost_model=cost_model, pair=pair, tokenizer_hash=tokenizer_hash,
                        rank_acceptance=rank_acceptance, calibrate=calibrate, prefill_time=prefill_time)[0]


def replay_batch(traces: Sequence[Trace], policy: BatchPolicy | Sequence[Policy], *, max_new_tokens: int | None = None,
                 costs=None, cost_model: CostModel | None = None, pair: str | None = None,
                 tokenizer_hash: str | None = None, rank_acceptance=None, calibrate: bool = False,
                 prefill_time: float | None = None) -> list[Generation]:
    """Replay a greedy batch of ``len(traces)`` rows (one row included): one :class:`Generation` per trace, as the
    live engine gives them.

    ``policy``: a batch policy, or one fresh per-row policy per trace. ``costs``: the actor's measured
    :class:`~policies.costs.CostModel` policies read through :class:`~policies.base.GenerationContext` (``gt``,
    ``goodput``, ``bandit``), the same object live runs hand them. ``cost_model``: predicts each step's times (0
    without one; module docstring for which clock). ``pair`` / ``tokenizer_hash``: when given, every trace must
    match them. ``calibrate`` (one row): scale predicted step times by the trace's own ``ar`` run
    (:func:`~policies.cost_fit.turn_scale`); off by default: one ``ar`` run is a noisy gauge of the machine's speed
    (docs/replay.md, "Time"). ``prefill_time``: a predicted prefill in place of the traces' measured one (what-if
    costs of another device)."""
    batch_policy = policy if isinstance(policy, BatchPolicy) else None
    policies = [batch_policy.row_policy() for _ in traces] if batch_policy else list(policy)
    if len(policies) != len(traces):
        raise SpecsweepError(f"{len(policies)} policies for {len(traces)} traces: give one per trace")
    for p in policies:
        check_replayable(p)
    if batch_policy is not None:
        check_batch_replayable(batch_policy)
    budgets = [check_trace(t, pair=pair, tokenizer_hash=tokenizer_hash, max_new_tokens=max_new_tokens) for t in traces]
    refs = [t.reference[:n] for t, n in zip(traces, budgets)]
    ctxs = [GenerationContext(costs=costs, reference=r if p.needs_reference else None, greedy=True,
                              rank_acceptance=rank_acceptance) for p, r in zip(policies, refs)]
    for p, c in zip(policies, ctxs):
        p.reset(c)
    if batch_policy is not None:
        batch_policy.reset(GenerationContext(costs=costs, greedy=True))
    if prefill_time is None:
        prefill_time = max(t.prefill_time if len(t.prompt_ids) > 1 else 0.0 for t in traces)
    elif all(len(t.prompt_ids) <= 1 for t in traces):
        prefill_time = 0.0
    rows = [Row(tokens=list(t.prompt_ids), budget=n, eos=frozenset(t.eos_ids),
                out=Generation(token_ids=[], prefill_time=prefill_time)) for t, n in zip(traces, budgets)]
    if len(traces) == 1 and batch_policy is None:
        scale = (turn_scale(cost_model, len(rows[0].tokens), traces[0].ar_step_times)
                 if cost_model is not None and calibrate else 1.0)
        clock = CostClock(cost_model, scale)
    else:
        clock = BatchCostClock(cost_model)
    drafter, verifier = TraceDrafter(traces), ReferenceVerifier(traces, refs)

    def leave(kept):
        """Finished rows leave the drafter and the verifier."""
        drafter.keep_rows(kept)
        verifier.keep_rows(kept)

    def done(i):
        """Row i's latency: prefill + the predicted steps so far."""
        rows[i].out.wall_time = prefill_time + clock.wall

    decode(rows, policies, ctxs, lambda rs, ps: chain_step(rs, ps, drafter, verifier, clock, batch_policy),
           leave, done, batch_policy)
    return [r.out for r in rows]
