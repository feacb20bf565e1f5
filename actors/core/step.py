"""The speculative step, written once for every batch size, live and replayed (docs/definitions.md, One
speculative step; a batch: docs/definitions.md, Batches).

One step over a batch of rows (a row = one sequence being generated; a single generation is a
batch of one row):

1. each row's policy gives k_max; the row's cap is ``min(k_max, remaining − 1)`` (0 for a policy
   that needs no draft, so ``ar`` runs this same step), so no draft is ever wasted past the budget;
   a batch-level policy (``policies/batch.py``) may then lower the caps;
2. the drafter proposes at most cap tokens per row, one draft forward per level for the rows still
   drafting, asking each row's policy after each proposal (chains), or each row's drafter grows its
   policy's tree (trees);
3. the verifier says, per row, how many drafts the target accepts and the token it emits after them
   (live: one target forward over every row + ``actors/core/acceptance.py``; replay: the recorded reference);
4. the accepted tokens and that next token are emitted, cut after the first EOS and at the
   budget (:meth:`Row.emit`);
5. both caches keep only the accepted prefix of each row; each policy is told its
   :class:`~policies.base.Step`.

Three seams make the same step live or replayed: the **drafter** (``actors/drafting/drafters.py``: the
draft model, n-gram lookup, an EAGLE head, or replay's recorded rollouts), the **verifier**
(:class:`Verifier`: a target forward, or the traces' references) and the **clock** (:class:`Clock`:
a timer, or the cost model's predictions). All per-sequence state is in :class:`Row`, so a row
needs only its index in the batch to reach its own tokens, budget and record.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from actors.core.proposal import Proposal, record_proposal
from policies.base import BatchPolicy, GenerationContext, Policy, Step


@dataclass
class Generation:
    """One turn's output and record. Times in seconds; ``wall_time`` includes prefill."""

    token_ids: list[int]
    steps: list[Step] = field(default_factory=list)
    wall_time: float = 0.0
    prefill_time: float = 0.0
    finished_by_eos: bool = False
    prefilled: bool | None = None     # whether the target read this row's prompt in a prefill forward (None: if
    #                                   prefill_time > 0); a one-token prompt in a batch waits for the others' prefill

    @property
    def new_tokens(self) -> int:
        """Tokens generated."""
        return len(self.token_ids)

    @property
    def decoding_steps(self) -> int:
        """Target forwards after prefill (Spec-Bench's decoding steps)."""
        return len(self.steps)

    @property
    def target_calls(self) -> int:
        """Target forwards, this row's prefill included."""
        prefilled = self.prefill_time > 0 if self.prefilled is None else self.prefilled
        return len(self.steps) + (1 if prefilled else 0)

    @property
    def accept_lengths(self) -> list[int]:
        """Tokens emitted per target forward, bonus included (Spec-Bench's accept_lengths)."""
        return [s.emitted for s in self.steps]

    @property
    def drafted(self) -> list[int]:
        """Draft tokens verified per step (trees: nodes)."""
        return [s.drafted for s in self.steps]

    @property
    def accepted(self) -> list[int]:
        """Draft tokens accepted per step."""
        return [s.accepted for s in self.steps]

    @property
    def pad_slots(self) -> int:
        """Padding slots this row carried in its steps' target forwards: a padded batch runner feeds every row
        1 + the longest row's drafts, so a row verifying k of them pads width − 1 − k (0 alone)."""
        return sum(max(0, s.batch_width - 1 - s.drafted) for s in self.steps)

    @property
    def proposed(self) -> list[int]:
        """Draft proposals made per step, a discarded one included (tree steps: 0)."""
        return [s.proposed for s in self.steps]

    @property
    def draft_times(self) -> list[float]:
        """Seconds drafting per step (a batch step's time, shared by its rows; replay: the cost model's)."""
        return [s.draft_time for s in self.steps]

    @property
    def verify_times(self) -> list[float]:
        """Seconds verifying per step: the target forward, acceptance and cache crops (replay: the cost model's)."""
        return [s.verify_time for s in self.steps]

    @property
    def k_max(self) -> list[int]:
        """The per-step draft cap the policy chose (tree steps: the tree's depth)."""
        return [s.k_max for s in self.steps]


