"""The live engine: one target, one optional drafter, the speculative step of ``actors/step.py``.

The live verifier keeps this invariant at the start of every step: the target's KV cache
holds every token but the last one. A chain step feeds ``[last token, x_1 … x_k]`` to the
target in one forward (k = 0 is a plain target step — ``ar`` runs this same loop), accepts
n of the k drafts (``actors/acceptance.py``), and both caches are cropped to the accepted
prefix; nothing accepted is ever recomputed. Tree steps verify every node in one forward
with a tree attention mask (``actors/tree_step.py``) and keep the accepted path.

EOS and ``max_new_tokens`` are honoured exactly (``actors/step.py``'s ``Row``), so the output
is token-for-token what the target alone would produce (greedy) or distributed as it (sampling).
"""
from __future__ import annotations

import time
from typing import Sequence

import torch

from actors.acceptance import accept_greedy, accept_sampling, warp
from actors.drafters import Drafter
from actors.runners import EagerRunner, make_runner
from actors.step import Generation, Row, chain_step, decode, tree_step
from actors.tree_step import keep_positions, verify_tree
from policies.base import BatchPolicy, GenerationContext, Policy, SequencePolicy, TreePolicy
from policies.errors import SpecsweepError
from policies.fixed import TargetOnly
from policies.registry import check_generation


class LiveClock:
    """Step times from the wall clock, the device synchronized at each reading (single-row and batch steps)."""

    def __init__(self, clock):
        self._clock = clock
        self._t = 0.0

    def start(self) -> None:
        self._t = self._clock()

    def drafted(self, base: int, proposed: int) -> float:
        t, self._t = self._t, self._clock()
        return self._t - t

    def verified(self, base: int, drafted: int, accepted: int, proposed: int) -> float:
        t, self._t = self._t, self._clock()
        return self._t - t

    def drafted_batch(self, levels: int, rows: int) -> float:
        """A batch step's drafting: seconds since the step began."""
        return self.drafted(0, 0)

    def verified_batch(self, rows: int, width: int) -> float:
        """A batch step's verification: seconds since drafting ended."""
        return self.verified(0, 0, 0, 0)


class TargetVerifier:
    """The target's answer from one forward over ``[last token, drafts…]`` (chains) or the tree's nodes;
    a chain step's forward is timed alone (``forward_time``) so the cost model can tell it from acceptance."""

    def __init__(self, runner, sampling: dict | None, generator, clock, sink=None):
        self.runner, self.sampling, self.generator, self._clock = runner, sampling, generator, clock
        self.sink = sink           # drafter.see_features when the drafter reads the target's hidden states
        self.forward_time = 0.0
        self._tree_features = None

    def check(self, row: Row, drafted, q_rows) -> tuple[int, int]:
        t = self._clock()
        logits = self.runner.forward([row.tokens[-1], *drafted])     # [k + 1, vocab]
        self.forward_time = self._clock() - t
        if self.sink is not None:
            self.sink(len(row.tokens) - 1, self.runner.features)
        if self.sampling is None:
            return accept_greedy(logits.argmax(-1).tolist(), drafted)
        return accept_sampling(warp(logits, self.sampling["temperature"], self.sampling["top_p"]), q_rows, drafted,
                               self.generator)

    def keep(self, row: Row) -> None:
        self.runner.rollback(len(row.tokens) - 1)

    def check_tree(self, row: Row, tree) -> tuple[list[int], int]:
        path, nxt, self._tree_features = verify_tree(self.runner.model, self.runner.cache, row.tokens, tree,
                                                     self.sampling, self.generator, features=self.sink is not None)
        return path, nxt

    def keep_path(self, row: Row, base: int, path) -> None:
        keep_positions(self.runner.cache, list(range(base)) + [base + i for i in path])   # root + accepted path
        if self.sink is not None:
            self.sink(base - 1, self._tree_features[[0] + [1 + i for i in path]])


