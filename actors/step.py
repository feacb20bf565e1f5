"""The speculative step, written once for the live engine and for replay (docs/definitions.md, One speculative step).

One step on one row (a row = one sequence being generated):

1. the policy gives k_max; the cap is ``min(k_max, remaining − 1)`` (0 for a policy that needs
   no draft, so ``ar`` runs this same step), so no draft is ever wasted past the budget;
2. the drafter proposes at most cap tokens, asking the policy after each (chains), or grows
   the policy's tree (trees);
3. the verifier says how many drafts the target accepts and the token it emits after them
   (live: one target forward + ``actors/acceptance.py``; replay: the recorded reference);
4. the accepted tokens and that next token are emitted, cut after the first EOS and at the
   budget (:meth:`Row.emit`);
5. both caches keep only the accepted prefix; the policy is told the :class:`~policies.base.Step`.

Three seams make the same step live or replayed: the **drafter** (``actors/drafters.py``, or the
trace's recorded rollouts), the **verifier** (:class:`Verifier`: a target forward, or the trace's
reference) and the **clock** (:class:`Clock`: a timer, or the cost model's predictions). All
per-sequence state is in :class:`Row`, so a batch of B rows needs only a row index to reach
its own tokens, budget and record.

A batch step (:func:`batch_chain_step`, docs/definitions.md, Batches) is the same step for B rows at once: each
row's cap from its own policy (then the batch policy's), one draft forward per level for the rows
still drafting, one target forward for every row, and per row the same accept, emit and crop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from actors.drafters import Drafter, Proposal, record_proposal
from policies.base import BatchPolicy, GenerationContext, Policy, Step


@dataclass
class Generation:
    """One turn's output and record. Times in seconds; ``wall_time`` includes prefill."""

    token_ids: list[int]
    steps: list[Step] = field(default_factory=list)
    wall_time: float = 0.0
    prefill_time: float = 0.0
    finished_by_eos: bool = False

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
        """Target forwards, prefill included."""
        return len(self.steps) + (1 if self.prefill_time > 0 else 0)

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
    """Where the target's answer comes from. ``forward_time``: seconds of the last check's target forward
    alone (0 when there was none, as in replay)."""

    forward_time: float

    def check(self, row: Row, drafted: Sequence[int], q_rows: Sequence) -> tuple[int, int]:
        """(n accepted of ``drafted``, the target's next token) after ``row.tokens``."""

    def keep(self, row: Row) -> None:
        """After emitting: the target's cache holds every committed token but the last."""


class Clock(Protocol):
    """Where a step's times come from: measured (live) or predicted (replay)."""

    def start(self) -> None:
        """The step begins."""

    def drafted(self, base: int, proposed: int) -> float:
        """Seconds spent drafting ``proposed`` draft forwards after ``base`` committed tokens."""

    def verified(self, base: int, drafted: int, accepted: int, proposed: int) -> float:
        """Seconds spent verifying ``drafted`` tokens (acceptance and cache crop included)."""


def chain_step(row: Row, policy: Policy, drafter: Drafter | None, verifier: Verifier, clock: Clock) -> Step:
    """One step with a chain of drafts (docs/definitions.md, One speculative step, 1–6)."""
    k_max = int(policy.max_draft())
    if k_max < 0:
        raise RuntimeError(f"policy {policy!r} asked for {k_max} drafts; must be >= 0")
    cap = min(k_max, row.remaining - 1) if policy.needs_draft else 0
    clock.start()
    prop = drafter.propose(row.tokens, cap, policy.after_draft) if cap > 0 else Proposal()
    base = len(row.tokens)
    draft_time = clock.drafted(base, prop.proposed)
    k = len(prop.tokens)
    n, nxt = verifier.check(row, prop.tokens, prop.q_rows)
    new = row.emit(prop.tokens[:n] + [nxt])
    verifier.keep(row)
    if k:
        drafter.rollback(base + n)
    verify_time = clock.verified(base, k, n, prop.proposed)
    return Step(k_max=k_max, drafted=k, accepted=n, emitted=len(new), q_tokens=prop.q_tokens, q_max=prop.q_max,
                entropy=prop.entropy, draft_time=draft_time, verify_time=verify_time, proposed=prop.proposed,
                forward_time=verifier.forward_time)