@dataclass
class Row:
    """One sequence's state: committed ``tokens`` (prompt + output so far), its ``budget`` of new tokens,
    its stop ids and the :class:`Generation` it fills."""

    tokens: list[int]
    budget: int
    eos: frozenset
    out: Generation = field(default_factory=lambda: Generation(token_ids=[]))

    @property
    def generated(self) -> int:
        return len(self.out.token_ids)

    @property
    def remaining(self) -> int:
        return self.budget - self.generated

    @property
    def done(self) -> bool:
        return self.generated >= self.budget or self.out.finished_by_eos

    def emit(self, new: list[int]) -> list[int]:
        """Append a step's tokens, cut after the first EOS and at the budget; returns what was appended."""
        for j, t in enumerate(new):
            if t in self.eos:
                new = new[: j + 1]
                self.out.finished_by_eos = True
                break
        new = new[: self.remaining]
        self.tokens += new
        self.out.token_ids += new
        return new


class Verifier(Protocol):
    """Where the target's answer comes from, for every row of a step. ``forward_time``: seconds of the last
    check's target forward alone (0 when there was none, as in replay)."""

    forward_time: float

    def check(self, rows: Sequence[Row], drafts: Sequence[Sequence[int]], q_rows) -> list[tuple[int, int]]:
        """Per row: (n accepted of ``drafts[b]``, the target's next token) after ``rows[b].tokens``."""

    def keep(self, rows: Sequence[Row]) -> None:
        """After emitting: the target's cache holds every committed token of each row but the last."""


class Clock(Protocol):
    """Where a step's times come from: measured (live) or predicted (replay). ``bases[b]``: row b's committed
    tokens when the step began; ``proposed[b]``: its draft proposals (tree steps: nodes)."""

    def start(self) -> None:
        """The step begins."""

    def drafted(self, bases: Sequence[int], proposed: Sequence[int], levels: int) -> float:
        """Seconds spent drafting (``levels`` draft forwards over the batch)."""

    def verified(self, bases: Sequence[int], drafted: Sequence[int], accepted: Sequence[int],
                 proposed: Sequence[int], width: int) -> float:
        """Seconds spent verifying (one target forward over rows of ``width`` tokens, acceptance and crops)."""


def chain_step(rows: Sequence[Row], policies: Sequence[Policy], drafter, verifier, clock,
               batch_policy: BatchPolicy | None = None, sampled: bool = False) -> list[Step]:
    """One chain step for every row (module docstring; the drafter seam in ``actors/drafting/drafters.py``).

    ``verifier.check(rows, drafts, q_rows)`` gives each row's (n accepted, next token) from one target forward
    and ``verifier.keep(rows)`` crops every row's cache to its committed tokens but the last. A row's
    ``Step.k_max`` is its policy's answer, or the cap a batch policy set.
    """
    asked, caps, props = [], [], []      # plain loops, not comprehensions: this runs once per step at B = 1 too
    for r, p in zip(rows, policies):
        k = int(p.max_draft())
        if k < 0:
            raise RuntimeError(f"policy {p!r} asked for {k} drafts; must be >= 0")
        asked.append(k)
        caps.append(min(k, r.remaining - 1) if p.needs_draft else 0)
        props.append(Proposal())
    if batch_policy is not None:
        caps = asked = batch_policy.caps(caps)
    clock.start()
    active = []
    for b, c in enumerate(caps):
        if c > 0:
            active.append(b)
    levels = 0
    if active:
        drafter.begin([r.tokens for r in rows], caps)
    while active:
        picks = drafter.next(active)
        levels += 1
        going = []
        for b in active:
            pick = picks[b]         # (x, q(x), max q, H(q), q_row) or None
            if pick is not None and record_proposal(policies[b].after_draft, props[b], pick[0], pick[1], pick[2],
                                                    pick[4], caps[b], rows[b].eos, sampled, pick[3]):
                going.append(b)
        if batch_policy is not None and going:
            alphas = {b: _product(props[b].q_tokens) for b in going}
            going = sorted(batch_policy.keep_drafting(levels, alphas) & set(going))
        active = going
    if batch_policy is not None and not sampled:     # a sampled draft is never dropped for its own probability
        for b, keep in enumerate(batch_policy.select([p.q_tokens for p in props])):
            _truncate(props[b], keep)
    bases, proposed, drafts, q_rows = [], [], [], []
    for r, p in zip(rows, props):
        bases.append(len(r.tokens))
        proposed.append(p.proposed)
        drafts.append(p.tokens)
        q_rows.append(p.q_rows)
    draft_time = clock.drafted(bases, proposed, levels)
    width = 1 + max(map(len, drafts))
    results = verifier.check(rows, drafts, q_rows)
    steps, drafted, accepted = [], [], []
    for b, (row, prop, (n, nxt)) in enumerate(zip(rows, props, results)):
        new = row.emit(prop.tokens[:n] + [nxt])
        if prop.proposed:
            drafter.rollback(b, bases[b] + n)
        drafted.append(len(prop.tokens))
        accepted.append(n)
        steps.append(Step(k_max=asked[b], drafted=len(prop.tokens), accepted=n, emitted=len(new),
                          q_tokens=prop.q_tokens, q_max=prop.q_max, entropy=prop.entropy, draft_time=draft_time,
                          proposed=prop.proposed, forward_time=verifier.forward_time, batch_rows=len(rows),
                          batch_width=width))
    verifier.keep(rows)
    verify_time = clock.verified(bases, drafted, accepted, proposed, width)
    for s in steps:
        s.verify_time = verify_time
    return steps