class SpecEngine:
    """Runs generations of one target with one (optional) drafter.

    ``eos_token_ids``: tokens that end a generation. ``costs``: the actor's cost curve,
    handed to policies through :class:`GenerationContext`.
    """

    def __init__(self, target, drafter: Drafter | None = None, eos_token_ids: Sequence[int] = (), costs=None,
                 engine: str = "eager", capacity: int = 4096, max_draft: int = 24, inductor: bool | None = None):
        self.target = target
        self.drafter = drafter
        self.eos = frozenset(int(t) for t in eos_token_ids if t is not None)
        self.costs = costs
        self.rank_acceptance = None   # per-rank acceptance for static trees (actors/calibrate.py)
        self.device = target.device
        self._cuda = self.device.type == "cuda"
        self.runner = make_runner(target, engine, capacity, inductor)
        self.engine = self.runner.engine
        self._eager_runner = self.runner if isinstance(self.runner, EagerRunner) else None
        self.features = drafter is not None and drafter.needs_features   # an EAGLE head reads the target's features
        self.runner.keep_features = self.features
        if drafter is not None:
            drafter.use_engine(engine, capacity, inductor)
        self.max_draft = max_draft    # the largest draft the compiled engine captures a graph for
        self._prepared = 0

    def prepare(self, max_draft: int | None = None) -> None:
        """Compile/capture the target for verified lengths up to ``max_draft + 1`` and the draft's one-token step.

        Runs once per actor before anything is timed (a no-op for the eager engine).
        """
        max_draft = self.max_draft if max_draft is None else max_draft
        if max_draft + 1 <= self._prepared:
            return
        self.runner.prepare(max_draft + 1)
        if self.drafter is not None:
            self.drafter.prepare()
        self._prepared = max_draft + 1

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def _clock(self) -> float:
        self._sync()
        return time.perf_counter()

    @torch.no_grad()
    def generate(self, prompt_ids: Sequence[int], policy: Policy, *, max_new_tokens: int = 128,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                 reference: Sequence[int] | None = None, max_steps: int | None = None) -> Generation:
        """Generate up to ``max_new_tokens`` after ``prompt_ids`` with ``policy``; greedy when ``temperature`` is 0,
        else sampled (temperature, top-p) from a generator seeded with ``seed``. ``reference``: the target-only
        greedy output for ``oracle`` (computed here, untimed, when not given). ``max_steps``: stop after this
        many speculative steps (the cost probe, ``actors/calibrate.py``)."""
        if not prompt_ids:
            raise SpecsweepError("prompt is empty: give at least one token")
        check_generation({"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p})
        if policy.needs_draft and self.drafter is None:
            raise SpecsweepError(f"policy {policy.name} needs a draft: pass --draft MODEL or --draft ngram")
        greedy = temperature == 0
        sampling = None if greedy else {"temperature": float(temperature), "top_p": float(top_p)}
        if isinstance(policy, BatchPolicy):
            raise SpecsweepError(f"policy {policy.name} decides for a batch: run it with batches (actors/batch_engine.py; "
                                 "`generate --batch-size`, a sweep's batch_sizes)")
        if not isinstance(policy, (SequencePolicy, TreePolicy)):
            raise SpecsweepError(f"{policy!r} is neither a SequencePolicy nor a TreePolicy (policies/base.py)")
        if policy.needs_reference:
            if not greedy:
                raise SpecsweepError(f"policy {policy.name} is defined for greedy decoding only (temperature 0)")
            if reference is None:
                reference = self.reference(prompt_ids, max_new_tokens)
        gen = torch.Generator(device=self.device).manual_seed(int(seed)) if not greedy else None
        ctx = GenerationContext(costs=self.costs, reference=reference, greedy=greedy,
                                rank_acceptance=self.rank_acceptance)
        policy.reset(ctx)

        is_tree = isinstance(policy, TreePolicy)
        if is_tree and not greedy and policy.dynamic:
            raise SpecsweepError(f"dynamic tree policy {policy.name} is greedy-only: its node selection depends on "
                                 "the sampled drafts; use sequoia or gt-static for sampling")
        if is_tree and not self.drafter.supports_trees:
            raise SpecsweepError(f"tree policy {policy.name} needs a draft model (not {self.drafter.name})")
        self.prepare()
        runner = self._runner_for(is_tree)

        row = Row(tokens=[int(t) for t in prompt_ids], budget=max_new_tokens, eos=self.eos)
        runner.reset()
        drafting = self.drafter is not None and policy.needs_draft
        if drafting:
            self.drafter.reset(sampling, gen, self.eos, tree=is_tree)
        sink = self.drafter.see_features if drafting and self.features else None
        t_start = self._clock()
        if len(row.tokens) > 1:
            runner.forward(row.tokens[:-1], last_only=True)
            if sink is not None:
                sink(0, runner.features)
            row.out.prefill_time = self._clock() - t_start
        verifier, clock = TargetVerifier(runner, sampling, gen, self._clock, sink), LiveClock(self._clock)
        step = tree_step if is_tree else chain_step
        out = decode(row, policy, ctx, lambda r: step(r, policy, self.drafter, verifier, clock), max_steps)
        out.wall_time = self._clock() - t_start
        return out

    def _runner_for(self, is_tree: bool):
        """Tree steps edit a DynamicCache in place (``actors/tree_step.py``): they always run eagerly."""
        if not is_tree:
            return self.runner
        if self._eager_runner is None:
            self._eager_runner = EagerRunner(self.target)
            self._eager_runner.keep_features = self.features
        return self._eager_runner

    @torch.no_grad()
    def reference(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """The target-only greedy continuation (what ``oracle`` knows in advance)."""
        return SpecEngine(self.target, None, self.eos).generate(prompt_ids, TargetOnly(),
                                                               max_new_tokens=max_new_tokens).token_ids
