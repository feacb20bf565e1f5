"""The contract between the engine and a speculation policy, and the one record of a step.

A policy sees numbers only — never a model, a tensor or Ray. There are two kinds, declared
as base classes; the engine dispatches on the class, never by probing attributes:

:class:`SequencePolicy` — drafts a chain each step:

1. ``max_draft()`` — k_max, how many tokens at most to draft now (``>= 0``; 0 means a plain
   target step). A query: it does not change the policy's state. The engine may lower it
   (e.g. near ``max_new_tokens``).
2. ``after_draft(i, token, q_token, q_max, entropy)`` — after the draft proposed its i-th
   token (1-based) with draft probability ``q_token``; ``q_max`` = the draft's largest
   probability at that position, ``entropy`` = H(q) in nats of the draft distribution
   there (0 for a point-mass drafter such as n-gram). Returns a :class:`Verdict`.
3. ``update(step)`` — the step's :class:`Step`.

:class:`TreePolicy` — drafts a token tree each step: a static ``shape()`` fixed at ``reset``,
or (``dynamic``) a frontier expansion steered by ``keep_expanding`` / ``node_budget``.

:class:`BatchPolicy` — decides for a whole batch of rows (docs/definitions.md, Batches): each step's per-row caps
(``caps``), whether the batch drafts another level (``keep_drafting``) and how many of each row's
drafts are verified (``select``); every row drafts with the plain ``row_policy()``.

``reset(ctx)`` starts each generation; :class:`GenerationContext` carries what some
policies need (the actor's measured :class:`~policies.costs.CostModel` for ``gt``/``goodput``/``bandit``, the
target-only output
for ``oracle``). A policy's ``params()`` are logged with every run.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from policies.errors import SpecsweepError


class Verdict(str, Enum):
    """A policy's answer after each drafted token."""

    MORE = "more"        # keep drafting
    STOP = "stop"        # stop and verify the i tokens drafted so far
    DISCARD = "discard"  # stop and verify only the first i - 1 (GT: the token that fails the test is not verified)


MORE, STOP, DISCARD = Verdict.MORE, Verdict.STOP, Verdict.DISCARD


@dataclass
class Step:
    """One speculative step: the record the engine and replay keep, policies learn from, metrics and
    the Arrow log read. Times in seconds.

    Spec-Bench's accept length of the step is ``emitted`` (the target's bonus token counted).
    For a tree step ``drafted`` = ``tree_nodes`` (every node is verified) and ``k_max`` = ``tree_depth``.
    """

    k_max: int                      # the per-step draft cap the policy chose (not the config's initial γ)
    drafted: int                    # k: draft tokens sent to verification
    accepted: int                   # n: drafted tokens the target accepted (0 <= n <= k)
    emitted: int                    # tokens appended: n + 1 unless EOS or max_new_tokens cut it
    q_tokens: Sequence[float] = ()  # draft probability of each verified token (trees: cumulative, along the accepted path)
    q_max: Sequence[float] = ()     # the draft's top probability at each verified position
    entropy: Sequence[float] = ()   # H(q) in nats at each verified position
    draft_time: float = 0.0         # drafting, a discarded proposal included
    verify_time: float = 0.0        # the target forward, acceptance and cache crop
    forward_time: float = 0.0       # the target forward alone (live chain steps; 0 where not timed apart)
    proposed: int = 0               # draft proposals made (= draft forwards run for a model drafter), a discarded one included
    tree_nodes: int = 0             # nodes in the verified tree (0 for a sequence step)
    tree_depth: int = 0             # levels in the verified tree (0 for a sequence step)
    batch_rows: int = 1             # rows in the step's target forward (1 outside a batch)
    batch_width: int = 0            # tokens per row in a batch step's target forward (0 outside a batch)


@dataclass
class GenerationContext:
    """Per-generation facts a policy may use."""

    costs: object | None = None             # policies.costs.CostModel, when the actor measured one
    reference: Sequence[int] | None = None  # target-only continuation (oracle)
    greedy: bool = True
    generated: int = 0                      # tokens emitted so far in this generation (kept current by the engine)
    rank_acceptance: Sequence[float] | None = None  # per-rank acceptance, unconditional (static trees, accept=auto)