def tree_step(row: Row, policy: Policy, drafter: Drafter, verifier, clock: Clock) -> Step:
    """One step with a token tree: draft the policy's tree, verify every node in one target forward, keep the
    accepted path (``actors/tree_step.py``; acceptance in ``actors/acceptance.py``). ``verifier`` has
    ``check_tree(row, tree)`` and ``keep_path(row, base, path)``."""
    clock.start()
    tree = drafter.propose_tree(row.tokens, policy, row.remaining - 1)
    base = len(row.tokens)
    draft_time = clock.drafted(base, len(tree))
    path, nxt = verifier.check_tree(row, tree)
    new = row.emit([tree.tokens[i] for i in path] + [nxt])
    verifier.keep_path(row, base, path)
    drafter.keep_tree_path(base, tree, path)
    verify_time = clock.verified(base, len(tree), len(path), len(tree))
    depth = max(tree.depths, default=0)
    return Step(k_max=depth, drafted=len(tree), accepted=len(path), emitted=len(new),
                q_tokens=[tree.cum[i] for i in path], draft_time=draft_time, verify_time=verify_time,
                tree_nodes=len(tree), tree_depth=depth)


def decode(row: Row, policy: Policy, ctx: GenerationContext, step: Callable[[Row], Step],
           max_steps: int | None = None) -> Generation:
    """Run ``step`` until the row is done (or ``max_steps`` steps ran), telling the policy each
    :class:`~policies.base.Step`."""
    while not row.done and (max_steps is None or len(row.out.steps) < max_steps):
        ctx.generated = row.generated
        s = step(row)
        row.out.steps.append(s)
        policy.update(s)
    return row.out


def batch_chain_step(rows: Sequence[Row], policies: Sequence[Policy], drafter, verifier, clock,
                     batch_policy: BatchPolicy | None = None, sampled: bool = False) -> list[Step]:
    """One chain step for every row of a batch (module docstring; seams in ``actors/batch_drafters.py``).

    ``verifier.check_batch(rows, drafts, q_rows)`` gives each row's (n accepted, next token) from one target
    forward and ``verifier.keep_batch(rows)`` crops every row's cache to its committed tokens but the last;
    ``clock.drafted_batch(levels, rows)`` and ``clock.verified_batch(rows, width)`` time the two phases.
    """
    caps = [min(int(p.max_draft()), r.remaining - 1) if p.needs_draft else 0 for r, p in zip(rows, policies)]
    if any(c < 0 for c in caps):
        raise RuntimeError(f"a policy asked for a negative draft: caps {caps}")
    if batch_policy is not None:
        caps = batch_policy.caps(caps)
    clock.start()
    props = [Proposal() for _ in rows]
    active = [b for b, c in enumerate(caps) if c > 0]
    levels = 0
    if active:
        drafter.begin([r.tokens for r in rows], caps)
    while active:
        picks = drafter.next(active)
        levels += 1
        going = [b for b in active if picks[b] is not None and record_proposal(
            policies[b].after_draft, props[b], picks[b][0], picks[b][1], picks[b][2], picks[b][4], caps[b],
            rows[b].eos, sampled=sampled, entropy=picks[b][3])]
        if batch_policy is not None and going:
            alphas = {b: _product(props[b].q_tokens) for b in going}
            going = sorted(batch_policy.keep_drafting(levels, alphas) & set(going))
        active = going
    if batch_policy is not None and not sampled:     # a sampled draft is never dropped for its own probability
        for b, keep in enumerate(batch_policy.select([p.q_tokens for p in props])):
            _truncate(props[b], keep)
    base = [len(r.tokens) for r in rows]
    draft_time = clock.drafted_batch(levels, len(rows))
    width = 1 + max(len(p.tokens) for p in props)
    results = verifier.check_batch(rows, [p.tokens for p in props], [p.q_rows for p in props])
    steps = []
    for b, (row, prop, (n, nxt)) in enumerate(zip(rows, props, results)):
        new = row.emit(prop.tokens[:n] + [nxt])
        if prop.proposed:
            drafter.rollback(b, base[b] + n)
        steps.append(Step(k_max=caps[b], drafted=len(prop.tokens), accepted=n, emitted=len(new),
                          q_tokens=prop.q_tokens, q_max=prop.q_max, entropy=prop.entropy, draft_time=draft_time,
                          proposed=prop.proposed, forward_time=verifier.forward_time, batch_rows=len(rows),
                          batch_width=width))
    verifier.keep_batch(rows)
    verify_time = clock.verified_batch(len(rows), width)
    for s in steps:
        s.verify_time = verify_time
    return steps