def tree_step(rows: Sequence[Row], policies: Sequence[Policy], drafters: Sequence, verifier, clock) -> list[Step]:
    """One tree step for every row: each row's own tree drafter grows its policy's tree (``drafters[b]``), one
    target forward verifies every row's tree (``verifier.check_trees(rows, trees)`` → (path, next token) per
    row), and each row keeps its accepted path (``verifier.keep_tree(b, row, path)``)."""
    clock.start()
    trees = [d.propose_tree(r.tokens, p, r.remaining - 1) for r, p, d in zip(rows, policies, drafters)]
    bases = [len(r.tokens) for r in rows]
    nodes = [len(t) for t in trees]
    draft_time = clock.drafted(bases, nodes, max((max(t.depths, default=0) for t in trees), default=0))
    results = verifier.check_trees(rows, trees)
    width = 1 + max(nodes)
    steps = []
    for b, (row, tree, (path, nxt)) in enumerate(zip(rows, trees, results)):
        new = row.emit([tree.tokens[i] for i in path] + [nxt])
        verifier.keep_tree(b, row, path)
        drafters[b].keep_tree_path(bases[b], tree, path)
        depth = max(tree.depths, default=0)
        steps.append(Step(k_max=depth, drafted=len(tree), accepted=len(path), emitted=len(new),
                          q_tokens=[tree.cum[i] for i in path], draft_time=draft_time, tree_nodes=len(tree),
                          tree_depth=depth, batch_rows=len(rows), batch_width=width))
    verify_time = clock.verified(bases, nodes, [s.accepted for s in steps], nodes, width)
    for s in steps:
        s.verify_time = verify_time
    return steps


def _product(qs: Sequence[float]) -> float:
    """Π q over a row's drafts (1 for none)."""
    out = 1.0
    for q in qs:
        out *= q
    return out


def _truncate(prop: Proposal, keep: int) -> None:
    """Verify only the first ``keep`` drafts of ``prop`` (its proposal count stays: those forwards ran)."""
    for name in ("tokens", "q_rows", "q_tokens", "q_max", "entropy"):
        setattr(prop, name, getattr(prop, name)[:keep])


def decode(rows: Sequence[Row], policies: Sequence[Policy], ctxs: Sequence[GenerationContext],
           step: Callable[[list[Row], list[Policy]], list[Step]], leave: Callable[[list[int]], None] | None = None,
           on_done: Callable[[int], None] | None = None, batch_policy: BatchPolicy | None = None,
           max_steps: int | None = None) -> None:
    """Run steps until every row is done (or ``max_steps`` steps ran). After each step the finished rows leave
    the batch (``leave(kept indices)`` drops them from the caches) and ``on_done(i)`` is told the original index
    of each; with ``max_steps``, the rows still running are told too when it stops them."""
    live = [i for i, r in enumerate(rows) if not r.done]
    if len(live) < len(rows) and leave is not None:
        leave(live)
    live_rows, live_policies, live_ctxs = [rows[i] for i in live], [policies[i] for i in live], [ctxs[i] for i in live]
    steps_run = 0
    while live and (max_steps is None or steps_run < max_steps):
        for row, ctx in zip(live_rows, live_ctxs):
            ctx.generated = row.generated
        steps = step(live_rows, live_policies)
        steps_run += 1
        for row, policy, s in zip(live_rows, live_policies, steps):
            row.out.steps.append(s)
            policy.update(s)
        if batch_policy is not None:
            batch_policy.update(steps)
        finished = []
        for row in live_rows:
            finished.append(row.done)
        if True not in finished:
            continue
        kept = [j for j, f in enumerate(finished) if not f]
        if on_done is not None:
            for i, f in zip(live, finished):
                if f:
                    on_done(i)
        if leave is not None:
            leave(kept)
        live = [live[j] for j in kept]
        live_rows, live_policies, live_ctxs = [rows[i] for i in live], [policies[i] for i in live], [ctxs[i] for i in live]
    for i in live:                                  # stopped by max_steps
        if on_done is not None:
            on_done(i)
