"""The speculative step, written once for the live engine and for replay (GUIDE §3.1).

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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from actors.drafters import Drafter, Proposal
from policies.base import GenerationContext, Policy, Step


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
    """One step with a chain of drafts (GUIDE §3.1 steps 1–6)."""
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