def batch_tree_step(rows: Sequence[Row], policies: Sequence[Policy], drafters: Sequence[Drafter], verifier,
                    clock) -> list[Step]:
    """One tree step for every row of a batch: each row's own drafter grows its policy's tree (``drafters[b]``, a
    single-row tree drafter), one target forward verifies every row's tree (``verifier.check_trees(rows, trees)``
    → (path, next token) per row), and each row keeps its accepted path (``verifier.keep_tree(b, row, path)``)."""
    clock.start()
    trees = [d.propose_tree(r.tokens, p, r.remaining - 1) for r, p, d in zip(rows, policies, drafters)]
    base = [len(r.tokens) for r in rows]
    draft_time = clock.drafted_batch(max((max(t.depths, default=0) for t in trees), default=0), len(rows))
    results = verifier.check_trees(rows, trees)
    width = 1 + max(len(t) for t in trees)
    steps = []
    for b, (row, tree, (path, nxt)) in enumerate(zip(rows, trees, results)):
        new = row.emit([tree.tokens[i] for i in path] + [nxt])
        verifier.keep_tree(b, row, path)
        drafters[b].keep_tree_path(base[b], tree, path)
        depth = max(tree.depths, default=0)
        steps.append(Step(k_max=depth, drafted=len(tree), accepted=len(path), emitted=len(new),
                          q_tokens=[tree.cum[i] for i in path], draft_time=draft_time, tree_nodes=len(tree),
                          tree_depth=depth, batch_rows=len(rows), batch_width=width))
    verify_time = clock.verified_batch(len(rows), width)
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


def decode_batch(rows: Sequence[Row], policies: Sequence[Policy], ctxs: Sequence[GenerationContext],
                 step: Callable[[list[Row], list[Policy]], list[Step]], leave: Callable[[list[int]], None],
                 on_done: Callable[[int], None] | None = None, batch_policy: BatchPolicy | None = None) -> None:
    """Run batch steps until every row is done. After each step the finished rows leave the batch
    (``leave(kept indices)`` drops them from the caches) and ``on_done(i)`` is told the original index of each."""
    live = [i for i, r in enumerate(rows) if not r.done]
    if len(live) < len(rows):
        leave(live)
    while live:
        for i in live:
            ctxs[i].generated = rows[i].generated
        steps = step([rows[i] for i in live], [policies[i] for i in live])
        for i, s in zip(live, steps):
            rows[i].out.steps.append(s)
            policies[i].update(s)
        if batch_policy is not None:
            batch_policy.update(steps)
        kept = [j for j, i in enumerate(live) if not rows[i].done]
        for j, i in enumerate(live):
            if rows[i].done and on_done is not None:
                on_done(i)
        if len(kept) < len(live):
            leave(kept)
        live = [live[j] for j in kept]