class Policy:
    """What every policy declares: its name, what it needs from the actor, ``reset``, ``update``, ``params``."""

    name = "policy"
    needs_draft = True              # False only for ``ar``
    needs_costs = False             # reads the actor's cost curve (ctx.costs)
    needs_reference = False         # reads the target-only output (ctx.reference): greedy only
    needs_rank_acceptance = False   # reads the pair's per-rank acceptance (ctx.rank_acceptance)
    replay_blocker: str | None = None  # why exact trace replay cannot reproduce this policy (None: it can)
    sampling_blocker: str | None = None  # why this policy is refused under sampling (None: it is lossless there)

    def reset(self, ctx: GenerationContext) -> None:
        """Start a generation; ``ctx`` stays current (the engine updates ``ctx.generated``). A policy with a
        ``sampling_blocker`` refuses a sampled generation here, in one line."""
        if self.sampling_blocker is not None and not ctx.greedy:
            raise SpecsweepError(f"{self.name} is defined for greedy decoding only (temperature 0): "
                                 f"{self.sampling_blocker}")
        self.ctx = ctx

    def update(self, step: Step) -> None:
        """Learn from the step just verified."""

    def params(self) -> dict:
        """The parameters that define this policy (logged with every run; defaults filled in)."""
        return {}

    def __repr__(self) -> str:
        p = ",".join(f"{k}={v}" for k, v in self.params().items())
        return f"{self.name}:{p}" if p else self.name


class SequencePolicy(Policy):
    """A policy that drafts a chain of tokens each step (see the module docstring)."""

    k_min = 1   # the smallest k_max this policy returns (0: it may ask for a plain target step)

    def max_draft(self) -> int:
        """k_max for the coming step (>= ``k_min``); a query: calling it twice gives the same answer."""
        raise NotImplementedError

    def after_draft(self, i: int, token: int, q_token: float, q_max: float, entropy: float = 0.0) -> Verdict:
        """The verdict after the i-th proposal (1-based) of this step; by default draft up to k_max."""
        return MORE


class TreePolicy(Policy):
    """A policy that drafts a token tree each step.

    Static (``dynamic = False``): ``shape()`` — the tree's nodes (``policies.tree_shapes.Node``),
    fixed at ``reset``. Dynamic: each level expands the ``topk`` frontier nodes with the highest
    cumulative draft probability into their ``topk`` most likely children while
    ``keep_expanding(level, best_cum_prob)``; finally the ``node_budget(levels)`` best nodes are kept.
    """

    dynamic = False
    topk = 0
    replay_blocker = "static trees are not replayed yet"

    def shape(self) -> list:
        """The static tree: nodes with parent indices (-1 = the last committed token), parents first."""
        raise NotImplementedError(f"{self.name} is a dynamic tree policy: it has no static shape")

    def keep_expanding(self, level: int, best_cum_prob: float) -> bool:
        """Whether the candidates of ``level`` (1-based), best cumulative draft probability given, join the tree."""
        raise NotImplementedError(f"{self.name} is a static tree policy")

    def node_budget(self, levels: int) -> int:
        """How many nodes (highest cumulative probability, ancestor-closed) a tree of ``levels`` levels keeps."""
        raise NotImplementedError(f"{self.name} is a static tree policy")


class BatchPolicy(Policy):
    """A policy that decides for every row of a batch at once (see the module docstring).

    One step: ``caps(caps)`` turns the rows' caps (``min(budget, remaining − 1)``) into this step's per-row draft
    caps; the rows draft level by level, and after each level ``keep_drafting(level, alphas)`` names the rows
    that go on (``alphas[b]`` = Π q(x_j) of row b's drafts so far); ``select(q_tokens)`` then says how many of
    each row's drafts are verified (a prefix; under sampling the engine verifies every drafted token instead,
    as a sampled draft may not be dropped for its own probability). ``update(steps)`` gets every row's
    :class:`Step`.
    """

    def row_policy(self) -> "SequencePolicy":
        """What each row runs under this policy: it drafts up to the cap ``caps`` gives it."""
        return _DraftToCap()

    def caps(self, caps: Sequence[int]) -> list[int]:
        """Per-row draft caps for this step, at most the given ones (``len(caps)`` = rows in the batch)."""
        return list(caps)

    def keep_drafting(self, level: int, alphas: dict[int, float]) -> set[int]:
        """The rows (keys of ``alphas``, still drafting after ``level`` levels) that draft another token."""
        return set(alphas)

    def select(self, q_tokens: Sequence[Sequence[float]]) -> list[int]:
        """How many of each row's drafted tokens to verify (``q_tokens[b]``: q(x_j) of row b's drafts)."""
        return [len(q) for q in q_tokens]

    def update(self, steps) -> None:  # noqa: D401 - a list of Steps here
        """Learn from the step just verified: one :class:`Step` per row."""


class _DraftToCap(SequencePolicy):
    """A row of a batch-level policy: drafts every token its cap allows (the batch policy decides the rest)."""

    name = "row"

    def max_draft(self) -> int:
        return 1 << 20
